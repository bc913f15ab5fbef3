//! What the engines' set-based statements of the group committer share: the rows they
//! read (a batch's new clicks, the keys of its plain sales, the resolved sales), and the
//! flow of a batch's plain sales around the two statements each engine writes its own way
//! ([`SetStatements::plain_sales_query`]), and the statement that resolves them, which
//! both write alike.
//!
//! Each writes the same rows and counts the same figures as the flow of the service layer
//! would for each click or sale one by one.

use std::collections::HashSet;

use async_trait::async_trait;
use sqlx::Database;

use super::engine::{Engine, Query, ReadRow};
use super::rows::{self, Rows, Value};
use super::rules::{self as rule_sql, NO_DISPOSABLE_EMAIL};
use super::{webhooks, APPROVED_PARTNER_RECORD, NO_SELF_REFERRAL};
use crate::error::{StoreError, StoreResult};
use crate::model::{NewClick, NewSale, SaleOutcome};
use reftrack_domain::figures::{Deltas, SaleFigures};
use reftrack_domain::fraud::Rule;

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
        "{} SELECT rows.idx, c.id, c.click_id, c.customer_key, c.partner_id, \
         c.first_purchase_date, pp.id, \
         EXISTS (SELECT 1 FROM affiliate_sale_events s \
         WHERE s.processor_event_id = rows.transaction_id), e.ip \
         FROM rows JOIN customers c ON c.id = {SALE_CUSTOMER_ID} \
         LEFT JOIN partner_programs pp ON {APPROVED_PARTNER_RECORD} \
         LEFT JOIN partners pa ON pa.id = c.partner_id \
         {} \
         WHERE {NO_SELF_REFERRAL} AND {NO_DISPOSABLE_EMAIL} AND {}",
        rows::cte::<DB>(n, SALE_KEY_COLUMNS),
        rule_sql::latest_click::<DB>("c.id"),
        rule_sql::no_click_rule("rows."),
    )
}

/// A row of the statement that resolves plain sales ([`SalesStep::Resolve`]):
/// the sale's place in its batch; its customer's id, click id, customer key, partner and
/// first purchase; the partner's record in the sale's program; whether the sale's
/// transaction id is recorded already; and the IP of the customer's latest click.
pub type FoundSale = (
    i64,
    i64,
    String,
    Option<String>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    bool,
    Option<String>,
);

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
    "commission",
    "partner_program_id",
];

/// The plain sales of a batch ([`NewSale::is_plain`]) at once, in the transaction open on
/// `conn`: one query per [`MAX_SET_ROWS`](crate::committer::MAX_SET_ROWS) sales resolves their customers, one records
/// every sale that resolves plainly (its customer found in the program, with a partner
/// and its partner-program record, no fraud rule that is on that may hold, a transaction
/// id not yet recorded nor used by an earlier sale of the batch, a customer no earlier
/// sale of the batch names, and for `duplicate_ip` no earlier converting sale of the
/// batch from the same partner and IP) and adds its counters to `deltas`. Returns an outcome per sale, `None` for those left to their own
/// job, which gives them their exact answer. Should it fail, the caller undoes what it
/// wrote.
pub async fn plain_sales<DB: Engine>(
    conn: &mut DB::Connection,
    deltas: &mut Deltas,
    sales: &[&NewSale],
) -> StoreResult<Vec<Option<SaleOutcome>>> {
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
    let mut found = Vec::with_capacity(sales.len());
    for (n, chunk) in keys.chunks() {
        found.extend(run::<DB, FoundSale>(conn, SalesStep::Resolve, &keys, n, chunk).await?);
    }
    // Per sale: customer id, click id, customer key, first purchase, partner,
    // partner-program record and the IP of the customer's latest click.
    type Resolved = (
        i64,
        String,
        Option<String>,
        Option<i64>,
        i64,
        i64,
        Option<String>,
    );
    let mut resolved: Vec<Option<Resolved>> = vec![None; sales.len()];
    for (i, customer_id, click_id, customer_key, partner_id, first_purchase, pp_id, recorded, ip) in
        found
    {
        let (Some(partner_id), Some(pp_id), false) = (partner_id, pp_id, recorded) else {
            continue;
        };
        if let Some(slot) = usize::try_from(i).ok().and_then(|i| resolved.get_mut(i)) {
            *slot = Some((
                customer_id,
                click_id,
                customer_key,
                first_purchase,
                partner_id,
                pp_id,
                ip,
            ));
        }
    }
    let mut customers = HashSet::new();
    let mut transactions = HashSet::new();
    let mut rows = Rows::new(SALE_COLUMNS);
    let mut taken = Vec::new();
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
    let mut converted_from: HashSet<(i64, &str)> = HashSet::new();
    for (i, (s, found)) in sales.iter().zip(&resolved).enumerate() {
        let Some((customer_id, click_id, customer_key, first_purchase, partner_id, pp_id, ip)) =
            found
        else {
            continue;
        };
        if !customers.insert(*customer_id) || !transactions.insert(s.transaction_id.as_str()) {
            continue;
        }
        let ip = ip.as_deref();
        if let Some(ip) = ip {
            if s.program.fraud_rules.is_on(Rule::DuplicateIp)
                && converted_from.contains(&(*partner_id, ip))
            {
                continue;
            }
            if first_purchase.is_none() {
                converted_from.insert((*partner_id, ip));
            }
        }
        rows.push(&[
            place(i),
            Int(s.program.id),
            Int(*customer_id),
            Int(*partner_id),
            Text(Some(click_id)),
            Text(s.customer_key.as_deref().or(customer_key.as_deref())),
            Text(Some(&s.transaction_id)),
            Int(s.amount_cents),
            Text(Some(&s.currency)),
            Text(Some(&s.sale_type)),
            Text(s.product_id.as_deref()),
            Text(s.metadata.as_deref()),
            Int(s.at),
            Int(s.commission_cents),
            Int(*pp_id),
        ]);
        taken.push((i, *partner_id, first_purchase.is_none()));
    }
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
    for (i, partner_id, converts) in taken {
        if outcomes[i].is_none() {
            return Err(StoreError::Other(anyhow::anyhow!(
                "batched sale {i} was not recorded"
            )));
        }
        let s = sales[i];
        deltas.count_sale(SaleFigures {
            program_id: s.program.id,
            partner_id,
            at: s.at,
            amount_cents: s.amount_cents,
            commission_cents: s.commission_cents,
            currency: &s.currency,
            converts,
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
