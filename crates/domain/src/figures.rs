//! What each event adds to the figures the dashboards read: daily rollups per program
//! and per partner in a program, running totals per partner-program record, click
//! counters per link. Increments are
//! folded per write batch ([`Deltas`]) and applied once before the batch commits, in the
//! same transaction as the events they count. Amounts are in minor units of the
//! program's currency: a sale in another currency counts its converted amount.

use std::collections::BTreeMap;

use crate::time::day_of;

/// Declares a struct of `i64` counters (`Default`, compared by value) that adds another
/// of its kind field by field (`+=`) and gives its values in the order of its fields, the
/// order the counter statements bind them in.
macro_rules! counters {
    ($(#[$doc:meta])* $name:ident { $($field:ident),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
        pub struct $name {
            $(pub $field: i64,)+
        }

        impl $name {
            /// The names of its counters, in the order of its fields.
            pub const NAMES: &[&str] = &[$(stringify!($field)),+];
            /// How many counters it has.
            pub const LEN: usize = Self::NAMES.len();

            /// Its counters, in the order of its fields.
            pub fn values(&self) -> [i64; Self::LEN] {
                [$(self.$field),+]
            }
        }

        impl std::ops::AddAssign for $name {
            fn add_assign(&mut self, other: Self) {
                $(self.$field += other.$field;)+
            }
        }
    };
}

counters! {
    /// Increments of one program's figures on one UTC day.
    RollupDelta {
        clicks,
        leads,
        conversions,
        revenue_cents,
        sales,
        commission_cents,
        partners,
        lead_events,
        sale_events,
    }
}

counters! {
    /// Increments of a partner-program record's running totals.
    PartnerDelta {
        clicks,
        leads,
        sales,
        revenue_cents,
        commission_cents,
    }
}

counters! {
    /// Increments of one partner's figures in one program on one UTC day: what its own
    /// links brought (the partner portal's chart).
    PartnerDayDelta {
        clicks,
        leads,
        conversions,
        revenue_cents,
        sales,
        commission_cents,
    }
}

/// A link's click counter increment and its latest click.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct LinkDelta {
    pub clicks: i64,
    pub last_clicked: i64,
}

impl std::ops::AddAssign for LinkDelta {
    fn add_assign(&mut self, other: Self) {
        self.clicks += other.clicks;
        self.last_clicked = self.last_clicked.max(other.last_clicked);
    }
}

/// Adds the increments of `from` to those of the same key in `into`.
fn add_all<K: Ord, V: Default + std::ops::AddAssign>(
    into: &mut BTreeMap<K, V>,
    from: BTreeMap<K, V>,
) {
    for (k, v) in from {
        *into.entry(k).or_default() += v;
    }
}

/// Everything a batch of writes adds to counters. Ordered maps, so that concurrent
/// batches touch rows in the same order and cannot deadlock on PostgreSQL.
#[derive(Debug, Default)]
pub struct Deltas {
    pub rollups: BTreeMap<(i64, String), RollupDelta>,
    pub partners: BTreeMap<(i64, i64), PartnerDelta>,
    pub links: BTreeMap<i64, LinkDelta>,
    /// Keyed by (program, partner, day).
    pub partner_days: BTreeMap<(i64, i64, String), PartnerDayDelta>,
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

    /// What these increments add to the sales and revenue (minor units) of `partner_id` in
    /// `program_id`, not yet in its counters.
    pub fn partner_pending(&self, partner_id: i64, program_id: i64) -> (i64, i64) {
        self.partners
            .get(&(partner_id, program_id))
            .map_or((0, 0), |d| (d.sales, d.revenue_cents))
    }

    /// The figures of `partner_id` in `program_id` on `day`, to add to.
    pub fn partner_day(
        &mut self,
        program_id: i64,
        partner_id: i64,
        day: String,
    ) -> &mut PartnerDayDelta {
        self.partner_days
            .entry((program_id, partner_id, day))
            .or_default()
    }

    /// Counts one click on a link at `at`.
    pub fn link_click(&mut self, link_id: i64, at: i64) {
        let d = self.links.entry(link_id).or_default();
        d.clicks += 1;
        d.last_clicked = d.last_clicked.max(at);
    }

    /// Folds another set of increments into this one.
    pub fn merge(&mut self, other: Deltas) {
        add_all(&mut self.rollups, other.rollups);
        add_all(&mut self.partners, other.partners);
        add_all(&mut self.links, other.links);
        add_all(&mut self.partner_days, other.partner_days);
    }

    /// A real click through `link_id` of `partner_id` in `program_id`.
    pub fn count_click(&mut self, program_id: i64, partner_id: i64, link_id: i64, at: i64) {
        self.count_clicks([(program_id, partner_id, link_id, at)]);
    }

    /// Many real clicks, each `(program, partner, link, at)`.
    pub fn count_clicks(&mut self, clicks: impl IntoIterator<Item = (i64, i64, i64, i64)>) {
        // Most clicks of a batch fall on one day: format it once.
        let mut day: Option<(i64, String)> = None;
        for (program_id, partner_id, link_id, at) in clicks {
            let n = at.div_euclid(86_400_000);
            if day.as_ref().is_none_or(|(d, _)| *d != n) {
                day = Some((n, day_of(at)));
            }
            let text = day.as_ref().map(|(_, t)| t.clone()).unwrap_or_default();
            self.rollup(program_id, text.clone()).clicks += 1;
            self.link_click(link_id, at);
            self.partner(partner_id, program_id).clicks += 1;
            self.partner_day(program_id, partner_id, text).clicks += 1;
        }
    }

    /// A lead event; `customer` is `Some(partner)` when it moved a customer to `lead`
    /// (the partner when the customer has one), `None` when stored unattributed.
    pub fn count_lead(&mut self, program_id: i64, customer: Option<Option<i64>>, at: i64) {
        let r = self.rollup(program_id, day_of(at));
        r.lead_events += 1;
        if let Some(partner) = customer {
            r.leads += 1;
            if let Some(partner_id) = partner {
                self.partner(partner_id, program_id).leads += 1;
                self.partner_day(program_id, partner_id, day_of(at)).leads += 1;
            }
        }
    }

    /// A recorded real sale of `amount_cents` earning `commission_cents`; `converts` when
    /// it is the customer's first purchase.
    pub fn count_sale(&mut self, sale: SaleFigures) {
        let (revenue, commission) = (sale.amount_cents, sale.commission_cents);
        let r = self.rollup(sale.program_id, day_of(sale.at));
        r.revenue_cents += revenue;
        r.sales += 1;
        r.sale_events += 1;
        r.commission_cents += commission;
        if sale.converts {
            r.conversions += 1;
        }
        let p = self.partner(sale.partner_id, sale.program_id);
        p.sales += 1;
        p.revenue_cents += revenue;
        p.commission_cents += commission;
        let d = self.partner_day(sale.program_id, sale.partner_id, day_of(sale.at));
        d.sales += 1;
        d.revenue_cents += revenue;
        d.commission_cents += commission;
        d.conversions += i64::from(sale.converts);
    }

    /// A refund of a real sale: what it takes back leaves the figures of the sale's own
    /// day; a full refund also takes the sale out of the sales count.
    pub fn count_refund(&mut self, refund: RefundFigures) {
        let full = i64::from(refund.full);
        let (refunded, deducted) = (refund.refunded_cents, refund.deducted_cents);
        let d = self.rollup(refund.program_id, day_of(refund.sale_date));
        d.revenue_cents -= refunded;
        d.sales -= full;
        d.commission_cents -= deducted;
        if let Some(partner_id) = refund.partner_id {
            let p = self.partner(partner_id, refund.program_id);
            p.revenue_cents -= refunded;
            p.sales -= full;
            p.commission_cents -= deducted;
            let d = self.partner_day(refund.program_id, partner_id, day_of(refund.sale_date));
            d.revenue_cents -= refunded;
            d.sales -= full;
            d.commission_cents -= deducted;
        }
    }

    /// A commission withdrawn from the figures (rejected): what it still paid leaves the
    /// figures of its sale's day and the partner's totals.
    pub fn count_commission_withdrawn(
        &mut self,
        program_id: i64,
        partner_id: i64,
        sale_date: i64,
        cents: i64,
    ) {
        self.count_commission(program_id, partner_id, sale_date, -cents);
    }

    /// A commission of `cents` without a sale (a lead's, a bonus), counted on the day
    /// `at` it was made.
    pub fn count_commission(&mut self, program_id: i64, partner_id: i64, at: i64, cents: i64) {
        self.rollup(program_id, day_of(at)).commission_cents += cents;
        self.partner(partner_id, program_id).commission_cents += cents;
        self.partner_day(program_id, partner_id, day_of(at))
            .commission_cents += cents;
    }

    /// A sale in another currency converted after it was recorded (it waited for a
    /// rate): its revenue and its commission, net of what refunds took back meanwhile,
    /// join the figures of its own day; it was counted as a sale when recorded.
    pub fn count_converted(
        &mut self,
        program_id: i64,
        partner_id: Option<i64>,
        sale_date: i64,
        revenue_cents: i64,
        commission_cents: i64,
    ) {
        let day = day_of(sale_date);
        let r = self.rollup(program_id, day.clone());
        r.revenue_cents += revenue_cents;
        r.commission_cents += commission_cents;
        if let Some(partner_id) = partner_id {
            let p = self.partner(partner_id, program_id);
            p.revenue_cents += revenue_cents;
            p.commission_cents += commission_cents;
            let d = self.partner_day(program_id, partner_id, day);
            d.revenue_cents += revenue_cents;
            d.commission_cents += commission_cents;
        }
    }

    /// A partner joining a program.
    pub fn count_partner_joined(&mut self, program_id: i64, at: i64) {
        self.rollup(program_id, day_of(at)).partners += 1;
    }

    /// Whether there is nothing to apply.
    pub fn is_empty(&self) -> bool {
        self.rollups.is_empty()
            && self.partners.is_empty()
            && self.links.is_empty()
            && self.partner_days.is_empty()
    }
}

/// What a recorded sale adds (see [`Deltas::count_sale`]).
#[derive(Debug, Clone, Copy)]
pub struct SaleFigures {
    pub program_id: i64,
    pub partner_id: i64,
    pub at: i64,
    pub amount_cents: i64,
    pub commission_cents: i64,
    pub converts: bool,
}

/// What a refund takes back (see [`Deltas::count_refund`]).
#[derive(Debug, Clone, Copy)]
pub struct RefundFigures {
    pub program_id: i64,
    pub partner_id: Option<i64>,
    /// When the refunded sale was made: its day's figures change.
    pub sale_date: i64,
    pub refunded_cents: i64,
    pub deducted_cents: i64,
    pub full: bool,
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

    #[test]
    fn partner_days_follow_the_events_of_the_partners_links() {
        let mut d = Deltas::default();
        let day = 1_780_000_000_000;
        d.count_clicks([(1, 3, 7, day), (1, 4, 8, day)]);
        d.count_lead(1, Some(Some(3)), day);
        d.count_lead(1, Some(None), day);
        d.count_sale(SaleFigures {
            program_id: 1,
            partner_id: 3,
            at: day,
            amount_cents: 1000,
            commission_cents: 200,
            converts: true,
        });
        d.count_refund(RefundFigures {
            program_id: 1,
            partner_id: Some(3),
            sale_date: day,
            refunded_cents: 1000,
            deducted_cents: 200,
            full: true,
        });
        let three = d.partner_days[&(1, 3, day_of(day))];
        assert_eq!(
            three,
            PartnerDayDelta {
                clicks: 1,
                leads: 1,
                conversions: 1,
                revenue_cents: 0,
                sales: 0,
                commission_cents: 0,
            }
        );
        assert_eq!(d.partner_days[&(1, 4, day_of(day))].clicks, 1);
        assert_eq!(d.partner_days.len(), 2);
    }

    #[test]
    fn a_converted_sale_adds_its_revenue_on_its_own_day_without_a_second_sale() {
        let mut d = Deltas::default();
        let day = 1_780_000_000_000;
        d.count_sale(SaleFigures {
            program_id: 1,
            partner_id: 3,
            at: day,
            amount_cents: 0,
            commission_cents: 0,
            converts: true,
        });
        d.count_converted(1, Some(3), day + 5, 7_746, 1_549);
        let r = d.rollups[&(1, day_of(day))];
        assert_eq!(
            (r.sales, r.revenue_cents, r.commission_cents),
            (1, 7_746, 1_549)
        );
        let p = d.partners[&(3, 1)];
        assert_eq!(
            (p.sales, p.revenue_cents, p.commission_cents),
            (1, 7_746, 1_549)
        );
    }
}
