//! The payouts benchmark's program: partners, customers and approved commissions.

use super::*;

/// Where everything of the payouts program goes in time and to whom: sale `i` (0-based,
/// in time order) is the `i / customers`-th purchase of customer `i % customers`, whose
/// partner is `customer % partners`. A customer clicks 2 h 30 min before its first
/// purchase and signs up 30 minutes after its click; every sale is older than the hold.
pub(crate) struct PayoutsPlan<'a> {
    pub(crate) spec: &'a PayoutsSpec,
    pub(crate) program_id: i64,
    pub(crate) hold_ms: i64,
    pub(crate) partners: u64,
    pub(crate) customers: u64,
    /// The program's creation (and its partners' joining).
    pub(crate) start: i64,
    /// Time of the first sale.
    pub(crate) first: i64,
    /// Milliseconds between sales.
    pub(crate) step: f64,
}

impl<'a> PayoutsPlan<'a> {
    pub(crate) fn new(
        spec: &'a PayoutsSpec,
        program: &reftrack_service::programs::ProgramView,
        start: i64,
        now: i64,
    ) -> anyhow::Result<Self> {
        let n = spec.commissions;
        anyhow::ensure!(n > 0, "the payouts program needs at least one commission");
        let hold_ms = lifecycle::hold_ms(program.commission_hold_days);
        let first = start + 3 * 3_600_000;
        // A day of margin: every commission is due, whenever the benchmark reads it.
        let last = now - hold_ms - DAY_MS;
        anyhow::ensure!(
            last > first,
            "the seeded days do not reach back past the payouts program's hold"
        );
        Ok(PayoutsPlan {
            spec,
            program_id: program.id,
            hold_ms,
            partners: (n / COMMISSIONS_PER_PARTNER).max(1),
            customers: n.div_ceil(SALES_PER_CUSTOMER),
            start,
            first,
            step: (last - first) as f64 / n as f64,
        })
    }

    pub(crate) fn sale_at(&self, i: u64) -> i64 {
        self.first + (i as f64 * self.step) as i64
    }

    pub(crate) fn click_at(&self, customer: u64) -> i64 {
        self.sale_at(customer) - 150 * 60_000
    }

    /// The time of a customer's last purchase.
    pub(crate) fn last_sale_at(&self, customer: u64) -> i64 {
        let n = self.spec.commissions;
        self.sale_at(customer + (n - 1 - customer) / self.customers * self.customers)
    }

    pub(crate) fn click_id(&self, customer_id: i64, customer: u64) -> String {
        format!(
            "cust_{}_{}",
            1_000_000_000_000u64 + customer_id as u64,
            self.click_at(customer)
        )
    }

    pub(crate) fn customer_key(&self, customer: u64) -> String {
        format!("{}-c{customer}", self.spec.prefix)
    }
}

/// Inserts the payouts program's partners, customers, clicks, leads, sales and
/// commissions, then its counters; `progress` gets the sales done so far.
pub(crate) async fn seed_payouts<DB: SeedEngine>(
    conn: &mut Seeder<DB>,
    plan: &PayoutsPlan<'_>,
    mut progress: impl FnMut(u64),
) -> anyhow::Result<SeededPayouts> {
    let program_id = plan.program_id;
    let new_partners: Vec<NewSeedPartner> = (0..plan.partners)
        .map(|n| {
            let code = format!("{}-p{n}", plan.spec.prefix);
            NewSeedPartner {
                name: format!("Partner {code}"),
                payout_email: format!("{code}@payouts.example"),
                code,
            }
        })
        .collect();
    let partners = conn
        .insert_partners(program_id, &new_partners, "paypal", plan.start)
        .await?;
    conn.backdate_program(program_id, plan.start).await?;
    let mut deltas = Deltas::default();
    deltas.rollup(program_id, day_of(plan.start)).partners += partners.len() as i64;
    let mut days: BTreeMap<i64, RollupDelta> = BTreeMap::new();
    let mut partner_days = PartnerDays::default();
    let (first_customer_id, first_sale_id) = conn.next_ids().await?;
    let rule = CommissionRule::Percentage {
        bps: COMMISSION_BPS,
    };
    let partner_of = |customer: u64| &partners[(customer % plan.partners) as usize];

    // Customers in the state their sales leave them, each with its click and lead.
    let mut from = 0;
    while from < plan.customers {
        let to = (from + CHUNK).min(plan.customers);
        let mut c = Chunk::default();
        for j in from..to {
            let p = partner_of(j);
            let id = first_customer_id + j as i64;
            let h = mix(j ^ (program_id as u64) << 40);
            let at = plan.click_at(j);
            let lead_at = at + 30 * 60_000;
            let key = plan.customer_key(j);
            c.customers.push(SeedCustomer {
                id,
                program_id,
                click_id: plan.click_id(id, j),
                email: Some(format!("{key}@example.com")),
                customer_key: Some(key),
                status: "conversion",
                partner_id: p.partner_id,
                link_id: p.link_id,
                signup_date: Some(lead_at),
                first_purchase_date: Some(plan.sale_at(j)),
                created_at: at,
                updated_at: plan.last_sale_at(j),
            });
            let idx = c.customers.len() - 1;
            c.clicks.push(SeedClick::new(
                program_id,
                idx,
                p.link_id,
                p.partner_id,
                h,
                at,
            ));
            c.leads.push(SeedLead {
                customer: idx,
                page_url: PAGES[(landing_page(h) + 1) % PAGES.len()],
                at: lead_at,
            });
            days.entry(at.div_euclid(DAY_MS)).or_default().clicks += 1;
            let r = days.entry(lead_at.div_euclid(DAY_MS)).or_default();
            r.leads += 1;
            r.lead_events += 1;
            deltas.link_click(p.link_id, at);
            let pd = deltas.partner(p.partner_id, program_id);
            pd.clicks += 1;
            pd.leads += 1;
            partner_days.at(p.partner_id, at).clicks += 1;
            partner_days.at(p.partner_id, lead_at).leads += 1;
        }
        conn.insert_chunk(&c).await?;
        from = to;
    }

    // The sales, in time order, each with its approved commission.
    let n = plan.spec.commissions;
    let mut from = 0;
    while from < n {
        let to = (from + CHUNK).min(n);
        let mut c = Chunk::default();
        for i in from..to {
            let j = i % plan.customers;
            let p = partner_of(j);
            let customer_id = first_customer_id + j as i64;
            let h = mix(i ^ (program_id as u64) << 40 ^ 1 << 63);
            let at = plan.sale_at(i);
            let amount = 1_000 + (h >> 40) as i64 % 20_000;
            let commission = rule.amount_for(amount);
            c.sales.push(SeedSale {
                id: first_sale_id + i as i64,
                program_id,
                customer_id,
                partner_id: p.partner_id,
                partner_program_id: p.partner_program_id,
                click_id: plan.click_id(customer_id, j),
                customer_key: Some(plan.customer_key(j)),
                transaction_id: format!("seed_{program_id}_{i}"),
                amount_cents: amount,
                commission_cents: commission,
                at,
                approved_at: Some(at + plan.hold_ms),
            });
            let r = days.entry(at.div_euclid(DAY_MS)).or_default();
            r.revenue_cents += amount;
            r.sales += 1;
            r.sale_events += 1;
            r.commission_cents += commission;
            // A customer's first purchase converts it.
            r.conversions += i64::from(i < plan.customers);
            let pd = deltas.partner(p.partner_id, program_id);
            pd.sales += 1;
            pd.revenue_cents += amount;
            pd.commission_cents += commission;
            let d = partner_days.at(p.partner_id, at);
            d.sales += 1;
            d.revenue_cents += amount;
            d.commission_cents += commission;
            d.conversions += i64::from(i < plan.customers);
        }
        conn.insert_chunk(&c).await?;
        from = to;
        progress(from);
    }
    fold_days(program_id, days, &mut deltas);
    partner_days.fold(program_id, &mut deltas);
    conn.apply_deltas(&deltas).await?;
    Ok(SeededPayouts {
        id: program_id,
        partners: plan.partners,
        customers: plan.customers,
        commissions: n,
    })
}
