//! Exchange rates: [`RateStore`] on the pools and [`RateTx`] on the write connection.

use async_trait::async_trait;

use super::engine::{stmt, Engine, Rec};
use super::write::WriteConnection;
use super::{named_at, SqlStore};
use crate::error::StoreResult;
use crate::rates::{
    ConvertedSale, ExchangeRateRow, ProgramRates, RateStore, RateTx, RateUsed, WaitingCommission,
    WaitingSale,
};
use reftrack_domain::time::DAY_MS;

/// The rates of a span of days, newest first.
const RATES_BETWEEN: &str = "SELECT rate_date, base, quote, rate FROM exchange_rates \
    WHERE rate_date >= $1 AND rate_date <= $2 ORDER BY rate_date DESC, base, quote";

/// At most this many rows per statement of [`RateTx::store_rates`] and
/// [`RateTx::convert_sales`].
const ROWS_PER_STATEMENT: usize = 500;

fn rate_from_row<DB: Engine>(r: &Rec<DB>) -> StoreResult<ExchangeRateRow> {
    Ok(ExchangeRateRow {
        date: r.try_get_at(0)?,
        base: r.try_get_at(1)?,
        quote: r.try_get_at(2)?,
        rate: r.try_get_at(3)?,
    })
}

#[async_trait]
impl<DB: Engine> RateStore for SqlStore<DB> {
    async fn rates_between(&self, from: &str, to: &str) -> StoreResult<Vec<ExchangeRateRow>> {
        stmt::<DB>(RATES_BETWEEN)
            .bind(from)
            .bind(to)
            .read_all(&mut *self.read.acquire().await?, rate_from_row)
            .await
    }

    async fn sales_await_rates(&self) -> StoreResult<bool> {
        Ok(
            stmt::<DB>("SELECT 1 FROM affiliate_sale_events WHERE awaiting_rate LIMIT 1")
                .has_row(&mut *self.read.acquire().await?)
                .await?,
        )
    }

    async fn waiting_needs(&self) -> StoreResult<Vec<(String, String, i64)>> {
        let sql = format!(
            "SELECT s.currency, p.currency, s.sale_date / {DAY_MS} FROM affiliate_sale_events s \
             JOIN programs p ON p.id = s.program_id WHERE s.awaiting_rate GROUP BY 1, 2, 3"
        );
        stmt::<DB>(&sql)
            .read_all(
                &mut *self.read.acquire().await?,
                |r| -> StoreResult<(String, String, i64)> {
                    Ok((r.try_get_at(0)?, r.try_get_at(1)?, r.try_get_at(2)?))
                },
            )
            .await
    }

    async fn program_rates(&self, program_id: i64) -> StoreResult<ProgramRates> {
        let mut conn = self.read.acquire().await?;
        let used = stmt::<DB>(
            "SELECT currency, rate_date, exchange_rate, COUNT(*) FROM affiliate_sale_events \
             WHERE program_id = $1 AND NOT is_test AND exchange_rate IS NOT NULL \
             GROUP BY currency, rate_date, exchange_rate \
             ORDER BY rate_date DESC, currency LIMIT 50",
        )
        .bind(program_id)
        .read_all(&mut *conn, |r| -> StoreResult<RateUsed> {
            Ok(RateUsed {
                currency: r.try_get_at(0)?,
                rate_date: r.try_get_at(1)?,
                exchange_rate: r.try_get_at(2)?,
                sales: r.try_get_at(3)?,
            })
        })
        .await?;
        // Through the partial index of waiting sales, then their program.
        let waiting: Vec<(String, i64)> = stmt::<DB>(
            "SELECT currency, COUNT(*) FROM affiliate_sale_events \
             WHERE awaiting_rate AND program_id = $1 GROUP BY currency ORDER BY currency",
        )
        .bind(program_id)
        .read_all(&mut *conn, |r| -> StoreResult<(String, i64)> {
            Ok((r.try_get_at(0)?, r.try_get_at(1)?))
        })
        .await?;
        Ok(ProgramRates {
            used,
            waiting: waiting.iter().map(|(_, n)| n).sum(),
            waiting_currencies: waiting.into_iter().map(|(c, _)| c).collect(),
        })
    }
}

#[async_trait]
impl<DB: Engine> RateTx for WriteConnection<DB> {
    async fn store_rates(&mut self, rates: &[ExchangeRateRow], at: i64) -> StoreResult<u64> {
        let mut stored = 0;
        for chunk in rates.chunks(ROWS_PER_STATEMENT) {
            let sql = format!(
                "INSERT INTO exchange_rates (rate_date, base, quote, rate, updated_at) \
                 VALUES {} ON CONFLICT (rate_date, base, quote) DO UPDATE \
                 SET rate = excluded.rate, updated_at = excluded.updated_at",
                DB::values(chunk.len(), 5, 1)
            );
            let mut q = stmt::<DB>(&sql);
            for r in chunk {
                q = q
                    .bind(r.date.as_str())
                    .bind(r.base.as_str())
                    .bind(r.quote.as_str())
                    .bind(r.rate.as_str())
                    .bind(at);
            }
            stored += q.execute(&mut *self.conn).await?;
        }
        Ok(stored)
    }

    async fn rates_in(&mut self, from: &str, to: &str) -> StoreResult<Vec<ExchangeRateRow>> {
        stmt::<DB>(RATES_BETWEEN)
            .bind(from)
            .bind(to)
            .read_all(&mut *self.conn, rate_from_row)
            .await
    }

    async fn waiting_sales(&mut self, after: i64, limit: i64) -> StoreResult<Vec<WaitingSale>> {
        let sql = format!(
            "SELECT s.id, s.program_id, p.currency, s.currency, s.amount_cents, \
             s.refunded_cents, s.sale_date, s.partner_id, s.product_id, s.is_recurring, \
             c.id, c.status, c.reward_facts, g.id, g.version, g.rewards \
             FROM affiliate_sale_events s JOIN programs p ON p.id = s.program_id \
             LEFT JOIN commissions c ON c.sale_id = s.id AND c.kind = 'sale' \
             LEFT JOIN partner_groups g ON g.id = c.group_id \
             WHERE s.awaiting_rate AND s.id > $1 ORDER BY s.id LIMIT $2 {}",
            DB::SALE_CLAIM_LOCK
        );
        let rows = stmt::<DB>(&sql)
            .bind(after)
            .bind(limit)
            .fetch_all(&mut *self.conn)
            .await?;
        let mut sales = Vec::with_capacity(rows.len());
        for r in &rows {
            let commission_id: Option<i64> = r.try_get_at(10)?;
            let group: Option<i64> = r.try_get_at(13)?;
            let commission = match (commission_id, group) {
                (Some(id), Some(group_id)) => {
                    let version: i64 = r.try_get_at(14)?;
                    let text: String = r.try_get_at(15)?;
                    Some(WaitingCommission {
                        id,
                        status: named_at(r, 11)?,
                        rewards: self.rewards.get(group_id, version, &text)?,
                        reward_facts: r.try_get_at(12)?,
                    })
                }
                _ => None,
            };
            sales.push(WaitingSale {
                sale_id: r.try_get_at(0)?,
                program_id: r.try_get_at(1)?,
                program_currency: r.try_get_at(2)?,
                currency: r.try_get_at(3)?,
                amount_cents: r.try_get_at(4)?,
                refunded_cents: r.try_get_at(5)?,
                sale_date: r.try_get_at(6)?,
                partner_id: r.try_get_at(7)?,
                product_id: r.try_get_at(8)?,
                is_recurring: r.try_get_at(9)?,
                commission,
            });
        }
        Ok(sales)
    }

    async fn convert_sales(&mut self, sales: &[ConvertedSale], at: i64) -> StoreResult<u64> {
        let mut converted = 0;
        for chunk in sales.chunks(ROWS_PER_STATEMENT) {
            // The ids' span lets the planner reach the rows through the primary key
            // rather than by scanning the table to join the list.
            let (low, high) = span(chunk.iter().map(|s| s.sale_id));
            let sql = format!(
                "WITH v (id, amount, rate, day) AS (VALUES {}) \
                 UPDATE affiliate_sale_events SET converted_amount_cents = v.amount, \
                 exchange_rate = v.rate, rate_date = v.day, awaiting_rate = FALSE \
                 FROM v WHERE affiliate_sale_events.id = v.id \
                 AND affiliate_sale_events.id BETWEEN {low} AND {high} \
                 AND affiliate_sale_events.awaiting_rate",
                DB::values(chunk.len(), 4, 1)
            );
            let mut q = stmt::<DB>(&sql);
            for s in chunk {
                q = q
                    .bind(s.sale_id)
                    .bind(s.converted_amount_cents)
                    .bind(s.exchange_rate.as_str())
                    .bind(s.rate_date.as_str());
            }
            converted += q.execute(&mut *self.conn).await?;
            let commissions: Vec<_> = chunk.iter().filter_map(|s| s.commission.as_ref()).collect();
            if commissions.is_empty() {
                continue;
            }
            let sql = format!(
                "WITH v (id, amount, reversed, description, manual, at) AS (VALUES {}) \
                 UPDATE commissions SET amount_cents = v.amount, reversed_cents = v.reversed, \
                 description = v.description, manual_approval = v.manual, \
                 awaiting_rate = FALSE, reward_facts = NULL, updated_at = v.at \
                 FROM v WHERE commissions.id = v.id AND commissions.id BETWEEN {low} AND {high} \
                 AND commissions.awaiting_rate",
                DB::values(commissions.len(), 6, 1),
                low = span(commissions.iter().map(|c| c.id)).0,
                high = span(commissions.iter().map(|c| c.id)).1,
            );
            let mut q = stmt::<DB>(&sql);
            for c in &commissions {
                q = q
                    .bind(c.id)
                    .bind(c.amount_cents)
                    .bind(c.reversed_cents)
                    .bind(c.description.as_str())
                    .bind(c.manual_approval)
                    .bind(at);
            }
            q.execute(&mut *self.conn).await?;
        }
        Ok(converted)
    }
}

/// The smallest and largest of `ids` (0 and 0 when there are none): numbers the
/// statement may carry as text, being integers.
fn span(ids: impl Iterator<Item = i64>) -> (i64, i64) {
    ids.fold(None, |span: Option<(i64, i64)>, id| {
        Some(span.map_or((id, id), |(low, high)| (low.min(id), high.max(id))))
    })
    .unwrap_or((0, 0))
}
