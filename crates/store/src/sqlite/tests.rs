//! Tests of the SQLite store on a file of their own: the management records and the names
//! of their errors, and the committer's statements (set-based clicks and sales, their
//! one-query transactions, the counters), each checked against the integrity snapshot.
//! The migrations' are in `migration_tests`.

use std::sync::Arc;

use futures::FutureExt;
use tokio::sync::oneshot;

use super::SqliteStore;
use crate::committer::{WriteConn, WritePool as _};
use crate::error::{StoreError, StoreResult};
use crate::model::{
    ClickDetails, ClickEventRow, NewClick, NewCustomer, NewProgram, NewSale, SaleOutcome,
    SaleProgram,
};
use crate::sql::write::WritePool;
use crate::write::{ClickWrite, Job, OnCommit, SaleWrite, Write};
use crate::{
    DashboardStore, EventFilter, EventKind, PartnerAdmin, ProgramAdmin, Store, TrackingLookups,
    UserAdmin,
};
use reftrack_domain::commission::CommissionRule;
use reftrack_domain::figures::Deltas;
use reftrack_domain::status::{LinkStatus, MembershipStatus, PartnerStatus, Role};

/// 2026-03-02T10:00:00Z.
const AT: i64 = 1_772_445_600_000;

/// A store on a new file, with one program (30 %), one approved partner and its link.
struct Fixture {
    _dir: tempfile::TempDir,
    store: SqliteStore,
    program_id: i64,
    partner_id: i64,
    link_id: i64,
}

async fn fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let url = format!("sqlite://{}", dir.path().join("t.db").display());
    let store = SqliteStore::open(&url).await.expect("the store opens");
    let w = store.create_workspace("w", AT).await.expect("workspace");
    let program = store
        .create_program(
            &NewProgram {
                workspace_id: w.id,
                name: "p".into(),
                cookie_window_days: 30,
                currency: "usd".into(),
                commission: CommissionRule::Percentage { bps: 3_000 },
                recurring_commission_months: None,
                allowed_origins: vec!["https://shop.example".into()],
                stripe_webhook_secret: None,
                commission_hold_days: 30,
                min_payout_cents: 5_000,
                applications_open: false,
                partner_links_allowed: true,
                destination_url: None,
                api_token_hash: "hash".into(),
                api_token_prefix: "rt_".into(),
            },
            AT,
            &|_, _| vec![],
        )
        .await
        .expect("program");
    let partner = store
        .create_partner("a", "a", None, None, AT)
        .await
        .expect("partner");
    // As the service layer adds one: on the committer's connection, with its count.
    let mut conn = WritePool::new(store.write.clone())
        .acquire()
        .await
        .expect("the write connection");
    let mut joined = Deltas::default();
    joined.count_partner_joined(program.id, AT);
    conn.begin().await.expect("begins");
    conn.tx()
        .insert_partner_program(program.id, partner.id, PartnerStatus::Approved, None, AT)
        .await
        .expect("partner-program record");
    let again = conn
        .tx()
        .insert_partner_program(program.id, partner.id, PartnerStatus::Pending, None, AT)
        .await;
    assert!(again.unwrap_err().is_conflict("partner_program"));
    conn.apply(&joined).await.expect("counted");
    conn.commit().await.expect("committed");
    drop(conn);
    let link = store
        .create_link(
            program.id,
            Some(partner.id),
            "a-link",
            LinkStatus::Active,
            None,
            AT,
        )
        .await
        .expect("link");
    Fixture {
        _dir: dir,
        store,
        program_id: program.id,
        partner_id: partner.id,
        link_id: link.id,
    }
}

impl Fixture {
    fn click(&self, n: usize) -> NewClick {
        NewClick {
            program_id: self.program_id,
            link_id: self.link_id,
            partner_id: self.partner_id,
            click_id: format!("click_{n}"),
            details: ClickDetails {
                page_url: Some("https://shop.example/".into()),
                ..ClickDetails::default()
            },
            at: AT + n as i64,
        }
    }

    fn sale(&self, transaction_id: &str, click_id: &str, amount_cents: i64) -> NewSale {
        NewSale {
            program: SaleProgram {
                id: self.program_id,
                currency: "usd".into(),
                fraud_rules: Default::default(),
            },
            transaction_id: transaction_id.into(),
            generated_id: false,
            amount_cents,
            currency: "usd".into(),
            customer_key: None,
            click_id: Some(click_id.into()),
            sale_type: "payment".into(),
            is_recurring: false,
            subscription_id: None,
            product_id: None,
            metadata: None,
            is_test: false,
            at: AT + 3_600_000,
            coupon_key: None,
            promotion_code: None,
            customer_email: None,
            conversion: crate::model::SaleConversion::Same,
        }
    }

    /// The committer's connection, taken while the committer is idle.
    async fn conn(&self) -> Box<dyn WriteConn> {
        WritePool::new(self.store.write.clone())
            .acquire()
            .await
            .expect("the write connection")
    }

    /// Stored figures equal recomputed ones and no invariant is broken; returns the real
    /// clicks and sales counted.
    async fn consistent(&self) -> (i64, i64) {
        let i = self.store.integrity().await.expect("integrity");
        assert_eq!(i.stored.rollups, i.recomputed.rollups);
        assert_eq!(i.stored.partners, i.recomputed.partners);
        assert_eq!(i.stored.links, i.recomputed.links);
        assert_eq!(i.violations, vec![]);
        (i.counts.clicks, i.counts.sales)
    }
}

fn counted(clicks: &[&NewClick]) -> Deltas {
    let mut d = Deltas::default();
    d.count_clicks(
        clicks
            .iter()
            .map(|c| (c.program_id, c.partner_id, c.link_id, c.at)),
    );
    d
}

#[tokio::test]
async fn management_records_and_their_errors() {
    let f = fixture().await;
    let s = &f.store;
    assert!(matches!(
        s.program(999).await,
        Err(StoreError::NotFound("program"))
    ));
    assert!(s
        .create_partner("b", "a", None, None, AT)
        .await
        .unwrap_err()
        .is_conflict("partner code"));
    assert!(s
        .create_link(f.program_id, None, "a-link", LinkStatus::Active, None, AT)
        .await
        .unwrap_err()
        .is_conflict("short_link"));
    assert!(matches!(
        s.create_link(f.program_id, Some(999), "x", LinkStatus::Active, None, AT)
            .await,
        Err(StoreError::NotFound("partner"))
    ));

    let patched = s
        .update_program(
            f.program_id,
            &crate::ProgramPatch {
                name: Some("q".into()),
                commission: Some(CommissionRule::Flat { amount_cents: 500 }),
                recurring_commission_months: Some(Some(12)),
                ..Default::default()
            },
            AT + 1,
            &|_, _| vec![],
        )
        .await
        .expect("patched");
    assert_eq!(patched.name, "q");
    assert_eq!(
        patched.commission,
        CommissionRule::Flat { amount_cents: 500 }
    );
    assert_eq!(patched.recurring_commission_months, Some(12));
    assert_eq!(patched.allowed_origins, vec!["https://shop.example"]);
    assert_eq!(patched.updated_at, AT + 1);
    let cleared = s
        .update_program(
            f.program_id,
            &crate::ProgramPatch {
                recurring_commission_months: Some(None),
                ..Default::default()
            },
            AT + 2,
            &|_, _| vec![],
        )
        .await
        .expect("patched");
    assert_eq!(cleared.recurring_commission_months, None);
    assert_eq!(cleared.name, "q");
    assert!(matches!(
        s.update_program(999, &Default::default(), AT, &|_, _| vec![])
            .await,
        Err(StoreError::NotFound("program"))
    ));

    let link = s
        .update_link(
            f.link_id,
            &crate::LinkPatch {
                status: Some(LinkStatus::Inactive),
                ..Default::default()
            },
        )
        .await
        .expect("link");
    assert_eq!(link.status, LinkStatus::Inactive);
    let target = s
        .link_target("a-link")
        .await
        .expect("lookup")
        .expect("link");
    assert_eq!(target.link_status, LinkStatus::Inactive);
    assert_eq!(target.partner_code.as_deref(), Some("a"));
    assert!(s
        .any_program_allows_origin("https://shop.example/")
        .await
        .expect("origins"));

    let user = s.create_user("u@x", "h", None, AT).await.expect("user");
    assert!(s
        .create_user("u@x", "h", None, AT)
        .await
        .unwrap_err()
        .is_conflict("email"));
    let workspace = f.store.program(f.program_id).await.expect("program");
    s.add_member(
        workspace.workspace_id,
        user.id,
        Role::Viewer,
        MembershipStatus::Active,
        AT,
        &|_, _| vec![],
    )
    .await
    .expect("member");
    assert!(s
        .add_member(
            workspace.workspace_id,
            user.id,
            Role::Viewer,
            MembershipStatus::Active,
            AT,
            &|_, _| vec![]
        )
        .await
        .unwrap_err()
        .is_conflict("membership"));
    let m = s
        .update_member(
            workspace.workspace_id,
            user.id,
            Some(Role::Admin),
            None,
            &|_, _| vec![],
        )
        .await
        .expect("member");
    assert_eq!((m.role, m.status), (Role::Admin, MembershipStatus::Active));
    let access = s
        .program_access(f.program_id, user.id)
        .await
        .expect("access")
        .expect("program");
    assert_eq!(access.member_role, Some(Role::Admin));

    s.create_session(user.id, "t", AT, AT + 10)
        .await
        .expect("session");
    assert_eq!(
        s.session_user("t", AT + 1)
            .await
            .expect("session")
            .map(|u| u.user_id),
        Some(user.id)
    );
    assert!(s
        .session_user("t", AT + 10)
        .await
        .expect("session")
        .is_none());
    assert!(s.delete_session("t").await.expect("logout"));
    f.consistent().await;
    f.store.close().await;
}

#[tokio::test]
async fn clicks_commit_in_one_query_and_leave_nothing_when_they_fail() {
    let f = fixture().await;
    let clicks: Vec<NewClick> = (0..3).map(|n| f.click(n)).collect();
    let refs: Vec<&NewClick> = clicks.iter().collect();
    let mut conn = f.conn().await;
    conn.commit_new_clicks(&refs, &counted(&refs))
        .await
        .expect("committed");
    // The same click ids again: the customers' unique click id refuses them.
    let again = conn.commit_new_clicks(&refs, &counted(&refs)).await;
    assert!(matches!(again, Err(StoreError::Conflict(_))), "{again:?}");
    assert!(!conn.is_statement_bug(&again.unwrap_err()));
    // No transaction was left open.
    conn.begin().await.expect("begins");
    conn.rollback().await;
    drop(conn);
    assert_eq!(f.consistent().await, (3, 0));
    let all = EventFilter {
        kinds: EventKind::ALL.to_vec(),
        test: false,
        from_ms: None,
        to_ms: None,
    };
    assert_eq!(
        f.store
            .count_events(f.program_id, &all)
            .await
            .expect("count"),
        3
    );
    let listed = f
        .store
        .list_events(f.program_id, &all, 2, 0)
        .await
        .expect("list");
    assert_eq!(listed.len(), 2);
    f.store.close().await;
}

#[tokio::test]
async fn clicks_insert_in_an_open_transaction_with_the_counters() {
    let f = fixture().await;
    let clicks: Vec<NewClick> = (0..70).map(|n| f.click(n)).collect();
    let refs: Vec<&NewClick> = clicks.iter().collect();
    let mut conn = f.conn().await;
    conn.begin().await.expect("begins");
    conn.insert_new_clicks(&refs).await.expect("inserted");
    conn.apply(&counted(&refs)).await.expect("counted");
    conn.commit().await.expect("committed");
    drop(conn);
    assert_eq!(f.consistent().await, (70, 0));
    f.store.close().await;
}

#[tokio::test]
async fn plain_sales_record_once_per_customer_and_transaction() {
    let f = fixture().await;
    let clicks: Vec<NewClick> = (0..6).map(|n| f.click(n)).collect();
    let refs: Vec<&NewClick> = clicks.iter().collect();
    let mut conn = f.conn().await;
    conn.commit_new_clicks(&refs, &counted(&refs))
        .await
        .expect("clicks");

    let sales = [
        f.sale("t1", "click_0", 10_000),
        f.sale("t2", "click_1", 2_000),
        // The transaction id of an earlier sale of the batch.
        f.sale("t1", "click_2", 3_000),
        // The customer of an earlier sale of the batch.
        f.sale("t3", "click_1", 4_000),
        // No such customer.
        f.sale("t4", "click_none", 5_000),
    ];
    let refs: Vec<&NewSale> = sales.iter().collect();
    let outcomes = conn
        .commit_plain_sales(&refs)
        .await
        .expect("SQLite has the one-query sale batch")
        .expect("committed");
    let recorded: Vec<bool> = outcomes.iter().map(Option::is_some).collect();
    assert_eq!(recorded, [true, true, false, false, false]);
    assert!(outcomes.iter().flatten().all(|o| o.commission_id.is_some()));

    // In an open transaction: a transaction id recorded before is left to its job.
    let sales = [
        f.sale("t1", "click_3", 1_000),
        f.sale("t5", "click_4", 7_000),
    ];
    let refs: Vec<&NewSale> = sales.iter().collect();
    let mut deltas = Deltas::default();
    conn.begin().await.expect("begins");
    let outcomes = conn
        .record_plain_sales(&refs, &mut deltas)
        .await
        .expect("recorded");
    assert_eq!(outcomes[0], None);
    assert!(outcomes[1].is_some());
    conn.apply(&deltas).await.expect("counted");
    conn.commit().await.expect("committed");
    drop(conn);
    assert_eq!(f.consistent().await, (6, 3));
    f.store.close().await;
}

/// The click-based fraud rules on both set-based sale paths (the one-query transaction
/// and the statements in an open transaction): with every rule on, each sale a rule may
/// hold for is left to its own flow (answered `None`), the others are recorded; a program
/// with the rules off has its sales recorded whatever their clicks.
#[tokio::test]
async fn plain_sales_leave_sales_a_click_rule_may_hold_for_to_their_flow() {
    use crate::FraudStore as _;
    use reftrack_domain::fraud::{Action, FraudRules, FAST_CONVERSION_MS, LOOKBACK_MS};
    for one_query in [true, false] {
        let f = fixture().await;
        let sale_at = f.sale("x", "x", 1).at;
        // Per click: its IP and time.
        let clicks_of: [(Option<&str>, i64); 9] = [
            (Some("192.0.2.1"), AT),
            // The same IP under the same partner as the first, a conversion of this batch.
            (Some("192.0.2.1"), AT),
            // An IP another customer converted from 30 days before the sale.
            (Some("192.0.2.2"), AT),
            // An IP the partner signed in from.
            (Some("192.0.2.3"), AT),
            // Less than 10 s before the sale, then exactly 10 s.
            (Some("192.0.2.4"), sale_at - FAST_CONVERSION_MS + 1),
            (Some("192.0.2.5"), sale_at - FAST_CONVERSION_MS),
            // No IP.
            (None, AT),
            // The converted IP, and less than 10 s, for a program with the rules off.
            (Some("192.0.2.2"), sale_at - 1),
            // An IP another customer converted from more than 30 days before the sale.
            (Some("192.0.2.6"), AT),
        ];
        let clicks: Vec<NewClick> = clicks_of
            .iter()
            .enumerate()
            .map(|(n, &(ip, at))| {
                let mut c = f.click(n);
                c.details.ip = ip.map(String::from);
                c.at = at;
                c
            })
            .collect();
        let refs: Vec<&NewClick> = clicks.iter().collect();
        let mut conn = f.conn().await;
        conn.commit_new_clicks(&refs, &counted(&refs))
            .await
            .expect("clicks");
        // The store's one write connection is the committer's: given back meanwhile.
        drop(conn);
        for (ip, at) in [
            ("192.0.2.2", sale_at - LOOKBACK_MS),
            ("192.0.2.6", sale_at - LOOKBACK_MS - 1),
        ] {
            sqlx::query(
                "INSERT INTO conversion_ips (partner_id, customer_id, ip, converted_at) \
                 VALUES (?, 999999, ?, ?)",
            )
            .bind(f.partner_id)
            .bind(ip)
            .bind(at)
            .execute(&f.store.write)
            .await
            .expect("a conversion");
        }
        f.store
            .record_partner_sign_in_ip(f.partner_id, "192.0.2.3", AT)
            .await
            .expect("a sign-in");
        let mut conn = f.conn().await;

        let sales: Vec<NewSale> = (0..clicks_of.len())
            .map(|n| {
                let mut s = f.sale(&format!("t{n}"), &format!("click_{n}"), 1_000);
                s.program.fraud_rules =
                    FraudRules::all(if n == 7 { Action::Off } else { Action::Flag });
                s
            })
            .collect();
        let refs: Vec<&NewSale> = sales.iter().collect();
        let outcomes = if one_query {
            conn.commit_plain_sales(&refs)
                .await
                .expect("SQLite has the one-query sale batch")
                .expect("committed")
        } else {
            let mut deltas = Deltas::default();
            conn.begin().await.expect("begins");
            let outcomes = conn
                .record_plain_sales(&refs, &mut deltas)
                .await
                .expect("recorded");
            conn.apply(&deltas).await.expect("counted");
            conn.commit().await.expect("committed");
            outcomes
        };
        let recorded: Vec<bool> = outcomes.iter().map(Option::is_some).collect();
        assert_eq!(
            recorded,
            [true, false, false, false, false, true, true, true, true],
            "one query: {one_query}"
        );
        drop(conn);
        // The first sale's conversion kept its IP, for the rule's later sales.
        let kept: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM conversion_ips WHERE ip = '192.0.2.1' AND customer_id <> 999999",
        )
        .fetch_one(&f.store.write)
        .await
        .expect("counted");
        assert_eq!(kept, 1);
        assert_eq!(f.consistent().await, (9, 5));
        f.store.close().await;
    }
}

/// A click through the committer; on its own, a job inserting its customer and event.
struct TestClick {
    click: NewClick,
    answer: oneshot::Sender<StoreResult<()>>,
}

impl ClickWrite for TestClick {
    fn click(&self) -> &NewClick {
        &self.click
    }

    fn on_commit(self: Box<Self>) -> OnCommit {
        Box::new(move |done| {
            let _ = self.answer.send(done);
        })
    }

    fn one_by_one(self: Box<Self>) -> Job {
        let TestClick { click, answer } = *self;
        crate::write::job(answer, move |tx, deltas| {
            async move {
                let c = &click;
                let customer_id = tx
                    .insert_customer(&NewCustomer {
                        program_id: c.program_id,
                        click_id: &c.click_id,
                        customer_key: None,
                        partner_id: c.partner_id,
                        link_id: c.link_id,
                        at: c.at,
                    })
                    .await?;
                tx.insert_click_event(&ClickEventRow {
                    program_id: c.program_id,
                    customer_id: Some(customer_id),
                    link_id: Some(c.link_id),
                    partner_id: Some(c.partner_id),
                    click_id: Some(&c.click_id),
                    details: &c.details,
                    is_test: false,
                    at: c.at,
                })
                .await?;
                deltas.count_click(c.program_id, c.partner_id, c.link_id, c.at);
                Ok(())
            }
            .boxed()
        })
    }
}

/// A sale through the committer; on its own, it writes nothing and answers `None`, so
/// that a test counts the sales the set-based statements leave to their jobs.
struct TestSale {
    sale: NewSale,
    answer: oneshot::Sender<StoreResult<Option<SaleOutcome>>>,
}

impl SaleWrite for TestSale {
    fn sale(&self) -> &NewSale {
        &self.sale
    }

    fn on_commit(self: Box<Self>, outcome: SaleOutcome) -> OnCommit {
        Box::new(move |done| {
            let _ = self.answer.send(done.map(|()| Some(outcome)));
        })
    }

    fn one_by_one(self: Box<Self>) -> Job {
        crate::write::job(self.answer, |_, _| async { Ok(None) }.boxed())
    }
}

#[tokio::test]
async fn batches_through_the_committer_count_as_recorded() {
    let f = Arc::new(fixture().await);
    let mut answers = Vec::new();
    for n in 0..300 {
        let (answer, answered) = oneshot::channel();
        f.store
            .submit(Write::Click(Box::new(TestClick {
                click: f.click(n),
                answer,
            })))
            .await;
        answers.push(answered);
    }
    for a in answers {
        a.await.expect("answered").expect("recorded");
    }
    let mut answers = Vec::new();
    for n in 0..200 {
        let (answer, answered) = oneshot::channel();
        // Every other sale names the customer of the one before: left to its own job
        // when both are in one batch, recorded when not.
        let sale = f.sale(&format!("t{n}"), &format!("click_{}", n - n % 2), 1_000);
        f.store
            .submit(Write::Sale(Box::new(TestSale { sale, answer })))
            .await;
        answers.push(answered);
    }
    let mut recorded = 0;
    for a in answers {
        recorded += i64::from(a.await.expect("answered").expect("answered").is_some());
    }
    assert!((100..=200).contains(&recorded), "{recorded}");
    assert_eq!(f.consistent().await, (300, recorded));
    f.store.close().await;
}
