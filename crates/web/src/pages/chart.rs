//! The daily charts of an overview: one small bar chart per figure (clicks, leads,
//! sales, money), drawn as inline SVG on the server. Each bar carries its day and value
//! as a `<title>` (a tooltip), each chart an `aria-label` with its total and best day,
//! and the page adds the same figures as a table.

use std::fmt::Write;

use chrono::NaiveDate;

use reftrack_domain::metrics::day_text;
use reftrack_domain::money::display_amount;

/// Bars a chart draws at most; longer ranges put several days in one bar.
pub const MAX_BARS: usize = 92;

/// One figure over the days of a range.
pub struct Series {
    /// The chart's CSS key (`clicks`, `leads`, `sales`, `revenue`, `earnings`, …).
    pub key: &'static str,
    pub label: &'static str,
    /// Amounts in the currency's smallest unit, rather than counts.
    pub money: bool,
    /// One value per day of the range.
    pub values: Vec<i64>,
}

impl Series {
    /// A value of the series as a page shows it: money in `currency`, or a count.
    pub fn show(&self, value: i64, currency: &str) -> String {
        if self.money {
            display_amount(value, currency)
        } else {
            value.to_string()
        }
    }

    /// The total of the range, shown.
    pub fn total(&self, currency: &str) -> String {
        self.show(saturating_sum(self.values.iter().copied()), currency)
    }
}

/// One figure's chart, ready for the page.
pub struct Panel {
    /// The chart's CSS key.
    pub key: &'static str,
    pub label: &'static str,
    /// The range's total, formatted.
    pub total: String,
    /// The scale: the highest bar's value at the chart's top, and the lowest (negative)
    /// one's at its bottom when a bar goes below zero (money taken back).
    pub top: String,
    pub bottom: Option<String>,
    /// The `<svg>` element.
    pub svg: String,
}

/// A row of the figures table (one bar).
pub struct Row {
    /// The bar's day, or its first and last day.
    pub label: String,
    /// One formatted value per series.
    pub cells: Vec<String>,
}

/// The charts of a range and their table.
pub struct Chart {
    pub panels: Vec<Panel>,
    /// The table's value columns: the series' labels.
    pub columns: Vec<&'static str>,
    pub rows: Vec<Row>,
    /// How many days one bar holds.
    pub days_per_bar: usize,
    pub first_day: String,
    pub last_day: String,
}

/// The bars of `days`: at most [`MAX_BARS`] runs of consecutive days (first and last
/// day of each), and how many days a run holds.
fn bucket(days: &[NaiveDate]) -> (Vec<(usize, usize)>, usize) {
    let per = days.len().div_ceil(MAX_BARS).max(1);
    let runs = (0..days.len())
        .step_by(per)
        .map(|start| (start, (start + per).min(days.len()) - 1))
        .collect();
    (runs, per)
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

/// The scale of `bars`: the highest value (at least 0) and the lowest (at most 0).
fn scale(bars: &[(i64, String)]) -> (i64, i64) {
    let values = bars.iter().map(|(v, _)| *v);
    (
        values.clone().max().unwrap_or(0).max(0),
        values.min().unwrap_or(0).min(0),
    )
}

/// One bar chart of `values` (with the period of each bar), worded by `show`. Bars rise
/// from zero; a negative bar (more taken back than earned that day) hangs below it.
fn svg(label: &str, bars: &[(i64, String)], show: &dyn Fn(i64) -> String) -> String {
    const BAR: usize = 10;
    const HEIGHT: i64 = 100;
    let (max, min) = scale(bars);
    let span = max.saturating_sub(min);
    let total = saturating_sum(bars.iter().map(|(v, _)| *v));
    let day_of = |v: i64| {
        bars.iter()
            .find(|(b, _)| *b == v)
            .map(|(_, p)| p.as_str())
            .unwrap_or("")
    };
    let summary = if max > 0 {
        format!(
            "{label}: {} in total; highest {} ({})",
            show(total),
            show(max),
            day_of(max)
        )
    } else if min < 0 {
        format!(
            "{label}: {} in total; lowest {} ({})",
            show(total),
            show(min),
            day_of(min)
        )
    } else {
        format!("{label}: none in this period")
    };
    let width = bars.len().max(1) * BAR;
    let mut out = format!(
        "<svg class=\"spark\" viewBox=\"0 0 {width} {HEIGHT}\" preserveAspectRatio=\"none\" \
         role=\"img\" aria-label=\"{}\" focusable=\"false\">",
        escape(&summary)
    );
    // Where zero is: the bottom, unless some bar is negative; with bars on both sides,
    // never so near an edge that the smaller side's bars would not show.
    let zero = match (max > 0, min < 0) {
        (true, true) => (max.saturating_mul(HEIGHT) / span).clamp(2, HEIGHT - 2),
        (false, true) => 0,
        _ => HEIGHT,
    };
    let _ = write!(
        out,
        "<line class=\"baseline\" x1=\"0\" y1=\"{zero}\" x2=\"{width}\" y2=\"{zero}\"/>"
    );
    for (i, (value, p)) in bars.iter().enumerate() {
        if *value == 0 || span == 0 {
            continue;
        }
        // A non-zero day stays visible however large the best day is, and inside the
        // chart on its side of zero.
        let h = (value.saturating_abs().saturating_mul(HEIGHT) / span).max(2);
        let (y, h, class) = if *value > 0 {
            let h = h.min(zero);
            (zero - h, h, "")
        } else {
            (zero, h.min(HEIGHT - zero), " class=\"negative\"")
        };
        let _ = write!(
            out,
            "<rect{class} x=\"{}\" y=\"{y}\" width=\"{}\" height=\"{h}\"><title>{}: {}</title></rect>",
            i * BAR + 1,
            BAR - 2,
            escape(p),
            escape(&show(*value)),
        );
    }
    out.push_str("</svg>");
    out
}

/// The charts and table of `series` over `days` (every day of the range, in order;
/// none is an empty range), money in `currency`.
pub fn chart(days: &[NaiveDate], series: &[Series], currency: &str) -> Chart {
    let (runs, per) = bucket(days);
    let periods: Vec<String> = runs
        .iter()
        .map(|(first, last)| period(days[*first], days[*last]))
        .collect();
    let sums: Vec<Vec<i64>> = series
        .iter()
        .map(|s| {
            runs.iter()
                .map(|(first, last)| saturating_sum(s.values[*first..=*last].iter().copied()))
                .collect()
        })
        .collect();
    let panels = series
        .iter()
        .zip(&sums)
        .map(|(s, bars)| {
            let labelled: Vec<(i64, String)> =
                bars.iter().copied().zip(periods.iter().cloned()).collect();
            let (max, min) = scale(&labelled);
            Panel {
                key: s.key,
                label: s.label,
                total: s.total(currency),
                top: s.show(max, currency),
                bottom: (min < 0).then(|| s.show(min, currency)),
                svg: svg(s.label, &labelled, &|n| s.show(n, currency)),
            }
        })
        .collect();
    let rows = periods
        .into_iter()
        .enumerate()
        .map(|(i, label)| Row {
            label,
            cells: series
                .iter()
                .zip(&sums)
                .map(|(s, bars)| s.show(bars[i], currency))
                .collect(),
        })
        .collect();
    Chart {
        panels,
        columns: series.iter().map(|s| s.label).collect(),
        rows,
        days_per_bar: per,
        first_day: days.first().map(|d| day_text(*d)).unwrap_or_default(),
        last_day: days.last().map(|d| day_text(*d)).unwrap_or_default(),
    }
}

/// The sum of `values`, held at the largest (or smallest) `i64` instead of overflowing:
/// a chart must draw whatever its counters hold.
pub fn saturating_sum(values: impl IntoIterator<Item = i64>) -> i64 {
    values.into_iter().fold(0, i64::saturating_add)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn days(n: u64) -> Vec<NaiveDate> {
        (0..n)
            .map(|i| NaiveDate::from_ymd_opt(2026, 1, 1).unwrap() + chrono::Days::new(i))
            .collect()
    }

    fn series(key: &'static str, money: bool, values: Vec<i64>) -> Series {
        Series {
            key,
            label: key,
            money,
            values,
        }
    }

    #[test]
    fn bars_scale_to_the_best_day_and_say_what_they_show() {
        let c = chart(
            &days(3),
            &[
                series("Clicks", false, vec![4, 0, 2]),
                series("Leads", false, vec![0, 0, 0]),
                series("Earnings", true, vec![0, 1500, -300]),
            ],
            "usd",
        );
        assert_eq!(c.panels.len(), 3);
        assert_eq!(c.columns, ["Clicks", "Leads", "Earnings"]);
        let clicks = &c.panels[0];
        assert_eq!(clicks.total, "6");
        assert!(clicks
            .svg
            .contains("aria-label=\"Clicks: 6 in total; highest 4 (2026-01-01)\""));
        assert!(clicks.svg.contains("height=\"100\""), "{}", clicks.svg);
        assert!(clicks.svg.contains("height=\"50\""), "{}", clicks.svg);
        assert_eq!(clicks.svg.matches("<rect").count(), 2);
        assert_eq!((clicks.top.as_str(), clicks.bottom.as_deref()), ("4", None));
        let earnings = &c.panels[2];
        assert_eq!(earnings.total, "$12.00");
        assert!(earnings.svg.contains("<title>2026-01-02: $15.00</title>"));
        // A day that took back more than it earned hangs below zero, on the same scale:
        // zero at 1500 / 1800 of the height, the bar 300 / 1800 of it.
        assert_eq!(
            (earnings.top.as_str(), earnings.bottom.as_deref()),
            ("$15.00", Some("-$3.00"))
        );
        assert!(earnings.svg.contains("y1=\"83\""), "{}", earnings.svg);
        assert!(earnings
            .svg
            .contains("<rect class=\"negative\" x=\"21\" y=\"83\" width=\"8\" height=\"16\"><title>2026-01-03: -$3.00</title>"));
        let none = &c.panels[1];
        assert!(none.svg.contains("Leads: none in this period"));
        assert_eq!(c.rows[2].cells, ["2", "0", "-$3.00"]);
        assert_eq!(
            (c.first_day.as_str(), c.last_day.as_str()),
            ("2026-01-01", "2026-01-03")
        );
    }

    #[test]
    fn small_days_beside_large_ones_of_the_other_sign_stay_in_sight() {
        let c = chart(
            &days(3),
            &[series("Earnings", true, vec![100, -100_000, 0])],
            "usd",
        );
        let svg = &c.panels[0].svg;
        // Zero two units below the top: the small day's bar fits above it, the large
        // refund's below.
        assert!(svg.contains("y1=\"2\""), "{svg}");
        assert!(svg.contains("y=\"0\" width=\"8\" height=\"2\""), "{svg}");
        assert!(svg.contains("y=\"2\" width=\"8\" height=\"98\""), "{svg}");
        // Only money taken back: zero at the top, the summary says so.
        let c = chart(&days(2), &[series("Earnings", true, vec![-300, 0])], "usd");
        let svg = &c.panels[0].svg;
        assert!(svg.contains("y1=\"0\""), "{svg}");
        assert!(
            svg.contains("aria-label=\"Earnings: -$3.00 in total; lowest -$3.00 (2026-01-01)\""),
            "{svg}"
        );
    }

    #[test]
    fn long_ranges_put_several_days_in_a_bar() {
        let c = chart(&days(365), &[series("Clicks", false, vec![1; 365])], "eur");
        assert_eq!(c.days_per_bar, 4);
        assert_eq!(c.rows.len(), 92);
        assert_eq!(c.rows[0].cells, ["4"]);
        assert_eq!(c.rows[0].label, "2026-01-01 to 2026-01-04");
        assert_eq!(c.rows[91].cells, ["1"]);
        assert_eq!(c.panels[0].total, "365");
    }

    #[test]
    fn text_is_escaped() {
        assert_eq!(escape("<a & \"b\">"), "&lt;a &amp; &quot;b&quot;&gt;");
    }
}
