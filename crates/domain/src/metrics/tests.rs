use super::*;

fn d(s: &str) -> NaiveDate {
    NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
}

fn ms(s: &str) -> i64 {
    DateTime::parse_from_rfc3339(s).unwrap().timestamp_millis()
}

#[test]
fn periods_end_today_inclusive() {
    let today = d("2026-03-10");
    let created = d("2026-01-15");
    let r = resolve_range(None, None, None, today, created).unwrap();
    assert_eq!(r.period, "7d");
    assert_eq!(
        r.current,
        DayRange {
            from: d("2026-03-04"),
            to: today
        }
    );
    assert_eq!(r.current.len_days(), 7);
    assert_eq!(
        r.previous,
        DayRange {
            from: d("2026-02-25"),
            to: d("2026-03-03")
        }
    );

    let r = resolve_range(Some("30d"), None, None, today, created).unwrap();
    assert_eq!(r.current.from, d("2026-02-09"));
    assert_eq!(r.current.len_days(), 30);
    assert_eq!(r.previous.to, d("2026-02-08"));
    assert_eq!(r.previous.len_days(), 30);

    let r = resolve_range(Some("90d"), None, None, today, created).unwrap();
    assert_eq!(r.current.len_days(), 90);
    assert_eq!(r.current.from, d("2025-12-11"));

    let r = resolve_range(Some("all"), None, None, today, created).unwrap();
    assert_eq!(
        r.current,
        DayRange {
            from: created,
            to: today
        }
    );
    assert_eq!(r.previous.len_days(), r.current.len_days());
    assert_eq!(r.previous.to, d("2026-01-14"));

    // Created today: one day.
    let r = resolve_range(Some("all"), None, None, today, today).unwrap();
    assert_eq!(r.current.len_days(), 1);
    assert_eq!(
        r.previous,
        DayRange {
            from: d("2026-03-09"),
            to: d("2026-03-09")
        }
    );

    assert!(resolve_range(Some("8d"), None, None, today, created).is_err());
    assert!(resolve_range(Some(""), None, None, today, created).is_err());
}

#[test]
fn custom_ranges_are_inclusive_by_date() {
    let today = d("2026-03-10");
    let r = resolve_range(
        Some("bogus"),
        Some("2026-02-01"),
        Some("2026-02-03T05:00:00Z"),
        today,
        today,
    )
    .unwrap();
    assert_eq!(r.period, "custom");
    assert_eq!(
        r.current,
        DayRange {
            from: d("2026-02-01"),
            to: d("2026-02-03")
        }
    );
    assert_eq!(
        r.previous,
        DayRange {
            from: d("2026-01-29"),
            to: d("2026-01-31")
        }
    );
    assert_eq!(r.current.start_ms(), ms("2026-02-01T00:00:00Z"));
    assert_eq!(r.current.end_ms(), ms("2026-02-03T23:59:59.999Z"));

    // Same day: one day.
    let r = resolve_range(None, Some("2026-02-01"), Some("2026-02-01"), today, today).unwrap();
    assert_eq!(r.current.len_days(), 1);
    // Offsets are converted to UTC first.
    let r = resolve_range(
        None,
        Some("2026-02-02T01:00:00+05:00"),
        Some("2026-02-02"),
        today,
        today,
    )
    .unwrap();
    assert_eq!(r.current.from, d("2026-02-01"));

    for (f, t) in [
        (Some("2026-02-03"), Some("2026-02-01")),
        (Some("2026-02-01"), None),
        (None, Some("2026-02-01")),
        (Some("yesterday"), Some("2026-02-01")),
        (Some("2026-02-30"), Some("2026-03-01")),
        (Some("2000-01-01"), Some("2026-01-01")),
    ] {
        assert!(
            resolve_range(None, f, t, today, today).is_err(),
            "{f:?} {t:?}"
        );
    }
}

#[test]
fn iso_values() {
    assert_eq!(
        IsoValue::parse("2026-03-01"),
        Some(IsoValue::Date(d("2026-03-01")))
    );
    assert_eq!(
        IsoValue::parse("2026-03-01T10:00:00.5Z"),
        Some(IsoValue::Instant(ms("2026-03-01T10:00:00.500Z")))
    );
    assert_eq!(
        IsoValue::parse("2026-03-01T10:00:00"),
        Some(IsoValue::Instant(ms("2026-03-01T10:00:00Z")))
    );
    assert_eq!(IsoValue::parse("2026-3-1"), None);
    assert_eq!(IsoValue::parse("1969-12-31"), None);
    assert_eq!(IsoValue::parse("12026-01-01"), None);
    assert_eq!(IsoValue::parse("today"), None);
    let v = IsoValue::parse("2026-03-01").unwrap();
    assert_eq!(v.lower_ms(), ms("2026-03-01T00:00:00Z"));
    assert_eq!(v.upper_ms(), ms("2026-03-01T23:59:59.999Z"));
    let t = IsoValue::parse("2026-03-01T10:00:00Z").unwrap();
    assert_eq!(
        (t.lower_ms(), t.upper_ms()),
        (ms("2026-03-01T10:00:00Z"), ms("2026-03-01T10:00:00Z"))
    );
}

#[test]
fn trends() {
    let t = trend(5, 0);
    assert_eq!((t.trend, t.direction), (100.0, TrendDirection::Up));
    let t = trend(0, 0);
    assert_eq!((t.trend, t.direction), (0.0, TrendDirection::Stable));
    let t = trend(4, 4);
    assert_eq!((t.trend, t.direction), (0.0, TrendDirection::Stable));
    let t = trend(4, 3);
    assert_eq!((t.trend, t.direction), (33.3, TrendDirection::Up));
    let t = trend(1, 3);
    assert_eq!((t.trend, t.direction), (66.7, TrendDirection::Down));
    let t = trend(0, 7);
    assert_eq!((t.trend, t.direction), (100.0, TrendDirection::Down));
    let t = trend(30, 10);
    assert_eq!((t.trend, t.direction), (200.0, TrendDirection::Up));
    // 1/8 = 12.5 % exactly; 1/16 = 6.25 % rounds half away from zero to 6.3.
    assert_eq!(trend(9, 8).trend, 12.5);
    assert_eq!(trend(17, 16).trend, 6.3);
    assert_eq!(trend(15, 16).trend, 6.3);
    assert_eq!(TrendDirection::Down.as_str(), "down");
}

#[test]
fn rounding() {
    assert_eq!(div_round(5, 2), 3);
    assert_eq!(div_round(-5, 2), -3);
    assert_eq!(div_round(4, 3), 1);
    assert_eq!(div_round(5, -2), -3);
    assert_eq!(percent(1, 3), 33.33);
    assert_eq!(percent(2, 3), 66.67);
    assert_eq!(percent(3, 3), 100.0);
    assert_eq!(percent(0, 0), 0.0);
    assert_eq!(percent(1, 8), 12.5);
    assert_eq!(average_minor(10_000, 3), 3_333);
    assert_eq!(average_minor(20_000, 3), 6_667);
    assert_eq!(average_minor(1, 2), 1);
    assert_eq!(average_minor(12_345, 0), 0);
}

#[test]
fn day_helpers() {
    let r = DayRange {
        from: d("2026-02-27"),
        to: d("2026-03-02"),
    };
    let days: Vec<String> = r.days().map(day_text).collect();
    assert_eq!(
        days,
        ["2026-02-27", "2026-02-28", "2026-03-01", "2026-03-02"]
    );
    assert_eq!(date_of_ms(ms("2026-03-01T23:59:59.999Z")), d("2026-03-01"));
}

#[test]
fn count_plans_split_whole_days_from_edges() {
    // Unbounded: every day from rollups.
    assert_eq!(
        count_plan(None, None),
        CountPlan {
            whole_days: Some((None, None)),
            edges: vec![]
        }
    );
    // Whole days exactly.
    assert_eq!(
        count_plan(
            Some(ms("2026-03-01T00:00:00Z")),
            Some(ms("2026-03-03T23:59:59.999Z"))
        ),
        CountPlan {
            whole_days: Some((Some(d("2026-03-01")), Some(d("2026-03-03")))),
            edges: vec![]
        }
    );
    // Partial edges on both sides.
    assert_eq!(
        count_plan(
            Some(ms("2026-03-01T10:00:00Z")),
            Some(ms("2026-03-04T05:00:00Z"))
        ),
        CountPlan {
            whole_days: Some((Some(d("2026-03-02")), Some(d("2026-03-03")))),
            edges: vec![
                (ms("2026-03-01T10:00:00Z"), ms("2026-03-01T23:59:59.999Z")),
                (ms("2026-03-04T00:00:00Z"), ms("2026-03-04T05:00:00Z")),
            ],
        }
    );
    // Lower bound only.
    assert_eq!(
        count_plan(Some(ms("2026-03-01T10:00:00Z")), None),
        CountPlan {
            whole_days: Some((Some(d("2026-03-02")), None)),
            edges: vec![(ms("2026-03-01T10:00:00Z"), ms("2026-03-01T23:59:59.999Z"))],
        }
    );
    // Upper bound only, ending mid-day.
    assert_eq!(
        count_plan(None, Some(ms("2026-03-04T05:00:00Z"))),
        CountPlan {
            whole_days: Some((None, Some(d("2026-03-03")))),
            edges: vec![(ms("2026-03-04T00:00:00Z"), ms("2026-03-04T05:00:00Z"))],
        }
    );
    // Inside one day, or across midnight without a whole day: events only.
    let lo = ms("2026-03-01T10:00:00Z");
    let hi = ms("2026-03-02T09:00:00Z");
    assert_eq!(
        count_plan(Some(lo), Some(hi)),
        CountPlan {
            whole_days: None,
            edges: vec![(lo, hi)]
        }
    );
    // Empty.
    assert_eq!(
        count_plan(Some(hi), Some(lo)),
        CountPlan {
            whole_days: None,
            edges: vec![]
        }
    );
}
