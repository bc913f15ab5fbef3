//! The conversion of the sales that waited for an exchange rate: a few hundred per write,
//! each at the rate of its own date as the stored rates now give it; its commission gets
//! the amount the sale earns at that rate (net of what refunds took meanwhile) and the
//! figures of its day add its revenue. Sales whose rate is still missing stay as they are.
//!
//! Each write reads the waiting sales it converts under a lock (on PostgreSQL one that
//! skips the sales another process is converting), and writes only sales still waiting:
//! several processes converting at once convert each sale once.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use futures::FutureExt;
use rust_decimal::Decimal;

use super::facts::WaitingFacts;
use super::rate_on;
use crate::tracking::count_bounties;
use crate::{App, Result};
use reftrack_domain::bounties::Progress;
use reftrack_domain::currency;
use reftrack_domain::figures::Deltas;
use reftrack_domain::rewards::{self, SaleReward};
use reftrack_domain::status::CommissionStatus;
use reftrack_domain::time::{day_of, DAY_MS};
use reftrack_store::rates::{ConvertedCommission, ConvertedSale, WaitingSale};
use reftrack_store::tx::Tx;

/// Waiting sales read per write: the write holds the tracking writes for a few
/// milliseconds at most.
pub const SALES_PER_WRITE: i64 = 500;

/// What one write of [`App::convert_waiting_sales`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConversionStep {
    /// Sales read (converted or still waiting).
    pub read: u64,
    /// Sales converted.
    pub converted: u64,
}

/// What a pass of [`App::convert_waiting_pass`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConversionPass {
    /// Sales converted.
    pub converted: u64,
    /// Writes it took.
    pub writes: u64,
    /// The longest time one of them held the write transaction (its statements, before
    /// the commit).
    pub longest_write: Duration,
}

impl App {
    /// Converts every sale waiting for a rate that the stored rates now convert, in
    /// writes of [`SALES_PER_WRITE`]; how many it converted.
    pub async fn convert_waiting_sales(&self) -> Result<u64> {
        Ok(self.convert_waiting_pass().await?.converted)
    }

    /// [`Self::convert_waiting_sales`], with what the pass took. It first checks, on a
    /// read connection, whether the stored rates convert any waiting sale's currency on
    /// its day; when none, it takes no write at all.
    pub async fn convert_waiting_pass(&self) -> Result<ConversionPass> {
        let mut pass = ConversionPass::default();
        if !self.waiting_sales_convert().await? {
            return Ok(pass);
        }
        let mut after = 0;
        loop {
            let (step, last, held) = self.convert_waiting_step(after).await?;
            pass.converted += step.converted;
            pass.writes += 1;
            pass.longest_write = pass.longest_write.max(held);
            match last {
                Some(id) if step.read as i64 == SALES_PER_WRITE => after = id,
                _ => return Ok(pass),
            }
        }
    }

    /// Whether the stored rates convert some waiting sale.
    async fn waiting_sales_convert(&self) -> Result<bool> {
        let needs = self.store.waiting_needs().await?;
        let (Some(first), Some(last)) = (
            needs.iter().map(|n| n.2).min(),
            needs.iter().map(|n| n.2).max(),
        ) else {
            return Ok(false);
        };
        let rows = self
            .store
            .rates_between(
                &day_of((first - currency::RATE_LOOKBACK_DAYS) * DAY_MS),
                &day_of(last * DAY_MS),
            )
            .await?;
        Ok(needs.iter().any(|(from, to, day)| {
            let (since, until) = (
                day_of((day - currency::RATE_LOOKBACK_DAYS) * DAY_MS),
                day_of(day * DAY_MS),
            );
            let window: Vec<_> = rows
                .iter()
                .filter(|r| r.date <= until && r.date >= since)
                .cloned()
                .collect();
            rate_on(&window, from, to).is_some()
        }))
    }

    /// One write: the waiting sales after id `after`, converted where a rate is known;
    /// what it did, the last sale id it read and how long its statements took.
    async fn convert_waiting_step(
        &self,
        after: i64,
    ) -> Result<(ConversionStep, Option<i64>, Duration)> {
        let at = self.now_ms();
        self.write(move |tx, deltas| {
            async move {
                let began = Instant::now();
                let (step, last) = convert_step(tx, deltas, after, at).await?;
                Ok((step, last, began.elapsed()))
            }
            .boxed()
        })
        .await
    }
}

/// [`App::convert_waiting_sales`]' write over the waiting sales after `after`.
async fn convert_step(
    tx: &mut dyn Tx,
    deltas: &mut Deltas,
    after: i64,
    at: i64,
) -> Result<(ConversionStep, Option<i64>)> {
    let sales = tx.waiting_sales(after, SALES_PER_WRITE).await?;
    let Some(last) = sales.last().map(|s| s.sale_id) else {
        return Ok((ConversionStep::default(), None));
    };
    let rates = batch_rates(tx, &sales).await?;
    // Whether each program has a live bounty, which a converted sale's revenue may move.
    let mut bountied: HashMap<i64, bool> = HashMap::new();
    let mut converted = Vec::with_capacity(sales.len());
    for s in &sales {
        let key = (
            day_of(s.sale_date),
            s.currency.clone(),
            s.program_currency.clone(),
        );
        let Some(Some((rate, rate_date))) = rates.get(&key) else {
            continue;
        };
        let (sale, revenue, commission) = convert_one(s, *rate, rate_date);
        deltas.count_converted(s.program_id, s.partner_id, s.sale_date, revenue, commission);
        if let Some(partner_id) = s.partner_id.filter(|_| revenue != 0) {
            let has_bounty = match bountied.get(&s.program_id) {
                Some(has) => *has,
                None => {
                    let has = !tx.live_bounties(s.program_id).await?.is_empty();
                    bountied.insert(s.program_id, has);
                    has
                }
            };
            if has_bounty {
                let progress = Progress::Converted {
                    revenue_cents: revenue,
                };
                count_bounties(tx, deltas, s.program_id, partner_id, progress, s.sale_date).await?;
            }
        }
        converted.push(sale);
    }
    let written = tx.convert_sales(&converted, at).await?;
    Ok((
        ConversionStep {
            read: sales.len() as u64,
            converted: written,
        },
        Some(last),
    ))
}

/// The rate of each (day, sale currency, program currency) the sales need, if known.
async fn batch_rates(
    tx: &mut dyn Tx,
    sales: &[WaitingSale],
) -> Result<HashMap<(String, String, String), Option<(Decimal, String)>>> {
    let (Some(first), Some(last)) = (
        sales.iter().map(|s| s.sale_date).min(),
        sales.iter().map(|s| s.sale_date).max(),
    ) else {
        return Ok(HashMap::new());
    };
    let rows = tx
        .rates_in(
            &day_of(first - currency::RATE_LOOKBACK_DAYS * DAY_MS),
            &day_of(last),
        )
        .await?;
    let mut rates = HashMap::new();
    for s in sales {
        let day = day_of(s.sale_date);
        let key = (day.clone(), s.currency.clone(), s.program_currency.clone());
        if rates.contains_key(&key) {
            continue;
        }
        let since = day_of(s.sale_date - currency::RATE_LOOKBACK_DAYS * DAY_MS);
        // The rows of the sale's window: from its day back to the lookback's first.
        let window: Vec<_> = rows
            .iter()
            .filter(|r| r.date <= day && r.date >= since)
            .cloned()
            .collect();
        rates.insert(key, rate_on(&window, &s.currency, &s.program_currency));
    }
    Ok(rates)
}

/// A waiting sale at `rate` (of `rate_date`): its conversion, and what it adds to the
/// figures (revenue and commission, net of refunds).
fn convert_one(s: &WaitingSale, rate: Decimal, rate_date: &str) -> (ConvertedSale, i64, i64) {
    let converted = currency::convert(s.amount_cents, &s.currency, &s.program_currency, rate);
    let revenue = converted - currency::refunded_share(converted, s.amount_cents, s.refunded_cents);
    let mut counted = 0;
    let commission = s.commission.as_ref().map(|c| {
        let facts = WaitingFacts::from_json(c.reward_facts.as_deref());
        let sale_facts = facts.sale_facts(
            converted,
            s.product_id.as_deref(),
            s.is_recurring,
            s.sale_date,
        );
        let (amount, description) =
            match rewards::sale_reward(c.rewards.sale.as_ref(), &sale_facts, &s.program_currency) {
                SaleReward::Earns(e) => (e.amount_cents, e.description),
                _ => (0, "No reward at the sale's converted amount".to_string()),
            };
        let reversed = currency::refunded_share(amount, s.amount_cents, s.refunded_cents);
        if c.status != CommissionStatus::Rejected {
            counted = amount - reversed;
        }
        ConvertedCommission {
            id: c.id,
            amount_cents: amount,
            reversed_cents: reversed,
            description,
            manual_approval: facts.manual,
        }
    });
    (
        ConvertedSale {
            sale_id: s.sale_id,
            converted_amount_cents: converted,
            exchange_rate: rate.to_string(),
            rate_date: rate_date.to_string(),
            commission,
        },
        revenue,
        counted,
    )
}
