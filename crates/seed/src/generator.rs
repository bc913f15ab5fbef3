//! Generates one program's events in chunks, with the counters they add.

use super::*;
use reftrack_domain::status::CommissionStatus;

/// Generates one program's events in chunks, keeping the counters they add.
pub(crate) struct Generator<'a> {
    pub(crate) program_id: i64,
    pub(crate) spec: &'a ProgramSpec,
    pub(crate) partners: &'a [SeedPartner],
    pub(crate) start: i64,
    pub(crate) step: f64,
    pub(crate) end: i64,
    pub(crate) next_customer_id: i64,
    pub(crate) next_sale_id: i64,
    /// The program's hold period, in milliseconds.
    pub(crate) hold_ms: i64,
    /// The seed's now: commissions whose hold ended before it are approved.
    pub(crate) now: i64,
    pub(crate) leads: u64,
    pub(crate) sales: u64,
    /// Per UTC day number: the rollup increments.
    pub(crate) days: BTreeMap<i64, RollupDelta>,
    pub(crate) partner_days: PartnerDays,
    pub(crate) deltas: Deltas,
}

/// The partners' daily increments of one program, per partner and UTC day number.
#[derive(Default)]
pub(crate) struct PartnerDays(BTreeMap<(i64, i64), PartnerDayDelta>);

impl PartnerDays {
    /// The increments of `partner_id` on the day of `at`.
    pub(crate) fn at(&mut self, partner_id: i64, at: i64) -> &mut PartnerDayDelta {
        self.0
            .entry((partner_id, at.div_euclid(DAY_MS)))
            .or_default()
    }

    /// Adds them to `deltas`' partner days of `program_id`.
    pub(crate) fn fold(self, program_id: i64, deltas: &mut Deltas) {
        for ((partner_id, day), d) in self.0 {
            *deltas.partner_day(program_id, partner_id, day_of(day * DAY_MS)) = d;
        }
    }
}

impl Generator<'_> {
    pub(crate) fn day(&mut self, at: i64) -> &mut RollupDelta {
        self.days.entry(at.div_euclid(DAY_MS)).or_default()
    }

    /// Rows for clicks `from..to` of the program.
    pub(crate) fn chunk(&mut self, from: u64, to: u64) -> Chunk {
        let mut c = Chunk::default();
        let rule = CommissionRule::Percentage {
            bps: COMMISSION_BPS,
        };
        for i in from..to {
            let h = mix(i ^ (self.program_id as u64) << 40);
            let at = self.start + (i as f64 * self.step) as i64;
            let p = &self.partners[(h % self.partners.len() as u64) as usize];
            let (partner_id, link_id, pp_id) = (p.partner_id, p.link_id, p.partner_program_id);
            let customer_id = self.next_customer_id;
            self.next_customer_id += 1;
            // Fixed-width numbers keep seeded click ids in index order; real ones carry
            // 63 random bits in the same shape.
            let click_id = format!("cust_{}_{at}", 1_000_000_000_000u64 + customer_id as u64);
            let lead_at = (at + 30 * 60_000).min(self.end);
            let sale_at = (lead_at + 2 * 3_600_000).min(self.end);
            let is_lead = h % 10 == 3;
            let is_sale = is_lead && (h / 10) % 5 == 1;
            let idx = c.customers.len();
            let mut customer = SeedCustomer {
                id: customer_id,
                program_id: self.program_id,
                click_id,
                customer_key: None,
                email: None,
                status: "click",
                partner_id,
                link_id,
                signup_date: None,
                first_purchase_date: None,
                created_at: at,
                updated_at: at,
            };
            self.day(at).clicks += 1;
            self.deltas.link_click(link_id, at);
            self.deltas.partner(partner_id, self.program_id).clicks += 1;
            self.partner_days.at(partner_id, at).clicks += 1;
            if is_lead {
                let n = self.leads;
                self.leads += 1;
                customer.customer_key = Some(format!("{}{n}", self.spec.key_prefix));
                customer.email = Some(format!("{}{n}@example.com", self.spec.key_prefix));
                customer.status = "lead";
                customer.signup_date = Some(lead_at);
                customer.updated_at = lead_at;
                c.leads.push(SeedLead {
                    customer: idx,
                    page_url: PAGES[(landing_page(h) + 1) % PAGES.len()],
                    at: lead_at,
                });
                let r = self.day(lead_at);
                r.leads += 1;
                r.lead_events += 1;
                self.deltas.partner(partner_id, self.program_id).leads += 1;
                self.partner_days.at(partner_id, lead_at).leads += 1;
            }
            if is_sale {
                let amount = 1_000 + (h >> 40) as i64 % 20_000;
                let commission = rule.amount_for(amount);
                customer.status = "conversion";
                customer.first_purchase_date = Some(sale_at);
                customer.updated_at = sale_at;
                c.sales.push(SeedSale {
                    id: self.next_sale_id,
                    program_id: self.program_id,
                    customer_id,
                    partner_id,
                    partner_program_id: pp_id,
                    click_id: customer.click_id.clone(),
                    customer_key: customer.customer_key.clone(),
                    transaction_id: format!("seed_{}_{}", self.program_id, self.sales),
                    amount_cents: amount,
                    commission_cents: commission,
                    at: sale_at,
                    // As the server's approval job records it.
                    approved_at: lifecycle::approved_at(
                        CommissionStatus::Pending,
                        false,
                        sale_at,
                        None,
                        self.hold_ms,
                        self.now,
                    ),
                });
                self.next_sale_id += 1;
                self.sales += 1;
                let r = self.day(sale_at);
                r.revenue_cents += amount;
                r.sales += 1;
                r.sale_events += 1;
                r.commission_cents += commission;
                r.conversions += 1;
                let pd = self.deltas.partner(partner_id, self.program_id);
                pd.sales += 1;
                pd.revenue_cents += amount;
                pd.commission_cents += commission;
                let d = self.partner_days.at(partner_id, sale_at);
                d.sales += 1;
                d.revenue_cents += amount;
                d.commission_cents += commission;
                d.conversions += 1;
            }
            c.clicks.push(SeedClick::new(
                self.program_id,
                idx,
                link_id,
                partner_id,
                h,
                at,
            ));
            c.customers.push(customer);
        }
        c
    }

    /// The counters of everything generated, as the committer folds them.
    pub(crate) fn into_deltas(mut self) -> Deltas {
        fold_days(
            self.program_id,
            std::mem::take(&mut self.days),
            &mut self.deltas,
        );
        std::mem::take(&mut self.partner_days).fold(self.program_id, &mut self.deltas);
        self.deltas
    }
}

/// Adds rollup increments kept per UTC day number to `deltas`' rollups of `program_id`.
pub(crate) fn fold_days(program_id: i64, days: BTreeMap<i64, RollupDelta>, deltas: &mut Deltas) {
    for (day, d) in days {
        *deltas.rollup(program_id, day_of(day * DAY_MS)) += d;
    }
}
