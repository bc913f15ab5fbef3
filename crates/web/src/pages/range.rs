//! The date-range picker of an overview: 7, 30 (default) or 90 days, all time, or two
//! dates. A range the service refuses is shown beside the dates while the page shows the
//! default range.

use std::future::Future;

use super::view::{Field, NavItem, Posted};
use reftrack_domain::metrics::{day_text, ResolvedRange};
use reftrack_service as app;
use reftrack_service::dashboard::performance::PerformanceParams;

/// The range shown when none is asked for.
pub const DEFAULT_PERIOD: &str = "30d";

/// The ranges offered as links.
const PERIODS: [(&str, &str); 4] = [
    ("7d", "7 days"),
    ("30d", "30 days"),
    ("90d", "90 days"),
    ("all", "All time"),
];

/// What the picker shows.
pub struct RangePicker {
    /// 7d / 30d / 90d / all, as links.
    pub periods: Vec<NavItem>,
    /// Where the date form goes (the page, with the fragment of the chart).
    pub action: String,
    /// The page's other query fields, kept by the date form.
    pub hidden: Vec<(&'static str, String)>,
    pub from: Field,
    pub to: Field,
    /// Why the dates asked for were not used.
    pub error: Option<String>,
    /// The range shown, in words.
    pub label: String,
}

/// The range `q` asks for (`period`, or `from` and `to`); the default when it names none.
fn asked(q: &Posted) -> PerformanceParams {
    let params = PerformanceParams {
        period: q.text("period"),
        date_from: q.text("from"),
        date_to: q.text("to"),
    };
    if params.period.is_none() && params.date_from.is_none() && params.date_to.is_none() {
        default()
    } else {
        params
    }
}

fn default() -> PerformanceParams {
    PerformanceParams {
        period: Some(DEFAULT_PERIOD.into()),
        ..PerformanceParams::default()
    }
}

/// A range error of the service in the words of the picker.
fn error_text(text: &str) -> String {
    text.replace(
        "dateFrom and dateTo must be given together",
        "Give both dates",
    )
    .replace("after dateTo", "after the end date")
    .replace("dateFrom", "The start date")
    .replace("dateTo", "The end date")
    .replace(" or timestamp", "")
    .replace("period must", "The range must")
}

/// Loads what the range of `q` shows with `load`; when the service refuses that range,
/// loads the default range instead and keeps the refusal for the picker. The answer's
/// range comes from `range_of`.
pub async fn load<T, F, Fut>(
    q: &Posted,
    load: F,
    range_of: fn(&T) -> &ResolvedRange,
    page: &str,
    hidden: Vec<(&'static str, String)>,
) -> app::Result<(T, RangePicker)>
where
    F: Fn(PerformanceParams) -> Fut,
    Fut: Future<Output = app::Result<T>>,
{
    let mut from = Field::new("from", "From").with(q.text("from").unwrap_or_default());
    let mut to = Field::new("to", "To").with(q.text("to").unwrap_or_default());
    let (error, found) = match load(asked(q)).await {
        Ok(found) => (None, found),
        Err(app::Error::Invalid(text)) => {
            let text = error_text(&text);
            if text.starts_with("The end") {
                to.error = Some(text.clone());
            } else {
                from.error = Some(text.clone());
            }
            (Some(text), load(default()).await?)
        }
        Err(e) => return Err(e),
    };
    let range = range_of(&found);
    // The dates of the range shown, unless the form keeps what was refused.
    if error.is_none() {
        from.value = day_text(range.current.from);
        to.value = day_text(range.current.to);
    }
    let query: String = hidden
        .iter()
        .map(|(k, v)| {
            let v: String = url::form_urlencoded::byte_serialize(v.as_bytes()).collect();
            format!("{k}={v}&")
        })
        .collect();
    let periods = PERIODS
        .iter()
        .map(|(value, text)| NavItem {
            href: format!("{page}?{query}period={value}"),
            label: (*text).into(),
            current: *value == range.period,
        })
        .collect();
    let label = format!(
        "{} to {} (UTC)",
        day_text(range.current.from),
        day_text(range.current.to)
    );
    let picker = RangePicker {
        periods,
        action: page.to_string(),
        hidden,
        from,
        to,
        error,
        label,
    };
    Ok((found, picker))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_read_as_the_form_names_its_fields() {
        assert_eq!(
            error_text("dateFrom must not be after dateTo"),
            "The start date must not be after the end date"
        );
        assert_eq!(
            error_text("dateFrom and dateTo must be given together"),
            "Give both dates"
        );
        assert!(asked(&Posted::parse(b"")).period.as_deref() == Some(DEFAULT_PERIOD));
        assert_eq!(
            asked(&Posted::parse(b"from=2026-01-01"))
                .date_from
                .as_deref(),
            Some("2026-01-01")
        );
    }
}
