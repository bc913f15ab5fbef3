//! Clock and calendar helpers. Timestamps are epoch milliseconds; days are UTC.

use chrono::{DateTime, NaiveDate, SecondsFormat, Utc};

/// Milliseconds in a day: the one definition every rule, rollup and seed counts days by.
pub const DAY_MS: i64 = 86_400_000;

/// Milliseconds since the epoch, now, by the system clock.
pub fn now_ms() -> i64 {
    Utc::now().timestamp_millis()
}

/// Where the service reads the time: every time-dependent rule takes it from a clock
/// handed to it, so that tests can move time instead of waiting.
pub trait Clock: Send + Sync + 'static {
    /// Milliseconds since the epoch, now.
    fn now_ms(&self) -> i64;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        now_ms()
    }
}

/// A clock that stands still until told otherwise (for tests). It starts at the system
/// time of its creation.
#[derive(Debug)]
pub struct ManualClock(std::sync::atomic::AtomicI64);

impl Default for ManualClock {
    fn default() -> Self {
        ManualClock(std::sync::atomic::AtomicI64::new(now_ms()))
    }
}

impl ManualClock {
    /// A clock showing `ms`.
    pub fn at(ms: i64) -> Self {
        ManualClock(std::sync::atomic::AtomicI64::new(ms))
    }

    /// Moves the clock forward by `ms` milliseconds.
    pub fn advance(&self, ms: i64) {
        self.0.fetch_add(ms, std::sync::atomic::Ordering::SeqCst);
    }

    /// Sets the clock to `ms`.
    pub fn set(&self, ms: i64) {
        self.0.store(ms, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// The UTC calendar day of an instant, as `YYYY-MM-DD`.
pub fn day_of(ms: i64) -> String {
    date_of(ms).format("%Y-%m-%d").to_string()
}

/// The UTC calendar date of an instant.
pub fn date_of(ms: i64) -> NaiveDate {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .unwrap_or_default()
        .date_naive()
}

/// An instant as an ISO 8601 timestamp with milliseconds (`2026-01-02T03:04:05.678Z`).
pub fn iso(ms: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .unwrap_or_default()
        .to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// The instant an owner typed: an RFC 3339 timestamp (`2026-12-01T00:00:00Z`) or a date
/// (`2026-12-01`, its midnight UTC); `None` when it is neither.
pub fn parse_instant(text: &str) -> Option<i64> {
    let text = text.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Some(t.timestamp_millis());
    }
    let date = NaiveDate::parse_from_str(text, "%Y-%m-%d").ok()?;
    Some(date.and_hms_opt(0, 0, 0)?.and_utc().timestamp_millis())
}

/// Adds whole calendar months to an instant (clamped to the month's last day).
pub fn add_months(ms: i64, months: u32) -> i64 {
    let dt = DateTime::<Utc>::from_timestamp_millis(ms).unwrap_or_default();
    dt.checked_add_months(chrono::Months::new(months))
        .map(|d| d.timestamp_millis())
        .unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_are_utc() {
        // 2026-03-01T23:59:59.999Z and the next millisecond.
        assert_eq!(day_of(1_772_409_599_999), "2026-03-01");
        assert_eq!(day_of(1_772_409_600_000), "2026-03-02");
        assert_eq!(iso(1_772_409_600_000), "2026-03-02T00:00:00.000Z");
    }

    #[test]
    fn an_instant_is_a_timestamp_or_a_dates_midnight() {
        assert_eq!(parse_instant("2026-03-02"), Some(1_772_409_600_000));
        assert_eq!(
            parse_instant("2026-03-02T01:00:00+01:00"),
            Some(1_772_409_600_000)
        );
        assert_eq!(
            parse_instant("2026-03-02T00:00:00.000Z"),
            Some(1_772_409_600_000)
        );
        assert_eq!(parse_instant("next week"), None);
        assert_eq!(parse_instant("2026-02-30"), None);
    }

    #[test]
    fn months_clamp_to_month_end() {
        let jan31 = 1_769_817_600_000; // 2026-01-31T00:00:00Z
        assert_eq!(day_of(add_months(jan31, 1)), "2026-02-28");
        assert_eq!(day_of(add_months(jan31, 12)), "2027-01-31");
    }
}
