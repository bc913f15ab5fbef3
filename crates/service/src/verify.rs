//! `reftrack verify`: recomputes every derived figure (daily rollups of programs and of
//! partners, partner-program totals, link click counters) from the raw events, compares it with what is stored,
//! checks the cross-record invariants, and reports the differences as JSON.
//!
//! The write path keeps figures in the same transaction as their events, so on a
//! healthy database the report is empty; any entry means drift (a bug, a manual edit,
//! a restore gone wrong) and makes the command exit non-zero.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use reftrack_domain::figures::{LinkDelta, PartnerDayDelta, PartnerDelta, RollupDelta};
use reftrack_store::integrity::{Figures, Integrity, RawCounts, Violation};
use reftrack_store::{Backend, Store};

/// One derived figure that differs from its recomputation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drift {
    /// `daily_rollups`, `partner_daily_rollups`, `partner_programs` or `referral_links`.
    pub table: &'static str,
    /// The row: `{program_id, day}`, `{program_id, partner_id, day}`,
    /// `{partner_id, program_id}` or `{link_id}`.
    pub key: Value,
    /// The column.
    pub field: &'static str,
    /// Its stored value.
    pub stored: i64,
    /// Its value recomputed from the raw events.
    pub recomputed: i64,
}

/// The outcome of a verification.
#[derive(Debug)]
pub struct Report {
    /// The database checked.
    pub backend: Backend,
    /// Raw records checked.
    pub counts: RawCounts,
    /// Rows compared per table: rollups, partner-program records, links.
    pub rows_compared: (usize, usize, usize),
    /// Figures that differ from their recomputation.
    pub drift: Vec<Drift>,
    /// Records that break a cross-record invariant.
    pub violations: Vec<Violation>,
}

impl Report {
    /// Whether nothing drifted and no invariant is broken.
    pub fn ok(&self) -> bool {
        self.drift.is_empty() && self.violations.is_empty()
    }

    /// The report as printed by `reftrack verify`.
    pub fn to_json(&self) -> Value {
        json!({
            "ok": self.ok(),
            "backend": match self.backend {
                Backend::Sqlite => "sqlite",
                Backend::Postgres => "postgres",
            },
            "checked": {
                "click_events": self.counts.clicks,
                "lead_events": self.counts.leads,
                "sale_events": self.counts.sales,
                "commissions": self.counts.commissions,
                "refunded_sales": self.counts.refunded_sales,
                "daily_rollups": self.rows_compared.0,
                "partner_programs": self.rows_compared.1,
                "referral_links": self.rows_compared.2,
            },
            "drift": self.drift.iter().map(|d| json!({
                "table": d.table,
                "key": d.key,
                "field": d.field,
                "stored": d.stored,
                "recomputed": d.recomputed,
            })).collect::<Vec<_>>(),
            "violations": self.violations.iter().map(|v| json!({
                "check": v.check,
                v.id_label: v.id,
                v.key_label: v.key,
            })).collect::<Vec<_>>(),
        })
    }
}

/// Opens the database named by `url` (a SQLite file must exist) and verifies it.
pub async fn run(url: &str) -> anyhow::Result<Report> {
    let store = reftrack_store::open_existing(url).await?;
    let report = check(&*store).await;
    store.close().await;
    Ok(report?)
}

/// Verifies a store.
pub async fn check(store: &dyn Store) -> reftrack_store::StoreResult<Report> {
    let Integrity {
        stored,
        recomputed,
        violations,
        counts,
    } = store.integrity().await?;
    Ok(Report {
        backend: store.backend(),
        counts,
        rows_compared: (
            stored.rollups.len(),
            stored.partners.len(),
            stored.links.len(),
        ),
        drift: compare(&stored, &recomputed),
        violations,
    })
}

/// `names` paired with `values`, a counter struct's values in the order of its fields.
fn named<const N: usize>(names: &[&'static str], values: [i64; N]) -> [(&'static str, i64); N] {
    std::array::from_fn(|i| (names[i], values[i]))
}

fn rollup_fields(d: &RollupDelta) -> [(&'static str, i64); RollupDelta::LEN] {
    named(RollupDelta::NAMES, d.values())
}

fn partner_fields(d: &PartnerDelta) -> [(&'static str, i64); PartnerDelta::LEN] {
    // The columns of partner_programs that hold them.
    let names = [
        "total_clicks",
        "total_leads",
        "total_sales",
        "total_revenue_cents",
        "total_commission_cents",
    ];
    named(&names, d.values())
}

fn partner_day_fields(d: &PartnerDayDelta) -> [(&'static str, i64); PartnerDayDelta::LEN] {
    named(PartnerDayDelta::NAMES, d.values())
}

fn link_fields(d: &LinkDelta) -> [(&'static str, i64); 2] {
    [("clicks", d.clicks), ("last_clicked", d.last_clicked)]
}

/// Compares two maps field by field; a row missing on one side counts as zeros.
fn diff<K: Ord + Clone, V: Default, const N: usize>(
    table: &'static str,
    stored: &std::collections::BTreeMap<K, V>,
    recomputed: &std::collections::BTreeMap<K, V>,
    fields: fn(&V) -> [(&'static str, i64); N],
    key: fn(&K) -> Value,
    out: &mut Vec<Drift>,
) {
    let zero = V::default();
    let keys: BTreeSet<&K> = stored.keys().chain(recomputed.keys()).collect();
    for k in keys {
        let s = fields(stored.get(k).unwrap_or(&zero));
        let r = fields(recomputed.get(k).unwrap_or(&zero));
        for ((field, stored), (_, recomputed)) in s.into_iter().zip(r) {
            if stored != recomputed {
                out.push(Drift {
                    table,
                    key: key(k),
                    field,
                    stored,
                    recomputed,
                });
            }
        }
    }
}

/// Every figure of `stored` that differs from `recomputed`.
pub fn compare(stored: &Figures, recomputed: &Figures) -> Vec<Drift> {
    let mut out = Vec::new();
    diff(
        "daily_rollups",
        &stored.rollups,
        &recomputed.rollups,
        rollup_fields,
        |(program_id, day)| json!({"program_id": program_id, "day": day}),
        &mut out,
    );
    diff(
        "partner_programs",
        &stored.partners,
        &recomputed.partners,
        partner_fields,
        |(partner_id, program_id)| json!({"partner_id": partner_id, "program_id": program_id}),
        &mut out,
    );
    diff(
        "partner_daily_rollups",
        &stored.partner_days,
        &recomputed.partner_days,
        partner_day_fields,
        |(program_id, partner_id, day)| json!({"program_id": program_id, "partner_id": partner_id, "day": day}),
        &mut out,
    );
    diff(
        "referral_links",
        &stored.links,
        &recomputed.links,
        link_fields,
        |id| json!({"link_id": id}),
        &mut out,
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_figures_have_no_drift() {
        let mut a = Figures::default();
        a.rollup(1, "2026-01-01".into()).clicks = 3;
        a.partner(2, 1).sales = 1;
        a.link_click(5, 100);
        let mut b = Figures::default();
        b.rollup(1, "2026-01-01".into()).clicks = 3;
        b.partner(2, 1).sales = 1;
        b.link_click(5, 100);
        assert!(compare(&a, &b).is_empty());
    }

    #[test]
    fn every_difference_is_named() {
        let mut stored = Figures::default();
        stored.rollup(1, "2026-01-01".into()).clicks = 4;
        stored.rollup(1, "2026-01-03".into()).sales = 0; // an all-zero row matches nothing
        stored.partner(2, 1).commission_cents = 700;
        let mut recomputed = Figures::default();
        recomputed.rollup(1, "2026-01-01".into()).clicks = 3;
        recomputed.rollup(1, "2026-01-02".into()).revenue_cents = 999;
        recomputed.partner(2, 1).commission_cents = 600;
        recomputed.link_click(5, 100);
        let drift = compare(&stored, &recomputed);
        let names: Vec<_> = drift.iter().map(|d| (d.table, d.field)).collect();
        assert_eq!(
            names,
            [
                ("daily_rollups", "clicks"),
                ("daily_rollups", "revenue_cents"),
                ("partner_programs", "total_commission_cents"),
                ("referral_links", "clicks"),
                ("referral_links", "last_clicked"),
            ]
        );
        assert_eq!(drift[0].key, json!({"program_id": 1, "day": "2026-01-01"}));
        assert_eq!((drift[0].stored, drift[0].recomputed), (4, 3));
        assert_eq!((drift[1].stored, drift[1].recomputed), (0, 999));
    }
}
