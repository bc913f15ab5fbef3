//! Each fragment of [`super`] against the domain function it copies, on the same cases, on
//! SQLite (in memory) and on PostgreSQL (`REFTRACK_TEST_POSTGRES_URL`; the test fails
//! without it). The fragments read only the values of the case, selected as the columns
//! of the aliases they name, so no table is needed.

use sqlx::Connection;

use super::*;
use crate::sql::engine::{stmt, Engine, Stmt};
use reftrack_domain::attribution;
use reftrack_domain::commission::partner_earns;
use reftrack_domain::currency;
use reftrack_domain::fraud;
use reftrack_domain::lifecycle;
use reftrack_domain::self_referral::{email_key, is_self_referral};
use reftrack_domain::status::{CommissionStatus, PartnerStatus};
use reftrack_domain::time::{day_of, DAY_MS};

/// Commission statuses as stored (an `approved` one approved by its hold is not stored so).
const STORED: &[CommissionStatus] = &[
    CommissionStatus::Pending,
    CommissionStatus::Approved,
    CommissionStatus::Rejected,
    CommissionStatus::Paid,
];

/// A commission of the given columns, as the alias `c`, for the statements below. `$1` is
/// now and `$2` the hold in milliseconds.
const COMMISSION: &str = "(SELECT $3 AS status, $4 AS manual_approval, $5 AS created_at, \
     $6 AS approved_at, $7 AS payout_id) c";

/// Whether `condition` holds, as 1 or 0 on both databases.
fn holds(condition: &str) -> String {
    format!("CAST(CASE WHEN {condition} THEN 1 ELSE 0 END AS BIGINT)")
}

/// The columns of a commission case, in the order [`COMMISSION`] binds them.
type Columns = (
    i64,
    i64,
    CommissionStatus,
    bool,
    i64,
    Option<i64>,
    Option<i64>,
);

fn commission<DB: Engine>(sql: &str, c: Columns) -> Stmt<'_, DB> {
    let (now, hold, stored, manual, created_at, approved, payout_id) = c;
    stmt::<DB>(sql)
        .bind(now)
        .bind(hold)
        .bind(stored.as_str())
        .bind(manual)
        .bind(created_at)
        .bind(approved)
        .bind(payout_id)
}

async fn commission_rules<DB: Engine>(conn: &mut DB::Connection) {
    let day = DAY_MS;
    let now = 100 * day;
    let status_sql = format!("SELECT {} FROM {COMMISSION}", status_at("c.", "$2", "$1"));
    let approved_sql = format!("SELECT {} FROM {COMMISSION}", approved_at("c.", "$2", "$1"));
    let take_sql = format!(
        "SELECT {} FROM {COMMISSION}",
        holds(&payout_may_take("c.", "$2", "$1"))
    );
    for &stored in STORED {
        for manual in [false, true] {
            for hold_days in [0, 1, 30] {
                let hold = lifecycle::hold_ms(hold_days);
                for created_at in [now - hold - 1, now - hold, now - hold + 1, now] {
                    for payout_id in [None, Some(7_i64)] {
                        let approved = (stored == CommissionStatus::Approved).then_some(3 * day);
                        let case = format!(
                            "{stored:?} manual={manual} hold={hold_days}d created={created_at} \
                             payout={payout_id:?}"
                        );
                        let columns = (now, hold, stored, manual, created_at, approved, payout_id);
                        let bind = |sql| commission::<DB>(sql, columns);
                        let sql_status: String = bind(&status_sql).scalar(conn).await.unwrap();
                        let rust = lifecycle::status_at(stored, manual, created_at, hold, now);
                        assert_eq!(sql_status, rust.as_str(), "status_at: {case}");
                        let sql_at: Option<i64> = bind(&approved_sql).scalar(conn).await.unwrap();
                        let rust =
                            lifecycle::approved_at(stored, manual, created_at, approved, hold, now);
                        assert_eq!(sql_at, rust, "approved_at: {case}");
                        let sql_take: i64 = bind(&take_sql).scalar(conn).await.unwrap();
                        let held = payout_id.is_some();
                        let rust =
                            lifecycle::payout_may_take(stored, manual, held, created_at, hold, now);
                        assert_eq!(sql_take == 1, rust, "payout_may_take: {case}");
                    }
                }
            }
        }
    }
}

async fn hold_and_day<DB: Engine>(conn: &mut DB::Connection) {
    let sql = format!(
        "SELECT {} FROM (SELECT $1 AS commission_hold_days) p",
        hold_ms("p.")
    );
    for days in [0, 1, 14, 365] {
        let got: i64 = stmt::<DB>(&sql).bind(days).scalar(conn).await.unwrap();
        assert_eq!(got, lifecycle::hold_ms(days), "hold_ms of {days} days");
    }
    let sql = format!(
        "SELECT {} FROM (SELECT CAST($1 AS BIGINT) AS own, CAST($2 AS BIGINT) AS program) h",
        commission_hold("h.own", "h.program")
    );
    for group in [None, Some(0), Some(7), Some(365)] {
        for program_days in [0, 30] {
            let program = lifecycle::hold_ms(program_days);
            let got: i64 = stmt::<DB>(&sql)
                .bind(group)
                .bind(program)
                .scalar(conn)
                .await
                .unwrap();
            let rust = lifecycle::commission_hold_ms(group, program);
            assert_eq!(
                got, rust,
                "commission_hold of {group:?} and {program_days} days"
            );
        }
    }
    let sql = format!("SELECT {}", day_number("$1"));
    for at in [
        0,
        1,
        DAY_MS - 1,
        DAY_MS,
        1_764_000_000_000,
        1_764_000_000_000 + DAY_MS - 1,
    ] {
        let n: i64 = stmt::<DB>(&sql).bind(at).scalar(conn).await.unwrap();
        assert_eq!(day_of(n * DAY_MS), day_of(at), "day_number of {at}");
        assert!(
            n * DAY_MS <= at && at < (n + 1) * DAY_MS,
            "day_number of {at}"
        );
    }
}

async fn payout_partners<DB: Engine>(conn: &mut DB::Connection) {
    let sql = format!("SELECT {}", holds(&payout_pays("$1", "$2", "$3", "$4")));
    for &standing in PartnerStatus::ALL {
        for email in [None, Some("p@example.com")] {
            for due in [-5, 0, 1, 99, 100, 101] {
                let min = 100;
                let got: i64 = stmt::<DB>(&sql)
                    .bind(standing.as_str())
                    .bind(email)
                    .bind(due)
                    .bind(min)
                    .scalar(conn)
                    .await
                    .unwrap();
                let rust = lifecycle::payout_pays(standing, email.is_some(), due, min);
                assert_eq!(got == 1, rust, "payout_pays: {standing:?} {email:?} {due}");
            }
        }
    }
}

async fn partner_records<DB: Engine>(conn: &mut DB::Connection) {
    let sql = format!(
        "SELECT {} FROM (SELECT $1 AS partner_id, $2 AS program_id) c, \
         (SELECT $1 AS partner_id, $2 AS program_id, $3 AS status) pp",
        holds(APPROVED_PARTNER_RECORD)
    );
    for &standing in PartnerStatus::ALL {
        let got: i64 = stmt::<DB>(&sql)
            .bind(4_i64)
            .bind(9_i64)
            .bind(standing.as_str())
            .scalar(conn)
            .await
            .unwrap();
        assert_eq!(got == 1, partner_earns(standing), "{standing:?}");
    }
}

async fn self_referrals<DB: Engine>(conn: &mut DB::Connection) {
    let sql = format!(
        "SELECT {} FROM (SELECT $1 AS email, $2 AS email_key) c, \
         (SELECT $3 AS email, $4 AS email_key, $5 AS account_email, \
         $6 AS account_email_key) pa",
        holds(NO_SELF_REFERRAL)
    );
    let emails = [
        None,
        Some("ann@example.com"),
        Some("Ann+shop@Example.com"),
        Some("bob@x.io"),
    ];
    // A key is stored with its email, except on rows older than the keys.
    for customer in emails {
        for contact in emails {
            for account in emails {
                for keyed in [true, false] {
                    let key = |e: Option<&str>| e.filter(|_| keyed).map(email_key);
                    let got: i64 = stmt::<DB>(&sql)
                        .bind(customer)
                        .bind(customer.map(email_key))
                        .bind(contact)
                        .bind(key(contact))
                        .bind(account)
                        .bind(key(account))
                        .scalar(conn)
                        .await
                        .unwrap();
                    let rule = is_self_referral(customer, contact.into_iter().chain(account));
                    let case = format!("{customer:?} {contact:?} {account:?} keyed={keyed}");
                    // Never clears a self-referral; with every key stored, it is the rule.
                    assert!(!(got == 1 && rule), "cleared a self-referral: {case}");
                    if keyed {
                        assert_eq!(got == 1, !rule, "{case}");
                    }
                }
            }
        }
    }
}

async fn disposable_emails<DB: Engine>(conn: &mut DB::Connection) {
    let sql = format!(
        "SELECT {} FROM (SELECT $1 AS email, $2 AS email_disposable) c",
        holds(NO_DISPOSABLE_EMAIL)
    );
    let emails = [
        None,
        Some("ann@example.com"),
        Some("ann@mailinator.com"),
        Some("Ann@EU.Mailinator.com"),
    ];
    for email in emails {
        // The mark is stored with the email, except on rows older than the mark.
        for marked in [true, false] {
            let mark = email.filter(|_| marked).map(fraud::is_disposable);
            let got: i64 = stmt::<DB>(&sql)
                .bind(email)
                .bind(mark)
                .scalar(conn)
                .await
                .unwrap();
            let rule = email.is_some_and(fraud::is_disposable);
            let case = format!("{email:?} marked={marked}");
            assert!(!(got == 1 && rule), "cleared a disposable email: {case}");
            if marked {
                assert_eq!(got == 1, !rule, "{case}");
            }
        }
    }
}

async fn review_queue<DB: Engine>(conn: &mut DB::Connection) {
    let sql = format!(
        "SELECT {} FROM (SELECT $1 AS status, $2 AS manual_approval, $3 AS awaiting_rate) c",
        holds(&held_for_review("c."))
    );
    for &stored in STORED {
        for (manual, awaiting) in [(false, false), (true, false), (false, true), (true, true)] {
            let got: i64 = stmt::<DB>(&sql)
                .bind(stored.as_str())
                .bind(manual)
                .bind(awaiting)
                .scalar(conn)
                .await
                .unwrap();
            assert_eq!(
                got == 1,
                lifecycle::held_for_review(stored, manual, awaiting),
                "{stored:?} manual={manual} awaiting={awaiting}"
            );
        }
    }
}

/// A customer of the cases below: id, program, customer key, click id.
type Customer = (i64, i64, Option<&'static str>, &'static str);

async fn sale_customers<DB: Engine>(conn: &mut DB::Connection) {
    // A table of this session only, which `customers` names before any other.
    stmt::<DB>(
        "CREATE TEMP TABLE customers (id BIGINT, program_id BIGINT, customer_key TEXT, \
         click_id TEXT)",
    )
    .execute(conn)
    .await
    .unwrap();
    const CUSTOMERS: &[Customer] = &[
        (1, 10, Some("ann"), "c1"),
        (2, 10, None, "c2"),
        (3, 20, Some("ann"), "c3"),
        (4, 20, Some("bob"), "c4"),
    ];
    for &(id, program, key, click) in CUSTOMERS {
        stmt::<DB>("INSERT INTO customers VALUES ($1, $2, $3, $4)")
            .bind(id)
            .bind(program)
            .bind(key)
            .bind(click)
            .execute(conn)
            .await
            .unwrap();
    }
    let sql = format!(
        "SELECT {SALE_CUSTOMER_ID} FROM (SELECT $1 AS program_id, $2 AS customer_key, \
         $3 AS click_id) rows"
    );
    for program in [10, 20, 30] {
        for key in [None, Some("ann"), Some("bob"), Some("eve")] {
            for click in [None, Some("c1"), Some("c2"), Some("c4"), Some("c9")] {
                let got: Option<i64> = stmt::<DB>(&sql)
                    .bind(program)
                    .bind(key)
                    .bind(click)
                    .scalar(conn)
                    .await
                    .unwrap();
                let by_key = CUSTOMERS
                    .iter()
                    .find(|c| c.1 == program && key.is_some() && c.2 == key);
                let by_click = CUSTOMERS.iter().find(|c| Some(c.3) == click);
                let rule = attribution::sale_customer(program, by_key, by_click, |c| c.1);
                assert_eq!(
                    got,
                    rule.map(|c| c.0),
                    "program {program} key {key:?} click {click:?}"
                );
            }
        }
    }
}

/// A customer's latest click in the cases of [`click_rules`]: its IP and time.
type Click = Option<(Option<&'static str>, i64)>;

/// The click-based fraud rules' fragments against [`fraud::verdict`], on stored
/// conversions and sign-ins around the lookback's edge, clicks around the fast
/// conversion's edge, the same and other customers and partners, no IP and no click.
async fn click_rules<DB: Engine>(conn: &mut DB::Connection) {
    use fraud::{Action, FraudRules, Rule, SaleFacts, FAST_CONVERSION_MS, LOOKBACK_MS};
    // Tables of this session only, which the fragments' statements name before any other.
    for sql in [
        "CREATE TEMP TABLE conversion_ips (partner_id BIGINT, customer_id BIGINT, ip TEXT, \
         converted_at BIGINT)",
        "CREATE TEMP TABLE partner_sign_in_ips (partner_id BIGINT, ip TEXT, \
         signed_in_at BIGINT)",
    ] {
        stmt::<DB>(sql).execute(&mut *conn).await.unwrap();
    }
    let t: i64 = 1_800_000_000_000;
    // Partner, customer, IP, time.
    let conversions: &[(i64, i64, &str, i64)] = &[
        (4, 1, "10.0.0.1", t - LOOKBACK_MS),
        (4, 1, "10.0.0.2", t - LOOKBACK_MS - 1),
        (4, 2, "10.0.0.3", t - 1_000),
        (5, 3, "10.0.0.4", t),
    ];
    // Partner, IP, time.
    let sign_ins: &[(i64, &str, i64)] = &[
        (4, "10.0.0.1", t - LOOKBACK_MS - 1),
        (4, "10.0.0.2", t - LOOKBACK_MS),
        (5, "10.0.0.3", t),
    ];
    for &(partner, customer, ip, at) in conversions {
        stmt::<DB>("INSERT INTO conversion_ips VALUES ($1, $2, $3, $4)")
            .bind(partner)
            .bind(customer)
            .bind(ip)
            .bind(at)
            .execute(&mut *conn)
            .await
            .unwrap();
    }
    for &(partner, ip, at) in sign_ins {
        stmt::<DB>("INSERT INTO partner_sign_in_ips VALUES ($1, $2, $3)")
            .bind(partner)
            .bind(ip)
            .bind(at)
            .execute(&mut *conn)
            .await
            .unwrap();
    }
    let sql = format!(
        "SELECT {}, {}, {}, {} FROM (SELECT $1 AS at, $2 AS check_duplicate_ip, \
         $3 AS check_partner_ip, $4 AS check_fast_conversion) r, \
         (SELECT $5 AS id, $6 AS partner_id) c, \
         (SELECT $7 AS id, $8 AS ip, $9 AS click_timestamp) e",
        holds(&no_fast_conversion("r.at")),
        holds(&no_duplicate_ip("r.at")),
        holds(&no_partner_ip("r.at")),
        holds(&no_click_rule("r.")),
    );
    let ips = [
        None,
        Some("10.0.0.1"),
        Some("10.0.0.2"),
        Some("10.0.0.3"),
        Some("10.0.0.4"),
        Some("10.0.0.9"),
    ];
    let mut clicks: Vec<Click> = vec![None];
    for ip in ips {
        for before in [
            FAST_CONVERSION_MS + 1,
            FAST_CONVERSION_MS,
            FAST_CONVERSION_MS - 1,
            0,
            -1,
        ] {
            clicks.push(Some((ip, t - before)));
        }
    }
    let mut checked = [0; 3];
    for at in [t, t + 1] {
        for partner in [4_i64, 5] {
            for customer in [1_i64, 2, 9] {
                for &click in &clicks {
                    let ip = click.and_then(|c| c.0);
                    let since = at.saturating_sub(LOOKBACK_MS);
                    let facts = SaleFacts {
                        click_at: click.map(|c| c.1),
                        at,
                        ip_converted_before: ip.is_some_and(|ip| {
                            conversions.iter().any(|&(p, k, i, when)| {
                                p == partner && i == ip && when >= since && k != customer
                            })
                        }),
                        ip_partner_signed_in: ip.is_some_and(|ip| {
                            sign_ins
                                .iter()
                                .any(|&(p, i, when)| p == partner && i == ip && when >= since)
                        }),
                        ..SaleFacts::default()
                    };
                    for mask in 0..8_i64 {
                        let on = |bit: i64| mask & bit != 0;
                        let mut rules = FraudRules::all(Action::Off);
                        for (bit, rule) in [
                            (1, Rule::DuplicateIp),
                            (2, Rule::PartnerIp),
                            (4, Rule::FastConversion),
                        ] {
                            if on(bit) {
                                rules.set(rule, Action::Flag);
                            }
                        }
                        let row = stmt::<DB>(&sql)
                            .bind(at)
                            .bind(i64::from(on(1)))
                            .bind(i64::from(on(2)))
                            .bind(i64::from(on(4)))
                            .bind(customer)
                            .bind(partner)
                            .bind(click.map(|_| 77_i64))
                            .bind(ip)
                            .bind(click.map(|c| c.1))
                            .fetch_one(&mut *conn)
                            .await
                            .unwrap();
                        let got: Vec<bool> = (0..4)
                            .map(|i| row.try_get_at::<i64>(i).unwrap() == 1)
                            .collect();
                        let case = format!(
                            "at={at} partner={partner} customer={customer} click={click:?} \
                             rules={mask:03b}"
                        );
                        let all = fraud::verdict(&facts, &FraudRules::all(Action::Flag));
                        for (i, rule) in [Rule::FastConversion, Rule::DuplicateIp, Rule::PartnerIp]
                            .into_iter()
                            .enumerate()
                        {
                            let rule_holds = all.holding.contains(&rule);
                            assert_eq!(got[i], !rule_holds, "{rule}: {case}");
                            if rule_holds && mask == 0 {
                                checked[i] += 1;
                            }
                        }
                        let verdict = fraud::verdict(&facts, &rules);
                        assert_eq!(got[3], verdict.flags.is_empty(), "no_click_rule: {case}");
                    }
                }
            }
        }
    }
    // Each rule held in some case and not in others.
    assert!(checked.iter().all(|&n| n > 0), "{checked:?}");
}

async fn net_revenue<DB: Engine>(conn: &mut DB::Connection) {
    let sql = format!(
        "SELECT {SALE_NET_REVENUE} FROM (SELECT CAST($1 AS BIGINT) AS amount_cents, \
         CAST($2 AS BIGINT) AS refunded_cents, CAST($3 AS BIGINT) AS converted_amount_cents, \
         $4 AS awaiting_rate) s"
    );
    for (amount, refunded) in [
        (12_000, 0),
        (12_000, 1),
        (12_000, 5_999),
        (12_000, 12_000),
        (7, 3),
    ] {
        for converted in [None, Some(0), Some(7_746), Some(99_999_999)] {
            let got: i64 = stmt::<DB>(&sql)
                .bind(amount)
                .bind(refunded)
                .bind(converted)
                .bind(false)
                .scalar(conn)
                .await
                .unwrap();
            let rust = match converted {
                None => amount - refunded,
                Some(c) => c - currency::refunded_share(c, amount, refunded),
            };
            assert_eq!(got, rust, "{amount} {refunded} {converted:?}");
        }
    }
    let waiting: i64 = stmt::<DB>(&sql)
        .bind(100)
        .bind(0)
        .bind(None::<i64>)
        .bind(true)
        .scalar(conn)
        .await
        .unwrap();
    assert_eq!(waiting, 0);
}

async fn every_rule<DB: Engine>(mut conn: DB::Connection) {
    net_revenue::<DB>(&mut conn).await;
    commission_rules::<DB>(&mut conn).await;
    hold_and_day::<DB>(&mut conn).await;
    payout_partners::<DB>(&mut conn).await;
    partner_records::<DB>(&mut conn).await;
    self_referrals::<DB>(&mut conn).await;
    disposable_emails::<DB>(&mut conn).await;
    review_queue::<DB>(&mut conn).await;
    sale_customers::<DB>(&mut conn).await;
    click_rules::<DB>(&mut conn).await;
}

#[tokio::test]
async fn the_fragments_agree_with_the_domain_on_sqlite() {
    let conn = sqlx::SqliteConnection::connect("sqlite::memory:")
        .await
        .unwrap();
    every_rule::<sqlx::Sqlite>(conn).await;
}

#[tokio::test]
async fn the_fragments_agree_with_the_domain_on_postgres() {
    let url = std::env::var("REFTRACK_TEST_POSTGRES_URL").expect(
        "REFTRACK_TEST_POSTGRES_URL names no PostgreSQL server: scripts/test starts one, or \
         set it to postgres://USER@HOST:PORT/DB",
    );
    let conn = sqlx::PgConnection::connect(&url).await.unwrap();
    every_rule::<sqlx::Postgres>(conn).await;
}

/// A sale of SQLite's batch: partner-program record, program, partner, at, amount,
/// commission, currency, whether it converts.
type BatchSale = (i64, i64, i64, i64, i64, i64, &'static str, bool);

/// SQLite's batch counters against [`Deltas::count_sale`], on the tables they update.
#[tokio::test]
async fn the_sqlite_sale_batch_counters_agree_with_count_sale() {
    use reftrack_domain::figures::{Deltas, SaleFigures};
    type DB = sqlx::Sqlite;
    let mut conn = sqlx::SqliteConnection::connect("sqlite::memory:")
        .await
        .unwrap();
    for sql in [
        "CREATE TABLE partner_programs (id INTEGER PRIMARY KEY, total_sales INTEGER NOT NULL \
         DEFAULT 0, total_revenue_cents INTEGER NOT NULL DEFAULT 0, total_commission_cents \
         INTEGER NOT NULL DEFAULT 0)",
        "CREATE TABLE daily_rollups (program_id INTEGER, day TEXT, clicks INTEGER NOT NULL \
         DEFAULT 0, leads INTEGER NOT NULL DEFAULT 0, conversions INTEGER NOT NULL DEFAULT 0, \
         revenue_cents INTEGER NOT NULL DEFAULT 0, sales INTEGER NOT NULL DEFAULT 0, \
         commission_cents INTEGER NOT NULL DEFAULT 0, partners INTEGER NOT NULL DEFAULT 0, \
         lead_events INTEGER NOT NULL DEFAULT 0, sale_events INTEGER NOT NULL DEFAULT 0, \
         PRIMARY KEY (program_id, day))",
        "CREATE TABLE partner_daily_rollups (program_id INTEGER, partner_id INTEGER, day TEXT, \
         clicks INTEGER NOT NULL DEFAULT 0, leads INTEGER NOT NULL DEFAULT 0, conversions \
         INTEGER NOT NULL DEFAULT 0, revenue_cents INTEGER NOT NULL DEFAULT 0, sales INTEGER \
         NOT NULL DEFAULT 0, commission_cents INTEGER NOT NULL DEFAULT 0, \
         PRIMARY KEY (program_id, partner_id, day))",
        "INSERT INTO partner_programs (id) VALUES (1), (2), (3)",
        crate::sqlite::batch::SALE_BATCH_TABLE,
    ] {
        stmt::<DB>(sql).execute(&mut conn).await.unwrap();
    }
    let day = DAY_MS;
    let sales: &[BatchSale] = &[
        (1, 10, 100, 20_000 * day, 1_000, 300, "usd", true),
        (1, 10, 100, 20_000 * day + 5, 2_550, 765, "usd", false),
        (2, 10, 200, 20_001 * day - 1, 7, 2, "usd", true),
        (2, 10, 200, 20_001 * day, 1_000, 0, "jpy", false),
        (3, 11, 100, 20_000 * day, 123_456, 12_345, "kwd", true),
    ];
    let mut deltas = Deltas::default();
    for (i, &(pp, program, partner, at, amount, commission, _currency, converts)) in
        sales.iter().enumerate()
    {
        deltas.count_sale(SaleFigures {
            program_id: program,
            partner_id: partner,
            at,
            amount_cents: amount,
            commission_cents: commission,
            converts,
        });
        stmt::<DB>(
            "INSERT INTO temp.sale_batch (idx, program_id, partner_id, partner_program_id, \
             revenue_figure, commission_figure, day, converts) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(i as i64)
        .bind(program)
        .bind(partner)
        .bind(pp)
        .bind(amount)
        .bind(commission)
        .bind(day_of(at))
        .bind(converts)
        .execute(&mut conn)
        .await
        .unwrap();
    }
    sqlx::raw_sql(SQLITE_SALE_BATCH_COUNTERS)
        .execute(&mut conn)
        .await
        .unwrap();

    let records = [(1, (100, 10)), (2, (200, 10)), (3, (100, 11))];
    for (pp, key) in records {
        let row = stmt::<DB>(
            "SELECT total_sales, total_revenue_cents, total_commission_cents \
             FROM partner_programs WHERE id = $1",
        )
        .bind(pp)
        .fetch_one(&mut conn)
        .await
        .unwrap();
        let want = deltas.partners[&key];
        let got: (i64, i64, i64) = (
            row.try_get_at(0).unwrap(),
            row.try_get_at(1).unwrap(),
            row.try_get_at(2).unwrap(),
        );
        assert_eq!(
            got,
            (want.sales, want.revenue_cents, want.commission_cents),
            "record {pp}"
        );
    }
    let rows = stmt::<DB>(
        "SELECT program_id, day, conversions, revenue_cents, sales, commission_cents, \
         sale_events FROM daily_rollups ORDER BY 1, 2",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    assert_eq!(rows.len(), deltas.rollups.len());
    for r in rows {
        let key: (i64, String) = (r.try_get_at(0).unwrap(), r.try_get_at(1).unwrap());
        let want = deltas.rollups[&key];
        let got: Vec<i64> = (2..7).map(|i| r.try_get_at(i).unwrap()).collect();
        let expected = [
            want.conversions,
            want.revenue_cents,
            want.sales,
            want.commission_cents,
            want.sale_events,
        ];
        assert_eq!(got, expected, "rollup {key:?}");
    }
    let rows = stmt::<DB>(
        "SELECT program_id, partner_id, day, conversions, revenue_cents, sales, \
         commission_cents FROM partner_daily_rollups ORDER BY 1, 2, 3",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    assert_eq!(rows.len(), deltas.partner_days.len());
    for r in rows {
        let key: (i64, i64, String) = (
            r.try_get_at(0).unwrap(),
            r.try_get_at(1).unwrap(),
            r.try_get_at(2).unwrap(),
        );
        let want = deltas.partner_days[&key];
        let got: Vec<i64> = (3..7).map(|i| r.try_get_at(i).unwrap()).collect();
        let expected = [
            want.conversions,
            want.revenue_cents,
            want.sales,
            want.commission_cents,
        ];
        assert_eq!(got, expected, "partner day {key:?}");
    }
}
