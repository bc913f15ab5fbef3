//! The SQL copies of domain rules, for the statements that apply a rule to many rows at
//! once (balances, payouts, the approval job, the integrity check, the set-based sale
//! batches). The rule itself is the domain function each fragment names; the tests at the
//! end run both on the same cases, on SQLite and on PostgreSQL, and fail when they
//! disagree. A statement that needs one of these rules takes it from here, never writes
//! it out again.
//!
//! Fragments are built from the names the caller's statement uses: a table alias with its
//! dot (`"c."`, or `""` for an unaliased table) and the SQL of the values (`"$1"`, a
//! column, an expression).

use super::engine::Engine;
use reftrack_domain::fraud::{self, Verdict};
use reftrack_domain::lifecycle;
use reftrack_domain::time::DAY_MS;

/// A program's hold in milliseconds, from its row `p`:
/// [`lifecycle::hold_ms`](reftrack_domain::lifecycle::hold_ms).
pub fn hold_ms(p: &str) -> String {
    format!("({p}commission_hold_days * {DAY_MS})")
}

/// The hold in milliseconds of a commission whose group's own hold is `group_days` days
/// (NULL: none), in a program whose hold is `program_ms`:
/// [`lifecycle::commission_hold_ms`](reftrack_domain::lifecycle::commission_hold_ms).
pub fn commission_hold(group_days: &str, program_ms: &str) -> String {
    format!("COALESCE({group_days} * {DAY_MS}, {program_ms})")
}

/// The own hold in days of commission `c`'s group, NULL when it has none (or the
/// commission has no group): the `group_days` of [`commission_hold`].
pub fn group_hold_days(c: &str) -> String {
    format!("(SELECT g.commission_hold_days FROM partner_groups g WHERE g.id = {c}group_id)")
}

/// The hold of commission `c` (`"commissions."` for an unaliased table) in its program,
/// whose hold is `program_ms`: its group's own hold, else the program's.
pub fn hold_of(c: &str, program_ms: &str) -> String {
    commission_hold(&group_hold_days(c), program_ms)
}

/// The day number of the timestamp `at` (milliseconds), which
/// [`time::day_of`](reftrack_domain::time::day_of) names: days since the epoch, UTC.
pub fn day_number(at: &str) -> String {
    format!("({at} / {DAY_MS})")
}

/// Whether a commission `c` recorded at `c.created_at` is past a hold of `hold_ms` at
/// `now`: [`lifecycle::hold_passed`](reftrack_domain::lifecycle::hold_passed). Written
/// as a bound on `created_at`, which an index can serve.
fn hold_passed(c: &str, hold_ms: &str, now: &str) -> String {
    format!("{c}created_at <= {now} - {hold_ms}")
}

/// Whether commission `c` moves on by itself once its hold passes:
/// [`lifecycle::approves_by_itself`](reftrack_domain::lifecycle::approves_by_itself).
fn approves_by_itself(c: &str) -> String {
    format!("{c}status = 'pending' AND NOT {c}manual_approval")
}

/// Whether the hold has approved commission `c` by `now`:
/// [`lifecycle::approved_by_hold`](reftrack_domain::lifecycle::approved_by_hold).
pub fn approved_by_hold(c: &str, hold_ms: &str, now: &str) -> String {
    format!(
        "{} AND {}",
        approves_by_itself(c),
        hold_passed(c, hold_ms, now)
    )
}

/// Commission `c`'s status at `now`:
/// [`lifecycle::status_at`](reftrack_domain::lifecycle::status_at).
pub fn status_at(c: &str, hold_ms: &str, now: &str) -> String {
    format!(
        "(CASE WHEN {} THEN 'approved' ELSE {c}status END)",
        approved_by_hold(c, hold_ms, now)
    )
}

/// Commission `c`'s approval time at `now`:
/// [`lifecycle::approved_at`](reftrack_domain::lifecycle::approved_at).
pub fn approved_at(c: &str, hold_ms: &str, now: &str) -> String {
    format!(
        "(CASE WHEN {} THEN {c}created_at + {hold_ms} ELSE {c}approved_at END)",
        approved_by_hold(c, hold_ms, now)
    )
}

/// Whether a new payout may take commission `c` at `now`:
/// [`lifecycle::payout_may_take`](reftrack_domain::lifecycle::payout_may_take).
pub fn payout_may_take(c: &str, hold_ms: &str, now: &str) -> String {
    format!(
        "({c}payout_id IS NULL AND ({c}status = 'approved' OR ({})))",
        approved_by_hold(c, hold_ms, now)
    )
}

/// Whether a new payout pays a partner whose standing in the program is `standing`, whose
/// payout email is `payout_email` and who has `due` due, with the program's minimum `min`:
/// [`lifecycle::payout_pays`](reftrack_domain::lifecycle::payout_pays).
pub fn payout_pays(standing: &str, payout_email: &str, due: &str, min: &str) -> String {
    format!(
        "({standing} = 'approved' AND {payout_email} IS NOT NULL AND {due} >= {min} \
         AND {due} > 0)"
    )
}

/// The status and `manual_approval` of a new commission of a plain sale (no rule holds),
/// as SQL values: what [`lifecycle::new_commission`](reftrack_domain::lifecycle::new_commission)
/// stores for a clear verdict, written from it.
pub fn new_plain_commission() -> (String, &'static str) {
    let state = lifecycle::new_commission(lifecycle::approval(&Verdict::clear()));
    (
        format!("'{}'", state.status.as_str()),
        if state.manual_approval {
            "TRUE"
        } else {
            "FALSE"
        },
    )
}

/// The IPs of the customers who convert with the sales of `rows` (columns `partner_id`,
/// `customer_id`, `at`), as the two halves of an `INSERT … SELECT` around its `FROM rows`:
/// for each customer that had not bought yet (a conversion), the IP of its latest click,
/// when it has one, under the sale's partner. Run before the customers' conversion is
/// written (PostgreSQL's CTEs see the state before the statement anyway).
/// `duplicate_ip` reads them through their index.
pub fn conversion_ips<DB: Engine>() -> (&'static str, String) {
    (
        "INSERT INTO conversion_ips (partner_id, customer_id, ip, converted_at) \
        SELECT rows.partner_id, rows.customer_id, e.ip, rows.at",
        format!(
            "JOIN customers k ON k.id = rows.customer_id AND k.first_purchase_date IS NULL \
            {} WHERE e.ip IS NOT NULL",
            latest_click::<DB>("rows.customer_id")
        ),
    )
}

/// Whether commission `c` is held for review: a fraud rule flagged it and no owner has
/// approved or rejected it yet:
/// [`lifecycle::held_for_review`](reftrack_domain::lifecycle::held_for_review).
pub fn held_for_review(c: &str) -> String {
    format!("({c}status = 'pending' AND {c}manual_approval AND NOT {c}awaiting_rate)")
}

/// Whether the stored lead email of a sale's customer `c` shows that `disposable_email`
/// cannot hold for it: no email, or one known not to be at a disposable-mail domain
/// ([`fraud::is_disposable`](reftrack_domain::fraud::is_disposable), applied when the
/// email was stored). A customer that fails it (a disposable email, or one stored before
/// the rule) is left to its sale's own flow, which applies the rule. So this never clears
/// a disposable email.
pub const NO_DISPOSABLE_EMAIL: &str = "(c.email IS NULL OR c.email_disposable = FALSE)";

/// The customer of a sale in its program, as an SQL expression over the sale's row in
/// `rows`: [`attribution::sale_customer`](reftrack_domain::attribution::sale_customer), by
/// customer key, then by click id, in the sale's program.
pub const SALE_CUSTOMER_ID: &str = "COALESCE(\
    (SELECT k.id FROM customers k WHERE k.program_id = rows.program_id \
    AND k.customer_key = rows.customer_key), \
    (SELECT k.id FROM customers k WHERE k.click_id = rows.click_id \
    AND k.program_id = rows.program_id))";

/// SQLite's counters of the plain sales its one-round-trip batch recorded (the rows of
/// `temp.sale_batch`, with their figures and day worked out in Rust): what
/// [`Deltas::count_sale`](reftrack_domain::figures::Deltas::count_sale) adds for each sale,
/// summed per partner-program record, per program day and per partner day. The batch
/// learns which sales it records only inside its one query, so it cannot hand the
/// counters over as [`Deltas`](reftrack_domain::figures::Deltas) as every other path does.
pub const SQLITE_SALE_BATCH_COUNTERS: &str = "\
    UPDATE partner_programs SET total_sales = partner_programs.total_sales + d.sales, \
    total_revenue_cents = partner_programs.total_revenue_cents + d.revenue, \
    total_commission_cents = partner_programs.total_commission_cents + d.commission \
    FROM (SELECT partner_program_id, COUNT(*) AS sales, SUM(revenue_figure) AS revenue, \
    SUM(commission_figure) AS commission FROM temp.sale_batch \
    GROUP BY partner_program_id) d WHERE partner_programs.id = d.partner_program_id; \
    INSERT INTO daily_rollups (program_id, day, clicks, leads, conversions, revenue_cents, \
    sales, commission_cents, partners, lead_events, sale_events) \
    SELECT program_id, day, 0, 0, SUM(converts), SUM(revenue_figure), COUNT(*), \
    SUM(commission_figure), 0, 0, COUNT(*) FROM temp.sale_batch WHERE true \
    GROUP BY program_id, day ON CONFLICT (program_id, day) DO UPDATE SET \
    conversions = daily_rollups.conversions + excluded.conversions, \
    revenue_cents = daily_rollups.revenue_cents + excluded.revenue_cents, \
    sales = daily_rollups.sales + excluded.sales, \
    commission_cents = daily_rollups.commission_cents + excluded.commission_cents, \
    sale_events = daily_rollups.sale_events + excluded.sale_events; \
    INSERT INTO partner_daily_rollups (program_id, partner_id, day, clicks, leads, \
    conversions, revenue_cents, sales, commission_cents) \
    SELECT program_id, partner_id, day, 0, 0, SUM(converts), SUM(revenue_figure), \
    COUNT(*), SUM(commission_figure) FROM temp.sale_batch WHERE true \
    GROUP BY program_id, partner_id, day ON CONFLICT (program_id, partner_id, day) \
    DO UPDATE SET conversions = partner_daily_rollups.conversions + excluded.conversions, \
    revenue_cents = partner_daily_rollups.revenue_cents + excluded.revenue_cents, \
    sales = partner_daily_rollups.sales + excluded.sales, \
    commission_cents = partner_daily_rollups.commission_cents + excluded.commission_cents";

/// Whether the emails of a sale's customer `c` and of its partner `pa` (`LEFT JOIN`ed)
/// show, by their stored self-referral keys, that the sale is no self-referral. A sale
/// that fails it (the keys match, or an email predates its key) is left to its own flow,
/// which applies the rule
/// ([`self_referral::is_self_referral`](reftrack_domain::self_referral::is_self_referral))
/// and flags it. So this never clears a self-referral: whenever it holds, the rule finds
/// none.
pub const NO_SELF_REFERRAL: &str = "(c.email IS NULL OR (c.email_key IS NOT NULL \
    AND (pa.email IS NULL OR (pa.email_key IS NOT NULL AND pa.email_key <> c.email_key)) \
    AND (pa.account_email IS NULL OR (pa.account_email_key IS NOT NULL \
    AND pa.account_email_key <> c.email_key))))";

/// The join of the latest click of the customer whose id is `customer_id`, as `e`
/// (columns `id`, `ip`, `click_timestamp`, `geo_country`; all NULL when it has none): the click the
/// fraud rules read, as the sale's flow reads it
/// ([`FraudTx::customer_click`](crate::fraud::FraudTx::customer_click)), through the
/// clicks' index on the customer. Each engine writes it its own way
/// ([`Engine::latest_click_join`]).
pub fn latest_click<DB: Engine>(customer_id: &str) -> String {
    DB::latest_click_join(customer_id)
}

/// Whether the latest click `e` of a sale's customer (`LEFT JOIN`ed on
/// [`latest_click`], all NULL when there is none) shows that `fast_conversion` cannot
/// hold for a sale at `at`: no click, or one at least
/// [`FAST_CONVERSION_MS`](reftrack_domain::fraud::FAST_CONVERSION_MS) before the sale
/// ([`fraud::holds`](reftrack_domain::fraud::holds)). Written as a bound on the click's
/// time, so that no subtraction of two times can overflow.
pub fn no_fast_conversion(at: &str) -> String {
    format!(
        "(e.id IS NULL OR e.click_timestamp <= {at} - {})",
        fraud::FAST_CONVERSION_MS
    )
}

/// Whether `duplicate_ip` certainly does not hold for a sale at `at` of customer `c`
/// (its partner `c.partner_id`) whose latest click is `e`: the click has no IP, or no
/// other customer of the partner converted from that IP since
/// [`LOOKBACK_MS`](reftrack_domain::fraud::LOOKBACK_MS) before the sale. The same index
/// lookup (`conversion_ips` by partner, IP and time) as
/// [`FraudTx::ip_converted_before`](crate::fraud::FraudTx::ip_converted_before), which
/// gathers the rule's fact for the sale's flow. It sees only what the statement's
/// snapshot holds: conversions of earlier sales of the same batch are the caller's to
/// mind.
pub fn no_duplicate_ip(at: &str) -> String {
    format!(
        "(e.ip IS NULL OR NOT EXISTS (SELECT 1 FROM conversion_ips x \
         WHERE x.partner_id = c.partner_id AND x.ip = e.ip \
         AND x.converted_at >= {at} - {} AND x.customer_id <> c.id))",
        fraud::LOOKBACK_MS
    )
}

/// Whether `partner_ip` certainly does not hold for a sale at `at` of customer `c` whose
/// latest click is `e`: the click has no IP, or the customer's partner did not sign in
/// from it since [`LOOKBACK_MS`](reftrack_domain::fraud::LOOKBACK_MS) before the sale.
/// The same primary-key lookup of `partner_sign_in_ips` as
/// [`FraudTx::partner_signed_in_from`](crate::fraud::FraudTx::partner_signed_in_from).
pub fn no_partner_ip(at: &str) -> String {
    format!(
        "(e.ip IS NULL OR NOT EXISTS (SELECT 1 FROM partner_sign_in_ips y \
         WHERE y.partner_id = c.partner_id AND y.ip = e.ip AND y.signed_in_at >= {at} - {}))",
        fraud::LOOKBACK_MS
    )
}

/// The columns of a batched sale's row that say which click-based rules its program has
/// on (1) or off (0), in this order: `duplicate_ip`, `partner_ip`, `fast_conversion`.
pub const CLICK_RULE_COLUMNS: [&str; 3] = [
    "check_duplicate_ip",
    "check_partner_ip",
    "check_fast_conversion",
];

/// Whether none of the click-based rules that are on for the batched sale of row `r`
/// (its [`CLICK_RULE_COLUMNS`] and `at`) can hold for it, with its customer `c` and that
/// customer's latest click `e`: [`no_duplicate_ip`], [`no_partner_ip`] and
/// [`no_fast_conversion`], each applied only when its rule is on. A sale that fails it is
/// left to its own flow, which applies the rules; so this never clears a sale a rule that
/// is on holds for.
pub fn no_click_rule(r: &str) -> String {
    let at = format!("{r}at");
    let [dup, partner, fast] = CLICK_RULE_COLUMNS;
    format!(
        "({r}{dup} = 0 OR {}) AND ({r}{partner} = 0 OR {}) AND ({r}{fast} = 0 OR {})",
        no_duplicate_ip(&at),
        no_partner_ip(&at),
        no_fast_conversion(&at)
    )
}

/// The join of a sale's customer `c` to its partner's record `pp` in the customer's
/// program, when that partner earns there
/// ([`commission::partner_earns`](reftrack_domain::commission::partner_earns)). A sale of
/// another partner is left to its own flow, which applies the rule.
pub const APPROVED_PARTNER_RECORD: &str = "pp.partner_id = c.partner_id \
    AND pp.program_id = c.program_id AND pp.status = 'approved'";

#[cfg(test)]
mod tests;

/// A sale `s`'s revenue net of its refunds in its program's currency, as the write path
/// counts it: its amount less refunds in the program's currency; a converted sale's
/// converted amount less [`currency::refunded_share`](reftrack_domain::currency::refunded_share)
/// of it; nothing while it waits for a rate.
pub const SALE_NET_REVENUE: &str = "(CASE WHEN s.awaiting_rate THEN 0 \
    WHEN s.converted_amount_cents IS NULL THEN s.amount_cents - s.refunded_cents \
    WHEN s.refunded_cents <= 0 OR s.amount_cents <= 0 THEN s.converted_amount_cents \
    WHEN s.refunded_cents >= s.amount_cents THEN 0 \
    ELSE s.converted_amount_cents - (s.converted_amount_cents * s.refunded_cents * 2 \
    + s.amount_cents) / (2 * s.amount_cents) END)";
