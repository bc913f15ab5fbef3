//! Counter and rollup increments, folded per write batch and applied once before the
//! batch commits, in the same transaction as the events they count.

use std::collections::BTreeMap;

/// Increments of one program's figures on one UTC day.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct RollupDelta {
    pub clicks: i64,
    pub leads: i64,
    pub conversions: i64,
    pub revenue_cents: i64,
    pub sales: i64,
    pub commission_cents: i64,
    pub partners: i64,
    pub lead_events: i64,
    pub sale_events: i64,
}

/// Increments of a partner-program record's running totals.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct PartnerDelta {
    pub clicks: i64,
    pub leads: i64,
    pub sales: i64,
    pub revenue_cents: i64,
    pub commission_cents: i64,
}

/// A link's click counter increment and its latest click.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct LinkDelta {
    pub clicks: i64,
    pub last_clicked: i64,
}

/// Everything a batch of writes adds to counters. Ordered maps, so that concurrent
/// batches touch rows in the same order and cannot deadlock on PostgreSQL.
#[derive(Debug, Default)]
pub struct Deltas {
    pub rollups: BTreeMap<(i64, String), RollupDelta>,
    pub partners: BTreeMap<(i64, i64), PartnerDelta>,
    pub links: BTreeMap<i64, LinkDelta>,
}

impl Deltas {
    /// The rollup of `program_id` on `day`, to add to.
    pub fn rollup(&mut self, program_id: i64, day: String) -> &mut RollupDelta {
        self.rollups.entry((program_id, day)).or_default()
    }

    /// The totals of the partner-program record (`partner_id`, `program_id`), to add to.
    pub fn partner(&mut self, partner_id: i64, program_id: i64) -> &mut PartnerDelta {
        self.partners.entry((partner_id, program_id)).or_default()
    }

    /// Counts one click on a link at `at`.
    pub fn link_click(&mut self, link_id: i64, at: i64) {
        let d = self.links.entry(link_id).or_default();
        d.clicks += 1;
        d.last_clicked = d.last_clicked.max(at);
    }

    /// Folds another set of increments into this one.
    pub fn merge(&mut self, other: Deltas) {
        for (k, v) in other.rollups {
            let d = self.rollups.entry(k).or_default();
            d.clicks += v.clicks;
            d.leads += v.leads;
            d.conversions += v.conversions;
            d.revenue_cents += v.revenue_cents;
            d.sales += v.sales;
            d.commission_cents += v.commission_cents;
            d.partners += v.partners;
            d.lead_events += v.lead_events;
            d.sale_events += v.sale_events;
        }
        for (k, v) in other.partners {
            let d = self.partners.entry(k).or_default();
            d.clicks += v.clicks;
            d.leads += v.leads;
            d.sales += v.sales;
            d.revenue_cents += v.revenue_cents;
            d.commission_cents += v.commission_cents;
        }
        for (k, v) in other.links {
            let d = self.links.entry(k).or_default();
            d.clicks += v.clicks;
            d.last_clicked = d.last_clicked.max(v.last_clicked);
        }
    }

    /// Whether there is nothing to apply.
    pub fn is_empty(&self) -> bool {
        self.rollups.is_empty() && self.partners.is_empty() && self.links.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_folds_per_key() {
        let mut a = Deltas::default();
        a.rollup(1, "2026-01-01".into()).clicks += 1;
        a.link_click(7, 100);
        let mut b = Deltas::default();
        b.rollup(1, "2026-01-01".into()).clicks += 2;
        b.rollup(1, "2026-01-02".into()).revenue_cents += 500;
        b.link_click(7, 50);
        b.partner(3, 1).clicks += 1;
        a.merge(b);
        assert_eq!(a.rollups[&(1, "2026-01-01".into())].clicks, 3);
        assert_eq!(a.rollups[&(1, "2026-01-02".into())].revenue_cents, 500);
        assert_eq!(
            a.links[&7],
            LinkDelta {
                clicks: 2,
                last_clicked: 100
            }
        );
        assert_eq!(a.partners[&(3, 1)].clicks, 1);
    }
}
