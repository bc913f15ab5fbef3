//! Dashboard arithmetic: date ranges, previous periods, trends and rounding.
//!
//! Everything here is pure: the caller passes "today" and the program's creation day.
//! Rounding is done on integers (half away from zero), so `33.35` never turns into
//! `33.34` through binary floating point.

use chrono::{DateTime, Days, NaiveDate, NaiveDateTime, NaiveTime, Utc};

use crate::time::DAY_MS;

/// Longest custom range (`dateFrom`..`dateTo`) the performance endpoint accepts, in days.
pub const MAX_RANGE_DAYS: i64 = 3660;

/// Earliest and latest years accepted in dates, so that days stay 4-digit `YYYY-MM-DD`.
const MIN_YEAR: i32 = 1970;
const MAX_YEAR: i32 = 9999;

/// An inclusive range of UTC calendar days.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DayRange {
    /// First day, included.
    pub from: NaiveDate,
    /// Last day, included.
    pub to: NaiveDate,
}

impl DayRange {
    /// Number of days in the range (at least 1 for a valid range).
    pub fn len_days(&self) -> i64 {
        (self.to - self.from).num_days() + 1
    }

    /// The window of equal length ending the day before this one starts.
    pub fn previous(&self) -> DayRange {
        let len = self.len_days() as u64;
        DayRange {
            from: self.from - Days::new(len),
            to: self.from - Days::new(1),
        }
    }

    /// Every day of the range, in order.
    pub fn days(&self) -> impl Iterator<Item = NaiveDate> {
        let from = self.from;
        (0..self.len_days() as u64).map(move |i| from + Days::new(i))
    }

    /// The first millisecond of the range.
    pub fn start_ms(&self) -> i64 {
        start_of_day_ms(self.from)
    }

    /// The last millisecond of the range.
    pub fn end_ms(&self) -> i64 {
        start_of_day_ms(self.to) + DAY_MS - 1
    }
}

/// A day as stored in `daily_rollups.day`.
pub fn day_text(d: NaiveDate) -> String {
    d.format("%Y-%m-%d").to_string()
}

/// The first millisecond of a UTC day.
pub fn start_of_day_ms(d: NaiveDate) -> i64 {
    d.and_time(NaiveTime::MIN).and_utc().timestamp_millis()
}

/// The UTC day of an instant.
pub fn date_of_ms(ms: i64) -> NaiveDate {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .unwrap_or_default()
        .date_naive()
}

/// An ISO 8601 value from a query string: a bare date or a full timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IsoValue {
    /// `YYYY-MM-DD`: a whole UTC day.
    Date(NaiveDate),
    /// A timestamp, as epoch milliseconds (UTC when it carries no offset).
    Instant(i64),
}

impl IsoValue {
    /// Parses `2026-03-01`, `2026-03-01T10:00:00Z`, `2026-03-01T10:00:00.123+02:00` or
    /// `2026-03-01T10:00:00` (read as UTC). Years outside 1970–9999 are refused.
    pub fn parse(s: &str) -> Option<IsoValue> {
        let s = s.trim();
        let v = if let Ok(d) = NaiveDate::parse_from_str(s, "%Y-%m-%d") {
            IsoValue::Date(d)
        } else if let Ok(t) = DateTime::parse_from_rfc3339(s) {
            IsoValue::Instant(t.timestamp_millis())
        } else if let Ok(t) = NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f") {
            IsoValue::Instant(t.and_utc().timestamp_millis())
        } else {
            return None;
        };
        // A bare date must look like one (chrono accepts `2026-3-1` and 5-digit years).
        if let IsoValue::Date(_) = v {
            if s.len() != 10 {
                return None;
            }
        }
        let year = chrono::Datelike::year(&v.date());
        (MIN_YEAR..=MAX_YEAR).contains(&year).then_some(v)
    }

    /// The UTC day of the value.
    pub fn date(&self) -> NaiveDate {
        match *self {
            IsoValue::Date(d) => d,
            IsoValue::Instant(ms) => date_of_ms(ms),
        }
    }

    /// As an inclusive lower bound: a date starts at its first millisecond.
    pub fn lower_ms(&self) -> i64 {
        match *self {
            IsoValue::Date(d) => start_of_day_ms(d),
            IsoValue::Instant(ms) => ms,
        }
    }

    /// As an inclusive upper bound: a date ends at its last millisecond.
    pub fn upper_ms(&self) -> i64 {
        match *self {
            IsoValue::Date(d) => start_of_day_ms(d) + DAY_MS - 1,
            IsoValue::Instant(ms) => ms,
        }
    }
}

/// The current and previous windows of a performance request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedRange {
    /// What `meta.period` reports: `7d`, `30d`, `90d`, `all`, or `custom` for
    /// `dateFrom`/`dateTo`.
    pub period: String,
    /// The range asked for.
    pub current: DayRange,
    /// The equal-length window right before it.
    pub previous: DayRange,
}

/// The range of a performance request.
///
/// `dateFrom` and `dateTo` together win over `period`; one without the other, an unknown
/// period, an unparsable date, `dateFrom` after `dateTo` or a range over
/// [`MAX_RANGE_DAYS`] are errors (the text is the 400's message).
pub fn resolve_range(
    period: Option<&str>,
    date_from: Option<&str>,
    date_to: Option<&str>,
    today: NaiveDate,
    created: NaiveDate,
) -> Result<ResolvedRange, String> {
    let (label, current) = match (date_from, date_to) {
        (Some(f), Some(t)) => {
            let from = IsoValue::parse(f)
                .ok_or("dateFrom must be an ISO 8601 date (YYYY-MM-DD) or timestamp")?;
            let to = IsoValue::parse(t)
                .ok_or("dateTo must be an ISO 8601 date (YYYY-MM-DD) or timestamp")?;
            let range = DayRange {
                from: from.date(),
                to: to.date(),
            };
            if range.from > range.to {
                return Err("dateFrom must not be after dateTo".into());
            }
            if range.len_days() > MAX_RANGE_DAYS {
                return Err(format!(
                    "The date range must be at most {MAX_RANGE_DAYS} days"
                ));
            }
            ("custom".to_string(), range)
        }
        (Some(_), None) | (None, Some(_)) => {
            return Err("dateFrom and dateTo must be given together".into())
        }
        (None, None) => {
            let p = period.unwrap_or("7d");
            let from = match p {
                "7d" => today - Days::new(6),
                "30d" => today - Days::new(29),
                "90d" => today - Days::new(89),
                // A program created "after today" (clock skew) still gets one day.
                "all" => created.min(today),
                _ => return Err("period must be one of: 7d, 30d, 90d, all".into()),
            };
            (p.to_string(), DayRange { from, to: today })
        }
    };
    Ok(ResolvedRange {
        period: label,
        previous: current.previous(),
        current,
    })
}

/// Direction of a trend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrendDirection {
    /// The current value is higher.
    Up,
    /// The current value is lower.
    Down,
    /// Equal.
    Stable,
}

impl TrendDirection {
    /// The wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            TrendDirection::Up => "up",
            TrendDirection::Down => "down",
            TrendDirection::Stable => "stable",
        }
    }
}

/// A trend: absolute percentage change with one decimal, and its direction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Trend {
    /// `round(|cur - prev| / prev * 100, 1)`.
    pub trend: f64,
    /// Up, down or stable.
    pub direction: TrendDirection,
}

/// The trend of `cur` against `prev` (both in the same unit, e.g. cents).
pub fn trend(cur: i64, prev: i64) -> Trend {
    let direction = match cur.cmp(&prev) {
        std::cmp::Ordering::Greater => TrendDirection::Up,
        std::cmp::Ordering::Less => TrendDirection::Down,
        std::cmp::Ordering::Equal => TrendDirection::Stable,
    };
    let trend = if prev == 0 {
        if cur == 0 {
            0.0
        } else {
            100.0
        }
    } else {
        let diff = (i128::from(cur) - i128::from(prev)).abs();
        tenths(div_round(diff * 1000, i128::from(prev).abs()))
    };
    Trend { trend, direction }
}

/// `n / d` rounded to the nearest integer, halves away from zero. `d` must not be 0.
pub fn div_round(n: i128, d: i128) -> i128 {
    let (n, d) = if d < 0 { (-n, -d) } else { (n, d) };
    if n >= 0 {
        (2 * n + d) / (2 * d)
    } else {
        -((-2 * n + d) / (2 * d))
    }
}

fn tenths(v: i128) -> f64 {
    v as f64 / 10.0
}

fn hundredths(v: i128) -> f64 {
    v as f64 / 100.0
}

/// `part / whole * 100` with 2 decimals; 0 when `whole` is 0 (conversion rate).
pub fn percent(part: i64, whole: i64) -> f64 {
    if whole == 0 {
        return 0.0;
    }
    hundredths(div_round(i128::from(part) * 10_000, i128::from(whole)))
}

/// `minor / count`, rounded, in minor units; 0 when `count` is 0 (average order value).
pub fn average_minor(minor: i64, count: i64) -> i64 {
    if count == 0 {
        return 0;
    }
    div_round(i128::from(minor), i128::from(count)) as i64
}

/// Splits an inclusive millisecond range into the whole UTC days it covers and its
/// partial edges, so that counts over whole days can come from daily rollups and only
/// the edges need the event tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CountPlan {
    /// Whole days covered: first and last, `None` meaning unbounded on that side.
    /// `None` as a whole when no whole day is covered.
    pub whole_days: Option<(Option<NaiveDate>, Option<NaiveDate>)>,
    /// Inclusive millisecond ranges outside those days, each shorter than two days.
    pub edges: Vec<(i64, i64)>,
}

/// Plans a count over `[lo, hi]` (inclusive, `None` = unbounded).
pub fn count_plan(lo: Option<i64>, hi: Option<i64>) -> CountPlan {
    if let (Some(l), Some(h)) = (lo, hi) {
        if l > h {
            return CountPlan {
                whole_days: None,
                edges: vec![],
            };
        }
    }
    let first = lo.map(|l| {
        let d = date_of_ms(l);
        if start_of_day_ms(d) == l {
            d
        } else {
            d + Days::new(1)
        }
    });
    let last = hi.map(|h| {
        let d = date_of_ms(h);
        if start_of_day_ms(d) + DAY_MS - 1 == h {
            d
        } else {
            d - Days::new(1)
        }
    });
    if let (Some(f), Some(l), Some(lo), Some(hi)) = (first, last, lo, hi) {
        if f > l {
            return CountPlan {
                whole_days: None,
                edges: vec![(lo, hi)],
            };
        }
    }
    let mut edges = vec![];
    if let (Some(lo), Some(f)) = (lo, first) {
        if lo < start_of_day_ms(f) {
            edges.push((lo, start_of_day_ms(f) - 1));
        }
    }
    if let (Some(hi), Some(l)) = (hi, last) {
        let end = start_of_day_ms(l) + DAY_MS - 1;
        if hi > end {
            edges.push((end + 1, hi));
        }
    }
    CountPlan {
        whole_days: Some((first, last)),
        edges,
    }
}

#[cfg(test)]
mod tests;
