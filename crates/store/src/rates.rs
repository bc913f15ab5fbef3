//! Exchange rates and the sales in other currencies: the rates' reads and what a program's
//! sales used ([`RateStore`]), and the statements that store rates and convert the sales
//! that waited for one ([`RateTx`]).

use std::sync::Arc;

use async_trait::async_trait;
use serde::{Serialize, Serializer};

use crate::error::StoreResult;
use reftrack_domain::currency;
use reftrack_domain::rewards::Rewards;
use reftrack_domain::status::CommissionStatus;

/// One exchange rate: on `date`, `rate` units of `quote` for one unit of `base`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct ExchangeRateRow {
    /// The rate's day, `YYYY-MM-DD` (UTC).
    pub date: String,
    /// Lower-case ISO 4217 code.
    pub base: String,
    /// Lower-case ISO 4217 code.
    pub quote: String,
    /// Units of `quote` for one unit of `base`.
    #[serde(serialize_with = "rate_number")]
    #[schema(value_type = f64)]
    pub rate: String,
}

/// A rate kept as exact decimal text, written as a JSON number.
pub fn rate_number<S: Serializer>(rate: &str, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(currency::parse_rate(rate).map_or(0.0, currency::rate_number))
}

/// Like [`rate_number`], for a rate a sale may not have.
pub fn rate_number_opt<S: Serializer>(rate: &Option<String>, s: S) -> Result<S::Ok, S::Error> {
    match rate {
        Some(r) => rate_number(r, s),
        None => s.serialize_none(),
    }
}

/// Which rates a program's sales in other currencies were converted at, one row per
/// currency, rate and date, with how many sales used it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct RateUsed {
    /// The sales' currency.
    pub currency: String,
    /// The date of the rate.
    pub rate_date: String,
    /// Program-currency units for one unit of `currency`.
    #[serde(serialize_with = "rate_number")]
    #[schema(value_type = f64)]
    pub exchange_rate: String,
    /// How many live sales were converted at it.
    pub sales: i64,
}

/// What a program's owner is told of its sales in other currencies.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct ProgramRates {
    /// The rates used, newest date first (at most 50).
    pub used: Vec<RateUsed>,
    /// Live sales waiting for a rate, and their currencies.
    pub waiting: i64,
    /// The currencies of those sales, in alphabetical order.
    pub waiting_currencies: Vec<String>,
}

/// The exchange rates' reads on the pools.
#[async_trait]
pub trait RateStore: Send + Sync {
    /// The rates of the days from `from` to `to` (inclusive, `YYYY-MM-DD`), newest day
    /// first, then by base and quote.
    async fn rates_between(&self, from: &str, to: &str) -> StoreResult<Vec<ExchangeRateRow>>;
    /// Whether any live sale waits for a rate.
    async fn sales_await_rates(&self) -> StoreResult<bool>;
    /// What the sales waiting for a rate need: each (sale currency, program currency,
    /// UTC day number of the sale) at least one of them has.
    async fn waiting_needs(&self) -> StoreResult<Vec<(String, String, i64)>>;
    /// The rates a program's sales used, and what of them waits.
    async fn program_rates(&self, program_id: i64) -> StoreResult<ProgramRates>;
}

/// A sale waiting for a rate, as its conversion needs it.
#[derive(Debug, Clone)]
pub struct WaitingSale {
    pub sale_id: i64,
    pub program_id: i64,
    /// The program's currency, which the sale converts to.
    pub program_currency: String,
    /// The sale's own currency and amount, and what refunds took of it so far.
    pub currency: String,
    pub amount_cents: i64,
    pub refunded_cents: i64,
    pub sale_date: i64,
    pub partner_id: Option<i64>,
    pub product_id: Option<String>,
    pub is_recurring: bool,
    /// Its commission, when the sale earns one.
    pub commission: Option<WaitingCommission>,
}

/// The commission of a waiting sale.
#[derive(Debug, Clone)]
pub struct WaitingCommission {
    pub id: i64,
    /// Its stored status (an owner may have rejected it meanwhile).
    pub status: CommissionStatus,
    /// The rewards of its group as they stand now.
    pub rewards: Arc<Rewards>,
    /// What the reward decision knew at the sale (JSON, see the service's rates module).
    pub reward_facts: Option<String>,
}

/// A waiting sale converted: what its row and its commission's become.
#[derive(Debug, Clone)]
pub struct ConvertedSale {
    pub sale_id: i64,
    /// Its amount in the program's currency.
    pub converted_amount_cents: i64,
    /// Program-currency units for one unit of the sale's, as decimal text.
    pub exchange_rate: String,
    /// The date of that rate.
    pub rate_date: String,
    /// Its commission's new amount, the part refunds took back of it, its description
    /// and whether it waits for an owner's approval.
    pub commission: Option<ConvertedCommission>,
}

/// A waiting commission decided.
#[derive(Debug, Clone)]
pub struct ConvertedCommission {
    pub id: i64,
    pub amount_cents: i64,
    pub reversed_cents: i64,
    pub description: String,
    pub manual_approval: bool,
}

/// The statements of rates and conversions on the committer's transaction.
#[async_trait]
pub trait RateTx: Send {
    /// Stores rates, each replacing the one of its (date, base, quote); how many.
    async fn store_rates(&mut self, rates: &[ExchangeRateRow], at: i64) -> StoreResult<u64>;
    /// The rates of the days from `from` to `to` (inclusive), as [`RateStore::rates_between`].
    async fn rates_in(&mut self, from: &str, to: &str) -> StoreResult<Vec<ExchangeRateRow>>;
    /// Up to `limit` sales waiting for a rate with an id above `after`, by id, locked until the transaction
    /// ends; on PostgreSQL those another transaction holds are skipped, so that processes
    /// converting at once take different sales.
    async fn waiting_sales(&mut self, after: i64, limit: i64) -> StoreResult<Vec<WaitingSale>>;
    /// Writes conversions: each sale's converted amount, rate and date, its commission's
    /// amount; both lose the `awaiting_rate` flag. Only sales still waiting change; how
    /// many did.
    async fn convert_sales(&mut self, sales: &[ConvertedSale], at: i64) -> StoreResult<u64>;
}
