//! The benchmark seed (`reftrack_seed`, run by `scripts/bench`) leaves the figures the
//! tracking API would have: every rollup, link and partner counter equals a count over
//! the seeded events, and the seeded data takes further API writes.

use crate::common::*;

use reftrack::domain::metrics::start_of_day_ms;
use reftrack_seed::{ProgramSpec, SeedOptions};

fn options() -> SeedOptions {
    let spec = |name: &str, clicks, partners, prefix: &str| ProgramSpec {
        name: name.into(),
        clicks,
        partners,
        link_prefix: format!("{prefix}-p"),
        key_prefix: format!("{prefix}-c"),
    };
    SeedOptions {
        programs: vec![spec("A", 3_000, 4, "a"), spec("B", 500, 2, "b")],
        // More days than one counters query takes (128): their rollups take two.
        days: 150,
        user_password: "seed test password".into(),
    }
}

async fn seeded_figures_match_their_events(url: String) {
    let report = reftrack_seed::run(&url, &options(), |_, _| {})
        .await
        .unwrap();
    let store = reftrack::store::open(&url).await.unwrap();
    let q = |sql: String| {
        let url = url.clone();
        async move { reftrack_count(&url, &sql).await }
    };
    for p in &report.programs {
        let id = p.id;
        let rows = store
            .daily_rollups(id, "0000-01-01", "9999-12-31")
            .await
            .unwrap();
        assert!(rows.len() > 128, "{} days", rows.len());
        let (mut clicks, mut leads, mut sales) = (0, 0, 0);
        for r in &rows {
            let date = chrono::NaiveDate::parse_from_str(&r.day, "%Y-%m-%d").unwrap();
            let lo = start_of_day_ms(date);
            let hi = lo + 86_400_000 - 1;
            let between = |col: &str| format!("{col} BETWEEN {lo} AND {hi}");
            assert_eq!(
                r.clicks,
                q(format!(
                    "SELECT COUNT(*) FROM affiliate_click_events WHERE program_id = {id} AND NOT is_test AND {}",
                    between("click_timestamp")
                ))
                .await,
                "clicks of {}",
                r.day
            );
            assert_eq!(
                r.leads,
                q(format!(
                    "SELECT COUNT(*) FROM affiliate_lead_events WHERE program_id = {id} AND customer_id IS NOT NULL AND {}",
                    between("lead_timestamp")
                ))
                .await,
                "leads of {}",
                r.day
            );
            assert_eq!(
                r.conversions,
                q(format!(
                    "SELECT COUNT(*) FROM customers WHERE program_id = {id} AND {}",
                    between("first_purchase_date")
                ))
                .await,
                "conversions of {}",
                r.day
            );
            assert_eq!(
                r.sales,
                q(format!(
                    "SELECT COUNT(*) FROM affiliate_sale_events WHERE program_id = {id} AND {}",
                    between("sale_date")
                ))
                .await
            );
            assert_eq!(
                r.revenue_cents,
                q(format!(
                    "SELECT CAST(COALESCE(SUM(amount_cents), 0) AS BIGINT) FROM affiliate_sale_events \
                     WHERE program_id = {id} AND {}",
                    between("sale_date")
                ))
                .await
            );
            assert_eq!(
                r.commission_cents,
                q(format!(
                    "SELECT CAST(COALESCE(SUM(amount_cents), 0) AS BIGINT) FROM commissions \
                     WHERE program_id = {id} AND {}",
                    between("created_at")
                ))
                .await
            );
            assert_eq!(
                r.partners,
                q(format!(
                    "SELECT COUNT(*) FROM partner_programs WHERE program_id = {id} AND {}",
                    between("created_at")
                ))
                .await
            );
            clicks += r.clicks;
            leads += r.leads;
            sales += r.sales;
        }
        assert_eq!(clicks as u64, p.clicks);
        assert_eq!(leads as u64, p.leads);
        assert_eq!(sales as u64, p.sales);
        assert!(p.leads > 0 && p.sales > 0);
        // Counters on links and partner-program records.
        assert_eq!(
            q(format!(
                "SELECT CAST(SUM(clicks) AS BIGINT) FROM referral_links WHERE program_id = {id}"
            ))
            .await,
            clicks
        );
        assert_eq!(
            q(format!(
                "SELECT COUNT(*) FROM referral_links l WHERE program_id = {id} AND clicks = \
                 (SELECT COUNT(*) FROM affiliate_click_events e WHERE e.link_id = l.id) AND last_clicked = \
                 (SELECT MAX(click_timestamp) FROM affiliate_click_events e WHERE e.link_id = l.id)"
            ))
            .await,
            q(format!("SELECT COUNT(*) FROM referral_links WHERE program_id = {id}")).await
        );
        for (col, expected) in [
            ("total_clicks", clicks),
            ("total_leads", leads),
            ("total_sales", sales),
        ] {
            assert_eq!(
                q(format!("SELECT CAST(SUM({col}) AS BIGINT) FROM partner_programs WHERE program_id = {id}")).await,
                expected,
                "{col}"
            );
        }
        // Customers are in the state their events left them.
        assert_eq!(
            q(format!("SELECT COUNT(*) FROM customers WHERE program_id = {id} AND customer_status = 'conversion'")).await,
            sales
        );
        assert_eq!(
            q(format!("SELECT COUNT(*) FROM customers WHERE program_id = {id} AND customer_key IS NOT NULL")).await,
            leads
        );
    }
    // Every figure, the partners' daily ones included, is what the raw events make.
    let verified = reftrack::verify::check(&*store).await.unwrap();
    assert!(
        verified.drift.is_empty(),
        "{:?}",
        &verified.drift[..verified.drift.len().min(5)]
    );
    store.close().await;

    // The seeded database takes API writes: a click, and a sale for a seeded lead.
    let app = TestApp::at(url).await;
    let big = &report.programs[0];
    let click = app.click(&big.short_link).await;
    assert!(reftrack::domain::click_id::is_well_formed(&click));
    let r = app
        .post_auth(
            "/api/v1/track/sale",
            &big.api_token,
            serde_json::json!({"transaction_id": "after-seed", "amount_cents": 1000, "customer_key": "a-c0"}),
        )
        .await
        .expect(200);
    assert!(r.body["commission_id"].is_i64());
}

#[tokio::test]
async fn seed_is_consistent_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("seed.db").display());
    seeded_figures_match_their_events(url).await;
}

#[tokio::test]
async fn seed_is_consistent_on_postgres() {
    let url = fresh_postgres_url().await;
    dropping_database(url.clone(), seeded_figures_match_their_events(url)).await;
}
