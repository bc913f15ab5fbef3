//! The overview's daily chart: one small bar chart per figure (clicks, leads, sales,
//! earnings), drawn as inline SVG on the server. Each bar carries its day and value as a
//! `<title>` (a tooltip), each chart an `aria-label` with its total and best day, and
//! the page adds the same figures as a table.

use std::fmt::Write;

use chrono::NaiveDate;

use crate::domain::metrics::day_text;
use crate::domain::money::display_amount;

/// Bars a chart draws at most; longer ranges put several days in one bar.
pub(super) const MAX_BARS: usize = 92;

/// One day's figures of a partner.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Day {
    pub day: NaiveDate,
    pub clicks: i64,
    pub leads: i64,
    pub sales: i64,
    /// Commission earned that day, net of reversals, in the currency's smallest unit.
    pub earnings: i64,
}

/// A figure's CSS key and label, how to read it from a day, and how to show a value.
type Figure<'a> = (
    &'static str,
    &'static str,
    fn(&Day) -> i64,
    &'a dyn Fn(i64) -> String,
);

/// One figure's chart, ready for the page.
pub(super) struct Panel {
    /// `clicks`, `leads`, `sales` or `earnings`: the chart's CSS class.
    pub key: &'static str,
    pub label: &'static str,
    /// The range's total, formatted.
    pub total: String,
    /// The `<svg>` element.
    pub svg: String,
}

/// A row of the figures table (one bar).
pub(super) struct Row {
    /// The bar's day, or its first and last day.
    pub label: String,
    pub clicks: i64,
    pub leads: i64,
    pub sales: i64,
    pub earnings: String,
}

/// The charts of a range and their table.
pub(super) struct Chart {
    pub panels: Vec<Panel>,
    pub rows: Vec<Row>,
    /// How many days one bar holds.
    pub days_per_bar: usize,
    pub first_day: String,
    pub last_day: String,
}

/// Sums consecutive days into at most [`MAX_BARS`] bars; each bar takes its first day.
fn bucket(days: &[Day]) -> (Vec<(Day, NaiveDate)>, usize) {
    let per = days.len().div_ceil(MAX_BARS).max(1);
    let bars = days
        .chunks(per)
        .map(|chunk| {
            let mut sum = Day {
                day: chunk[0].day,
                ..Day::default()
            };
            for d in chunk {
                sum.clicks += d.clicks;
                sum.leads += d.leads;
                sum.sales += d.sales;
                sum.earnings += d.earnings;
            }
            (sum, chunk[chunk.len() - 1].day)
        })
        .collect();
    (bars, per)
}

/// The words of a bar's period.
fn period(first: NaiveDate, last: NaiveDate) -> String {
    if first == last {
        day_text(first)
    } else {
        format!("{} to {}", day_text(first), day_text(last))
    }
}

/// Escapes text for an SVG element or attribute.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// One bar chart of `values` (with the period of each bar), worded by `show`.
fn svg(label: &str, bars: &[(i64, String)], show: &dyn Fn(i64) -> String) -> String {
    const BAR: usize = 10;
    const HEIGHT: i64 = 100;
    let max = bars.iter().map(|(v, _)| *v).max().unwrap_or(0).max(0);
    let total: i64 = bars.iter().map(|(v, _)| *v).sum();
    let best = bars
        .iter()
        .filter(|(v, _)| *v > 0 && *v == max)
        .map(|(_, p)| p.as_str())
        .next();
    let summary = match best {
        Some(p) => format!(
            "{label}: {} in total; highest {} ({p})",
            show(total),
            show(max)
        ),
        None => format!("{label}: none in this period"),
    };
    let width = bars.len().max(1) * BAR;
    let mut out = format!(
        "<svg class=\"spark\" viewBox=\"0 0 {width} {HEIGHT}\" preserveAspectRatio=\"none\" \
         role=\"img\" aria-label=\"{}\" focusable=\"false\">",
        escape(&summary)
    );
    let _ = write!(
        out,
        "<line class=\"baseline\" x1=\"0\" y1=\"{HEIGHT}\" x2=\"{width}\" y2=\"{HEIGHT}\"/>"
    );
    for (i, (value, p)) in bars.iter().enumerate() {
        if *value <= 0 || max == 0 {
            continue;
        }
        // A non-zero day stays visible however large the best day is.
        let h = (value.saturating_mul(HEIGHT) / max).max(2);
        let _ = write!(
            out,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{h}\"><title>{}: {}</title></rect>",
            i * BAR + 1,
            HEIGHT - h,
            BAR - 2,
            escape(p),
            escape(&show(*value)),
        );
    }
    out.push_str("</svg>");
    out
}

/// The charts and table of `days` (every day of the range, in order; none is an empty
/// range), earnings in `currency`.
pub(super) fn chart(days: &[Day], currency: &str) -> Chart {
    let (bars, per) = bucket(days);
    let periods: Vec<String> = bars.iter().map(|(d, last)| period(d.day, *last)).collect();
    let series = |f: fn(&Day) -> i64| -> Vec<(i64, String)> {
        bars.iter()
            .zip(&periods)
            .map(|((d, _), p)| (f(d), p.clone()))
            .collect()
    };
    let count = |n: i64| n.to_string();
    let money = |n: i64| display_amount(n, currency);
    let figures: [Figure; 4] = [
        ("clicks", "Clicks", |d| d.clicks, &count),
        ("leads", "Leads", |d| d.leads, &count),
        ("sales", "Sales", |d| d.sales, &count),
        ("earnings", "Earnings", |d| d.earnings, &money),
    ];
    let panels = figures
        .into_iter()
        .map(|(key, label, f, show)| {
            let values = series(f);
            Panel {
                key,
                label,
                total: show(values.iter().map(|(v, _)| *v).sum()),
                svg: svg(label, &values, show),
            }
        })
        .collect();
    let rows = bars
        .iter()
        .zip(periods)
        .map(|((d, _), label)| Row {
            label,
            clicks: d.clicks,
            leads: d.leads,
            sales: d.sales,
            earnings: display_amount(d.earnings, currency),
        })
        .collect();
    Chart {
        panels,
        rows,
        days_per_bar: per,
        first_day: days.first().map(|d| day_text(d.day)).unwrap_or_default(),
        last_day: days.last().map(|d| day_text(d.day)).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(n: u64, clicks: i64, earnings: i64) -> Day {
        Day {
            day: NaiveDate::from_ymd_opt(2026, 1, 1).unwrap() + chrono::Days::new(n),
            clicks,
            leads: 0,
            sales: 0,
            earnings,
        }
    }

    #[test]
    fn bars_scale_to_the_best_day_and_say_what_they_show() {
        let days = [day(0, 4, 0), day(1, 0, 1500), day(2, 2, -300)];
        let c = chart(&days, "usd");
        assert_eq!(c.panels.len(), 4);
        let clicks = &c.panels[0];
        assert_eq!(clicks.total, "6");
        assert!(clicks
            .svg
            .contains("aria-label=\"Clicks: 6 in total; highest 4 (2026-01-01)\""));
        assert!(clicks.svg.contains("height=\"100\""), "{}", clicks.svg);
        assert!(clicks.svg.contains("height=\"50\""), "{}", clicks.svg);
        assert_eq!(clicks.svg.matches("<rect").count(), 2);
        let earnings = &c.panels[3];
        assert_eq!(earnings.total, "$12.00");
        assert!(earnings.svg.contains("<title>2026-01-02: $15.00</title>"));
        assert!(!earnings.svg.contains("-$3.00</title>"));
        let none = &c.panels[1];
        assert!(none.svg.contains("Leads: none in this period"));
        assert_eq!(c.rows[2].earnings, "-$3.00");
        assert_eq!(
            (c.first_day.as_str(), c.last_day.as_str()),
            ("2026-01-01", "2026-01-03")
        );
    }

    #[test]
    fn long_ranges_put_several_days_in_a_bar() {
        let days: Vec<Day> = (0..365).map(|n| day(n, 1, 0)).collect();
        let c = chart(&days, "eur");
        assert_eq!(c.days_per_bar, 4);
        assert_eq!(c.rows.len(), 92);
        assert_eq!(c.rows[0].clicks, 4);
        assert_eq!(c.rows[0].label, "2026-01-01 to 2026-01-04");
        assert_eq!(c.rows[91].clicks, 1);
        assert_eq!(c.panels[0].total, "365");
    }

    #[test]
    fn text_is_escaped() {
        assert_eq!(escape("<a & \"b\">"), "&lt;a &amp; &quot;b&quot;&gt;");
    }
}
