//! What the engines' set-based statements of the group committer share: the rows they
//! read (a batch's new clicks, the keys of its plain sales, the resolved sales), and the
//! flow of a batch's plain sales around the two statements each engine writes its own way
//! ([`SetStatements::plain_sales_query`]), and the statement that resolves them, which
//! both write alike.
//!
//! Each writes the same rows and counts the same figures as the flow of the service layer
//! would for each click or sale one by one.

use std::collections::{HashMap, HashSet};

use async_trait::async_trait;
use sqlx::Database;

use super::engine::{stmt, Engine, Query, ReadRow};
use super::groups::RewardsCache;
use super::rows::{self, Rows, Value};
use super::rules::{self as rule_sql, NO_DISPOSABLE_EMAIL};
use super::{webhooks, APPROVED_PARTNER_RECORD, NO_SELF_REFERRAL};
use crate::error::{StoreError, StoreResult};
use crate::model::{NewClick, NewSale, SaleConversion, SaleOutcome};
use reftrack_domain::figures::{Deltas, SaleFigures};
use reftrack_domain::fraud::Rule;

use reftrack_domain::rewards::{self, SaleFacts, SaleReward};

/// The set-based statements of the group committer, each engine's own (its `batch`
/// module).
#[async_trait]
pub trait SetStatements: Database {
    /// Inserts new clicks (each with its customer) in the open transaction.
    async fn insert_new_clicks(
        conn: &mut Self::Connection,
        clicks: &[&NewClick],
    ) -> StoreResult<()>;
    /// Inserts new clicks and adds their counters as a transaction of its own.
    async fn commit_new_clicks(
        conn: &mut Self::Connection,
        clicks: &[&NewClick],
        deltas: &Deltas,
    ) -> StoreResult<()>;
    /// The statement of `step` of a batch's plain sales for `n` of them (1 to
    /// [`MAX_SET_ROWS`](crate::committer::MAX_SET_ROWS)), with `chunk`, a chunk of
    /// `rows`, bound as its parameters (see [`plain_sales`]).
    fn plain_sales_query<'q>(
        step: SalesStep,
        n: usize,
        rows: &Rows<'q>,
        chunk: &[Value<'q>],
    ) -> Query<'q, Self>;
    /// Records plain sales and their counters as a transaction of its own, where the
    /// database has a form for it (`None`: it has not).
    async fn commit_plain_sales(
        conn: &mut Self::Connection,
        sales: &[&NewSale],
        cache: &RewardsCache,
    ) -> Option<StoreResult<Vec<Option<SaleOutcome>>>>;
}

/// The columns of a batch's new clicks.
pub const CLICK_COLUMNS: &[&str] = &[
    "program_id",
    "click_id",
    "partner_id",
    "link_id",
    "at",
    "session_id",
    "page_url",
    "page_title",
    "referrer_url",
    "screen_resolution",
    "viewport_size",
    "language",
    "timezone",
    "geo_country",
    "geo_region",
    "geo_city",
    "device_type",
    "device_os",
    "browser_name",
    "ip",
];

/// The rows of [`CLICK_COLUMNS`] for `clicks`.
pub fn new_click_rows<'c>(clicks: &[&'c NewClick]) -> Rows<'c> {
    use Value::{Int, Text};
    let mut rows = Rows::new(CLICK_COLUMNS);
    for c in clicks {
        let d = &c.details;
        rows.push(&[
            Int(c.program_id),
            Text(Some(&c.click_id)),
            Int(c.partner_id),
            Int(c.link_id),
            Int(c.at),
            Text(d.session_id.as_deref()),
            Text(d.page_url.as_deref()),
            Text(d.page_title.as_deref()),
            Text(d.referrer_url.as_deref()),
            Text(d.screen_resolution.as_deref()),
            Text(d.viewport_size.as_deref()),
            Text(d.language.as_deref()),
            Text(d.timezone.as_deref()),
            Text(d.geo_country.as_deref()),
            Text(d.geo_region.as_deref()),
            Text(d.geo_city.as_deref()),
            Text(d.device_type.as_deref()),
            Text(d.device_os.as_deref()),
            Text(d.browser_name.as_deref()),
            Text(d.ip.as_deref()),
        ]);
    }
    rows
}

/// The columns of the sales a batch resolves (see [`plain_sales`]); `idx` is the sale's
/// place in the batch, `at` its time, and the last three which click-based fraud rules
/// its program has on ([`rule_sql::CLICK_RULE_COLUMNS`]).
pub const SALE_KEY_COLUMNS: &[&str] = &[
    "idx",
    "program_id",
    "customer_key",
    "click_id",
    "transaction_id",
    "at",
    "check_duplicate_ip",
    "check_partner_ip",
    "check_fast_conversion",
];

/// The values of a sale's [`rule_sql::CLICK_RULE_COLUMNS`]: 1 for a rule its program has
/// on, 0 for one that is off.
pub fn click_rule_flags(s: &NewSale) -> [Value<'static>; 3] {
    [Rule::DuplicateIp, Rule::PartnerIp, Rule::FastConversion]
        .map(|r| Value::Int(i64::from(s.program.fraud_rules.is_on(r))))
}

/// The two statements of a batch's plain sales, each the engine's own
/// ([`SetStatements::plain_sales_query`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SalesStep {
    /// Per sale of [`SALE_KEY_COLUMNS`], its customer in the sale's program, that
    /// customer's partner-program record if the partner is approved, and whether the
    /// transaction id is recorded
    /// already: a [`FoundSale`] per sale whose customer is in the program and for which
    /// no fraud rule that is on may hold.
    Resolve,
    /// The sale events of resolved sales ([`SALE_COLUMNS`]), their commissions and the
    /// customers' conversion: a [`RecordedSale`] per sale.
    Record,
}

pub use super::rules::SALE_CUSTOMER_ID;

/// The query that resolves `n` plain sales ([`SalesStep::Resolve`]): per sale (by `idx`),
/// its customer in the sale's program, that customer's partner-program record if the
/// partner is approved (the flow of a sale of another partner decides its commission),
/// and whether the transaction id is already recorded, with the IP of the customer's
/// latest click. Sales whose customer is not in the program, or for which a fraud rule
/// that is on may hold ([`NO_SELF_REFERRAL`], [`NO_DISPOSABLE_EMAIL`],
/// [`rule_sql::no_click_rule`]), have no row. Each engine keeps the text per row count
/// ([`rows::sized`]).
pub fn resolve_sales_sql<DB: Engine>(n: usize) -> String {
    format!(
        "{} SELECT rows.idx, c.id AS customer_id, c.click_id, c.customer_key, c.partner_id, \
         c.first_purchase_date, pp.id AS pp_id, \
         EXISTS (SELECT 1 FROM affiliate_sale_events s \
         WHERE s.processor_event_id = rows.transaction_id) AS recorded, e.ip, \
         g.id AS group_id, g.version AS group_version, g.rewards, \
         pp.total_sales AS partner_sales, pp.total_revenue_cents AS partner_revenue, \
         UPPER(e.geo_country) AS country \
         FROM rows JOIN customers c ON c.id = {SALE_CUSTOMER_ID} \
         LEFT JOIN partner_programs pp ON {APPROVED_PARTNER_RECORD} \
         LEFT JOIN partner_groups g ON g.id = pp.group_id \
         LEFT JOIN partners pa ON pa.id = c.partner_id \
         {} \
         WHERE {NO_SELF_REFERRAL} AND {NO_DISPOSABLE_EMAIL} AND {}",
        rows::cte::<DB>(n, SALE_KEY_COLUMNS),
        rule_sql::latest_click::<DB>("c.id"),
        rule_sql::no_click_rule("rows."),
    )
}

/// A row of the statement that resolves plain sales ([`SalesStep::Resolve`]): the sale's
/// place in its batch; its customer; the partner's record in the sale's program (when the
/// partner is approved) with its group's rewards and its counters; whether the sale's
/// transaction id is recorded already; and the IP and country of the customer's latest
/// click.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct FoundSale {
    pub idx: i64,
    pub customer_id: i64,
    pub click_id: String,
    pub customer_key: Option<String>,
    pub partner_id: Option<i64>,
    pub first_purchase_date: Option<i64>,
    pub pp_id: Option<i64>,
    pub recorded: bool,
    pub ip: Option<String>,
    pub group_id: Option<i64>,
    pub group_version: Option<i64>,
    pub rewards: Option<String>,
    pub partner_sales: Option<i64>,
    pub partner_revenue: Option<i64>,
    pub country: Option<String>,
}

/// A row of the statement that records plain sales ([`SalesStep::Record`]):
/// the sale's place in its batch, its id and its commission's.
pub type RecordedSale = (i64, i64, Option<i64>);

/// The columns of the resolved sales a batch records (see [`plain_sales`]).
pub const SALE_COLUMNS: &[&str] = &[
    "idx",
    "program_id",
    "customer_id",
    "partner_id",
    "click_id",
    "customer_key",
    "transaction_id",
    "amount_cents",
    "currency",
    "sale_type",
    "product_id",
    "metadata",
    "at",
    "converted_amount_cents",
    "exchange_rate",
    "rate_date",
    "commission",
    "partner_program_id",
    "group_id",
    "description",
    "program_currency",
];

/// Of [`SALE_COLUMNS`], those a sale event's row needs: what the sale was sent with, and
/// for a sale in another currency its conversion.
pub const SALE_EVENT_COLUMNS: &[&str] = SALE_COLUMNS.split_at(16).0;

/// A sale's conversion as columns of [`SALE_COLUMNS`]: its converted amount, rate and
/// rate date; NULLs for a sale in its program's currency.
pub fn conversion_values(s: &NewSale) -> [Value<'_>; 3] {
    match &s.conversion {
        SaleConversion::Converted {
            amount_cents,
            rate,
            rate_date,
        } => [
            Value::MaybeInt(Some(*amount_cents)),
            Value::Text(Some(rate)),
            Value::Text(Some(rate_date)),
        ],
        _ => [Value::MaybeInt(None), Value::Text(None), Value::Text(None)],
    }
}

/// A plain sale resolved and its reward decided ([`decide_plain_sales`]): what recording
/// it writes.
#[derive(Debug, Clone)]
pub struct Decided {
    /// The sale's place in its batch.
    pub i: usize,
    pub customer_id: i64,
    pub click_id: String,
    pub customer_key: Option<String>,
    pub partner_id: i64,
    pub partner_program_id: i64,
    /// Whether it is the customer's first purchase.
    pub converts: bool,
    pub group_id: i64,
    pub group_version: i64,
    pub commission_cents: i64,
    pub description: String,
}

/// Resolves a batch's plain sales ([`NewSale::is_plain`]) in the transaction open on
/// `conn`, or on a connection no other process writes through, and decides the reward of
/// each that resolves plainly: its customer found in the program, with a partner and its
/// partner-program record, no fraud rule that is on that may hold, a transaction id not
/// yet recorded nor used by an earlier sale of the batch, a customer no earlier sale of
/// the batch names, for `duplicate_ip` no earlier converting sale of the batch from the
/// same partner and IP, and a sale reward in its partner's group. The reward is
/// [`rewards::sale_reward`] of the group's sale reward, fed the partner's counters as the
/// transaction reads them plus `deltas` and the batch's earlier sales. Where several
/// processes share the database ([`Engine::ROW_LOCK`]), the records of partners whose
/// reward reads their totals are locked first, in id order, and their counters read again.
/// The sales left out are left to their own jobs, which give them their exact answer.
pub async fn decide_plain_sales<DB: Engine>(
    conn: &mut DB::Connection,
    deltas: &Deltas,
    sales: &[&NewSale],
    cache: &RewardsCache,
) -> StoreResult<Vec<Decided>> {
    use Value::{Int, Text};
    let mut keys = Rows::new(SALE_KEY_COLUMNS);
    for (i, s) in sales.iter().enumerate() {
        let [dup, partner, fast] = click_rule_flags(s);
        keys.push(&[
            place(i),
            Int(s.program.id),
            Text(s.customer_key.as_deref()),
            Text(s.click_id.as_deref()),
            Text(Some(&s.transaction_id)),
            Int(s.at),
            dup,
            partner,
            fast,
        ]);
    }
    let mut found: Vec<Option<FoundSale>> = vec![None; sales.len()];
    for (n, chunk) in keys.chunks() {
        for row in run::<DB, FoundSale>(conn, SalesStep::Resolve, &keys, n, chunk).await? {
            if let Some(slot) = usize::try_from(row.idx).ok().and_then(|i| found.get_mut(i)) {
                *slot = Some(row);
            }
        }
    }
    let mut customers = HashSet::new();
    let mut transactions = HashSet::new();
    // The resolving statement applied `duplicate_ip` to the conversions recorded before
    // this batch, not to those its own earlier sales record (their IPs are written by the
    // recording statement, after every sale is resolved). So a sale whose program has the
    // rule on is taken only when no earlier sale taken here converts from the same IP
    // under the same partner; otherwise it is left to its own job, which runs after the
    // recording statement in the same transaction, sees that conversion and applies the
    // rule. With that, the sales taken here come out as if recorded one by one in batch
    // order: a conversion's IP is the only thing a sale writes that another sale's rules
    // read (partner sign-ins are not written by sales, and the batch's new clicks are in
    // before its sales are resolved).
    let mut converted_from: HashSet<(i64, String)> = HashSet::new();
    // A sale of a program with a live bounty moves the bounty's counts, which only its
    // own flow writes: it is left to its job.
    let bountied: HashSet<i64> =
        stmt::<DB>("SELECT DISTINCT program_id FROM bounties WHERE NOT archived")
            .scalar_all(&mut *conn)
            .await?
            .into_iter()
            .collect();
    let mut taken = Vec::new();
    for (i, (s, row)) in sales.iter().zip(found).enumerate() {
        let Some(row) = row else { continue };
        if bountied.contains(&s.program.id) {
            continue;
        }
        let (Some(_), Some(_), Some(group_id), Some(version), Some(text), false) = (
            row.partner_id,
            row.pp_id,
            row.group_id,
            row.group_version,
            row.rewards.as_deref(),
            row.recorded,
        ) else {
            continue;
        };
        let rewards = cache.get(group_id, version, text)?;
        if rewards.sale.is_none() || !customers.insert(row.customer_id) {
            continue;
        }
        if !transactions.insert(s.transaction_id.clone()) {
            continue;
        }
        if let (Some(ip), Some(partner_id)) = (row.ip.clone(), row.partner_id) {
            if s.program.fraud_rules.is_on(Rule::DuplicateIp)
                && converted_from.contains(&(partner_id, ip.clone()))
            {
                continue;
            }
            if row.first_purchase_date.is_none() {
                converted_from.insert((partner_id, ip));
            }
        }
        taken.push((i, row, rewards));
    }
    let locked = lock_partner_totals::<DB>(conn, &taken).await?;
    // The partners' totals before each sale: their counters, what the batch added before
    // it (`deltas`), and the sales decided here before it.
    let mut totals: HashMap<(i64, i64), (i64, i64)> = HashMap::new();
    let mut decided = Vec::with_capacity(taken.len());
    for (i, row, rewards) in taken {
        let s = sales[i];
        let (Some(partner_id), Some(pp_id)) = (row.partner_id, row.pp_id) else {
            continue;
        };
        let key = (partner_id, s.program.id);
        let (sales_before, revenue_before) = *totals.entry(key).or_insert_with(|| {
            let (stored_sales, stored_revenue) = locked.get(&pp_id).copied().unwrap_or((
                row.partner_sales.unwrap_or(0),
                row.partner_revenue.unwrap_or(0),
            ));
            let (pending_sales, pending_revenue) = deltas.partner_pending(partner_id, s.program.id);
            (
                stored_sales.saturating_add(pending_sales),
                stored_revenue.saturating_add(pending_revenue),
            )
        });
        let facts = SaleFacts {
            amount_cents: s.program_amount(),
            product_id: s.product_id.as_deref(),
            recurring: false,
            customer_country: row.country.as_deref(),
            partner_sales: sales_before,
            partner_revenue_cents: revenue_before,
            first_sale_at: None,
            at: s.at,
        };
        let SaleReward::Earns(earned) =
            rewards::sale_reward(rewards.sale.as_ref(), &facts, &s.program.currency)
        else {
            continue;
        };
        totals.insert(
            key,
            (
                sales_before.saturating_add(1),
                revenue_before.saturating_add(s.program_amount()),
            ),
        );
        decided.push(Decided {
            i,
            customer_id: row.customer_id,
            click_id: row.click_id,
            customer_key: s.customer_key.clone().or(row.customer_key),
            partner_id,
            partner_program_id: pp_id,
            converts: row.first_purchase_date.is_none(),
            group_id: row.group_id.unwrap_or_default(),
            group_version: row.group_version.unwrap_or_default(),
            commission_cents: earned.amount_cents,
            description: earned.description,
        });
    }
    Ok(decided)
}

/// Where several processes share the database, locks the partner-program records of the
/// `taken` sales whose reward reads the partner's totals, in id order, and reads their
/// counters again: `record id → (sales, revenue in minor units)`. Nothing on SQLite, whose
/// one writer is this connection.
async fn lock_partner_totals<DB: Engine>(
    conn: &mut DB::Connection,
    taken: &[(usize, FoundSale, std::sync::Arc<rewards::Rewards>)],
) -> StoreResult<HashMap<i64, (i64, i64)>> {
    let mut ids: Vec<i64> = taken
        .iter()
        .filter(|(_, _, r)| r.sale.as_ref().is_some_and(|s| s.reads_partner_totals()))
        .filter_map(|(_, row, _)| row.pp_id)
        .collect();
    if DB::ROW_LOCK.is_empty() || ids.is_empty() {
        return Ok(HashMap::new());
    }
    ids.sort_unstable();
    ids.dedup();
    let mut locked = HashMap::with_capacity(ids.len());
    for id in ids {
        let sql = format!(
            "SELECT total_sales, total_revenue_cents FROM partner_programs WHERE id = $1 {}",
            DB::ROW_LOCK
        );
        let row = super::engine::stmt::<DB>(&sql)
            .bind(id)
            .fetch_one(&mut *conn)
            .await?;
        locked.insert(id, (row.try_get_at(0)?, row.try_get_at(1)?));
    }
    Ok(locked)
}

/// The rows of [`SALE_COLUMNS`] of decided sales.
pub fn decided_rows<'a>(sales: &[&'a NewSale], decided: &'a [Decided]) -> Rows<'a> {
    use Value::{Int, Text};
    let mut rows = Rows::new(SALE_COLUMNS);
    for d in decided {
        let s = sales[d.i];
        let [converted, rate, rate_date] = conversion_values(s);
        rows.push(&[
            place(d.i),
            Int(s.program.id),
            Int(d.customer_id),
            Int(d.partner_id),
            Text(Some(&d.click_id)),
            Text(d.customer_key.as_deref()),
            Text(Some(&s.transaction_id)),
            Int(s.amount_cents),
            Text(Some(&s.currency)),
            Text(Some(&s.sale_type)),
            Text(s.product_id.as_deref()),
            Text(s.metadata.as_deref()),
            Int(s.at),
            converted,
            rate,
            rate_date,
            Int(d.commission_cents),
            Int(d.partner_program_id),
            Int(d.group_id),
            Text(Some(&d.description)),
            Text(Some(&s.program.currency)),
        ]);
    }
    rows
}

/// The plain sales of a batch at once, in the transaction open on `conn`: those
/// [`decide_plain_sales`] decides are recorded by one statement per
/// [`MAX_SET_ROWS`](crate::committer::MAX_SET_ROWS) sales, their counters added to
/// `counted` (`before`: what the batch added so far). Returns an outcome per sale, `None`
/// for those left to their own job. Should it fail, the caller undoes what it wrote.
pub async fn plain_sales<DB: Engine>(
    conn: &mut DB::Connection,
    before: &Deltas,
    counted: &mut Deltas,
    sales: &[&NewSale],
    cache: &RewardsCache,
) -> StoreResult<Vec<Option<SaleOutcome>>> {
    let decided = decide_plain_sales::<DB>(conn, before, sales, cache).await?;
    let rows = decided_rows(sales, &decided);
    let mut outcomes: Vec<Option<SaleOutcome>> = vec![None; sales.len()];
    for (n, chunk) in rows.chunks() {
        let recorded = run::<DB, RecordedSale>(conn, SalesStep::Record, &rows, n, chunk).await?;
        for (i, sale_id, commission_id) in recorded {
            if let Some(slot) = usize::try_from(i).ok().and_then(|i| outcomes.get_mut(i)) {
                *slot = Some(SaleOutcome {
                    sale_id,
                    commission_id,
                    unearned: None,
                });
            }
        }
    }
    for d in &decided {
        if outcomes[d.i].is_none() {
            return Err(StoreError::Other(anyhow::anyhow!(
                "batched sale {} was not recorded",
                d.i
            )));
        }
        let s = sales[d.i];
        counted.count_sale(SaleFigures {
            program_id: s.program.id,
            partner_id: d.partner_id,
            at: s.at,
            amount_cents: s.program_amount(),
            commission_cents: d.commission_cents,
            converts: d.converts,
        });
    }
    webhooks::record_sales::<DB>(conn, sales, &outcomes).await?;
    Ok(outcomes)
}

/// Runs the statement of `step` for the `n` rows of `chunk`, a chunk of `rows`; its rows
/// as `T`s.
async fn run<DB: Engine + ReadRow<T>, T>(
    conn: &mut DB::Connection,
    step: SalesStep,
    rows: &Rows<'_>,
    n: usize,
    chunk: &[Value<'_>],
) -> StoreResult<Vec<T>> {
    let query = DB::plain_sales_query(step, n, rows, chunk);
    let found = DB::fetch_all(query, conn).await?;
    Ok(found
        .iter()
        .map(DB::read_row)
        .collect::<sqlx::Result<_>>()?)
}

/// A batched sale's place in its batch, as the `idx` of its row.
pub fn place(i: usize) -> Value<'static> {
    Value::Int(i64::try_from(i).unwrap_or(i64::MAX))
}
