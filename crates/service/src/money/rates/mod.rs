//! Exchange rates and sales in other currencies: the operator's rates (the API and the
//! ECB file, [`ecb`]), the rate a new sale converts at, and the conversion of the sales
//! that waited for one ([`waiting`]).
//!
//! A sale converts at the rates of its UTC date, or of the latest earlier date that has a
//! path between its currency and the program's, up to
//! [`RATE_LOOKBACK_DAYS`](currency::RATE_LOOKBACK_DAYS) back
//! ([`currency::rate_between`]). The rate found is stored with the sale.

pub mod ecb;
pub(crate) mod facts;
pub mod fetch;
pub mod waiting;

use chrono::NaiveDate;
use futures::FutureExt;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use crate::{App, Caller, Error, Result};
use reftrack_domain::access::Access;
use reftrack_domain::currency::{self, Quote};
use reftrack_domain::money::normalize_currency;
use reftrack_domain::time::{day_of, DAY_MS};
use reftrack_store::Record;
use reftrack_store::{ExchangeRateRow, ProgramRates, SaleConversion};

/// At most this many rates per call of the API.
pub const MAX_RATES_PER_CALL: usize = 10_000;

/// Rates stored per write: a large file goes in several short transactions, so that the
/// tracking writes never wait long behind it.
const RATES_PER_WRITE: usize = 2_000;

/// A rate as the operator sends it.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RateInput {
    /// The rate's day, `YYYY-MM-DD`.
    pub date: String,
    /// ISO 4217 code (any case).
    pub base: String,
    /// ISO 4217 code (any case).
    pub quote: String,
    /// Units of `quote` for one unit of `base`; greater than 0.
    pub rate: f64,
}

/// `POST /api/admin/exchange-rates`: rates to store.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RatesBody {
    /// At most 10,000 rates; a (date, base, quote) already stored is replaced.
    pub rates: Vec<RateInput>,
}

/// How many rates a call stored.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct RatesImported {
    pub imported: u64,
}

/// What an import of the ECB's file stored.
#[derive(Debug, Clone)]
pub struct EcbImport {
    /// Rates stored.
    pub stored: u64,
    /// Days they cover, oldest and newest.
    pub first_day: String,
    pub last_day: String,
    /// Columns skipped: codes that are no ISO 4217 currency of today.
    pub skipped_currencies: Vec<String>,
}

/// What a sale's rate is cached by: its UTC day number and the two currencies' codes,
/// kept inline so that a lookup allocates nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RateKey(i64, [u8; 3], [u8; 3]);

impl RateKey {
    /// The key of a sale at `at` from `from` to `to` (three-letter codes).
    fn new(at: i64, from: &str, to: &str) -> Self {
        let code = |c: &str| {
            let mut k = [0u8; 3];
            for (slot, b) in k.iter_mut().zip(c.bytes()) {
                *slot = b;
            }
            k
        };
        RateKey(at.div_euclid(DAY_MS), code(from), code(to))
    }
}

/// A day `YYYY-MM-DD`, checked.
fn rate_day(text: &str) -> Option<String> {
    NaiveDate::parse_from_str(text.trim(), "%Y-%m-%d")
        .ok()
        .map(|d| d.format("%Y-%m-%d").to_string())
}

/// The rates of a call, checked: the first refused names its place and field.
fn checked_rates(body: RatesBody) -> Result<Vec<ExchangeRateRow>> {
    if body.rates.is_empty() {
        return Err(Error::invalid("rates must list at least one rate"));
    }
    if body.rates.len() > MAX_RATES_PER_CALL {
        return Err(Error::invalid(format!(
            "rates may list at most {MAX_RATES_PER_CALL} rates per call"
        )));
    }
    body.rates
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            let field =
                |name: &str, what: &str| Error::invalid(format!("rates[{i}].{name} {what}"));
            let date =
                rate_day(&r.date).ok_or_else(|| field("date", "must be a date YYYY-MM-DD"))?;
            let code = "must be an ISO 4217 currency code";
            let base = normalize_currency(&r.base).ok_or_else(|| field("base", code))?;
            let quote = normalize_currency(&r.quote).ok_or_else(|| field("quote", code))?;
            if base == quote {
                return Err(field("quote", "must differ from base"));
            }
            let rate = currency::parse_rate(&r.rate.to_string())
                .filter(|_| r.rate.is_finite())
                .ok_or_else(|| field("rate", "must be a number greater than 0"))?;
            Ok(ExchangeRateRow {
                date,
                base,
                quote,
                rate: rate.to_string(),
            })
        })
        .collect()
}

impl App {
    /// Stores the operator's rates (`POST /api/admin/exchange-rates`); nothing is stored
    /// when one is refused.
    pub async fn import_exchange_rates(
        &self,
        caller: &Caller,
        body: RatesBody,
    ) -> Result<RatesImported> {
        caller.operator_only("change exchange rates")?;
        let rows = checked_rates(body)?;
        let imported = self.store_rates(rows).await?;
        Ok(RatesImported { imported })
    }

    /// The rates stored for `date` (`YYYY-MM-DD`).
    pub async fn exchange_rates(
        &self,
        caller: &Caller,
        date: &str,
    ) -> Result<Vec<ExchangeRateRow>> {
        caller.operator_only("read exchange rates")?;
        let day = rate_day(date).ok_or_else(|| Error::invalid("date must be a date YYYY-MM-DD"))?;
        Ok(self.store.rates_between(&day, &day).await?)
    }

    /// Stores the rates of an ECB reference-rate file (`reftrack rates import`).
    pub async fn import_ecb_file(&self, text: &str) -> Result<EcbImport> {
        let parsed = ecb::parse(text).map_err(Error::Invalid)?;
        let first_day = parsed
            .rates
            .iter()
            .map(|r| &r.date)
            .min()
            .cloned()
            .unwrap_or_default();
        let last_day = parsed
            .rates
            .iter()
            .map(|r| &r.date)
            .max()
            .cloned()
            .unwrap_or_default();
        let stored = self.store_rates(parsed.rates).await?;
        Ok(EcbImport {
            stored,
            first_day,
            last_day,
            skipped_currencies: parsed.skipped_currencies,
        })
    }

    /// Stores checked rates, a few thousand per write, and wakes the conversion of the
    /// sales waiting for them.
    async fn store_rates(&self, rows: Vec<ExchangeRateRow>) -> Result<u64> {
        let at = self.now_ms();
        let mut stored = 0;
        let mut rows = rows;
        // A rate sent twice in one call: the later one stands.
        rows.reverse();
        let mut seen = std::collections::HashSet::new();
        rows.retain(|r| seen.insert((r.date.clone(), r.base.clone(), r.quote.clone())));
        rows.reverse();
        for chunk in rows.chunks(RATES_PER_WRITE) {
            let chunk = chunk.to_vec();
            stored += self
                .write(move |tx, _| async move { Ok(tx.store_rates(&chunk, at).await?) }.boxed())
                .await?;
        }
        self.sale_rates.clear();
        self.rates_arrived.notify_one();
        Ok(stored)
    }

    /// How a new sale of `amount` in `from`, at `at`, counts in its program's currency
    /// `to`: the same, converted at the rate found, or waiting for one.
    pub(crate) async fn sale_conversion(
        &self,
        amount: i64,
        from: &str,
        to: &str,
        at: i64,
    ) -> Result<SaleConversion> {
        if from == to {
            return Ok(SaleConversion::Same);
        }
        let key = RateKey::new(at, from, to);
        let found = self
            .sale_rates
            .get_or_read(&key, || async {
                let from_day = day_of(at - currency::RATE_LOOKBACK_DAYS * DAY_MS);
                let rows = self.store.rates_between(&from_day, &day_of(at)).await?;
                Ok::<_, Error>(rate_on(&rows, from, to))
            })
            .await?;
        Ok(match found {
            Some((rate, rate_date)) => SaleConversion::Converted {
                amount_cents: currency::convert(amount, from, to, rate),
                rate: rate.to_string(),
                rate_date,
            },
            None => SaleConversion::Awaiting,
        })
    }

    /// The rates a program's sales used, and how many wait for one.
    pub async fn program_rates(&self, caller: &Caller, program_id: i64) -> Result<ProgramRates> {
        self.allow(caller, Record::Program(program_id), Access::Read)
            .await?;
        Ok(self.store.program_rates(program_id).await?)
    }

    /// Wakes whoever converts waiting sales: rates arrived in this process.
    pub fn rates_arrived(&self) -> &tokio::sync::Notify {
        &self.rates_arrived
    }
}

/// Among `rows` (several days, newest first), the rate from `from` to `to` of the newest
/// day that has a path between them, with that day.
pub(crate) fn rate_on(rows: &[ExchangeRateRow], from: &str, to: &str) -> Option<(Decimal, String)> {
    let mut start = 0;
    while start < rows.len() {
        let day = &rows[start].date;
        let end = rows[start..]
            .iter()
            .position(|r| &r.date != day)
            .map_or(rows.len(), |n| start + n);
        let quotes: Vec<Quote> = rows[start..end]
            .iter()
            .filter_map(|r| {
                Some(Quote {
                    base: r.base.clone(),
                    quote: r.quote.clone(),
                    rate: currency::parse_rate(&r.rate)?,
                })
            })
            .collect();
        if let Some(rate) = currency::rate_between(&quotes, from, to) {
            return Some((rate, day.clone()));
        }
        start = end;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(date: &str, base: &str, quote: &str, rate: &str) -> ExchangeRateRow {
        ExchangeRateRow {
            date: date.into(),
            base: base.into(),
            quote: quote.into(),
            rate: rate.into(),
        }
    }

    #[test]
    fn the_newest_day_with_a_path_gives_the_rate() {
        let rows = [
            row("2026-11-27", "eur", "usd", "1.05"),
            row("2026-11-26", "eur", "jpy", "160"),
            row("2026-11-26", "eur", "usd", "1.04"),
            row("2026-11-25", "eur", "gbp", "0.8"),
        ];
        let (rate, day) = rate_on(&rows, "eur", "usd").unwrap();
        assert_eq!(
            (rate.to_string().as_str(), day.as_str()),
            ("1.05", "2026-11-27")
        );
        // The 27th has no yen: the 26th's pair.
        let (rate, day) = rate_on(&rows, "jpy", "usd").unwrap();
        assert_eq!(
            (rate.to_string().as_str(), day.as_str()),
            ("0.0065", "2026-11-26")
        );
        assert_eq!(rate_on(&rows, "chf", "usd"), None);
        assert_eq!(rate_on(&[], "eur", "usd"), None);
    }

    #[test]
    fn a_call_is_checked_rate_by_rate() {
        let body = |rates: serde_json::Value| -> RatesBody {
            serde_json::from_value(serde_json::json!({ "rates": rates })).unwrap()
        };
        let ok = checked_rates(body(serde_json::json!([
            {"date": "2026-11-27", "base": "EUR", "quote": "usd", "rate": 1.0423}
        ])))
        .unwrap();
        assert_eq!(ok[0].rate, "1.0423");
        assert_eq!(ok[0].base, "eur");
        for (rates, error) in [
            (serde_json::json!([]), "rates must list at least one rate"),
            (
                serde_json::json!([{"date": "2026-13-01", "base": "eur", "quote": "usd", "rate": 1}]),
                "rates[0].date must be a date YYYY-MM-DD",
            ),
            (
                serde_json::json!([{"date": "2026-11-27", "base": "xyz", "quote": "usd", "rate": 1}]),
                "rates[0].base must be an ISO 4217 currency code",
            ),
            (
                serde_json::json!([{"date": "2026-11-27", "base": "eur", "quote": "eur", "rate": 1}]),
                "rates[0].quote must differ from base",
            ),
            (
                serde_json::json!([{"date": "2026-11-27", "base": "eur", "quote": "usd", "rate": 0}]),
                "rates[0].rate must be a number greater than 0",
            ),
        ] {
            match checked_rates(body(rates)) {
                Err(Error::Invalid(text)) => assert_eq!(text, error),
                other => panic!("{other:?}"),
            }
        }
    }
}
