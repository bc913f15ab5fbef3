//! Currencies and exchange rates: which ISO 4217 codes exist, how many decimals each
//! counts in its smallest unit (as Stripe counts them), the rate between two currencies
//! on a date (direct, inverse or across a third currency) and the conversion of an amount
//! in minor units.

use std::str::FromStr;

use rust_decimal::prelude::ToPrimitive;
use rust_decimal::{Decimal, RoundingStrategy};

/// Stripe's zero-decimal currencies: an amount counts whole units (¥1000 is `1000`).
const ZERO_DECIMAL: &[&str] = &[
    "bif", "clp", "djf", "gnf", "jpy", "kmf", "krw", "mga", "pyg", "rwf", "ugx", "vnd", "vuv",
    "xaf", "xof", "xpf",
];

/// Stripe's three-decimal currencies: an amount counts thousandths.
const THREE_DECIMAL: &[&str] = &["bhd", "jod", "kwd", "omr", "tnd"];

/// How many days before a sale's date a rate may come from when its own date has none.
pub const RATE_LOOKBACK_DAYS: i64 = 7;

/// Significant digits kept of a rate worked out across a third currency (the rate stored
/// with a sale, from which its converted amount is computed).
const CROSS_RATE_DIGITS: u32 = 12;

/// Whether `code` (any case) is a currency of ISO 4217 with a minor unit: a currency a
/// sale, a program or a rate may be in (not a fund or a metal such as XAU).
pub fn is_known(code: &str) -> bool {
    code.len() == 3
        && iso_currency::Currency::from_code(&code.to_ascii_uppercase())
            .is_some_and(|c| c.exponent().is_some())
}

/// How many decimals the smallest unit of `currency` has: 0, 3 or (the rest) 2.
pub fn decimals(currency: &str) -> u32 {
    let code = currency.to_ascii_lowercase();
    if ZERO_DECIMAL.contains(&code.as_str()) {
        0
    } else if THREE_DECIMAL.contains(&code.as_str()) {
        3
    } else {
        2
    }
}

/// How many minor units make one major unit of `currency`: 1, 100 or 1000.
pub fn minor_per_major(currency: &str) -> i64 {
    10_i64.pow(decimals(currency))
}

/// A rate read from text (`"1.0423"`, `"161.47"`): a positive decimal, else `None`.
pub fn parse_rate(text: &str) -> Option<Decimal> {
    let text = text.trim();
    let rate = Decimal::from_str(text)
        .or_else(|_| Decimal::from_scientific(text))
        .ok()?;
    (rate > Decimal::ZERO).then(|| rate.normalize())
}

/// A rate as a JSON number or in a page: the shortest `f64` that reads back as it.
pub fn rate_number(rate: Decimal) -> f64 {
    rate.to_f64().unwrap_or(0.0)
}

/// One stored rate: `rate` units of `quote` for one unit of `base` (lower-case codes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quote {
    pub base: String,
    pub quote: String,
    pub rate: Decimal,
}

/// The rate from `from` to `to` (units of `to` for one unit of `from`) among the rates of
/// one date: 1 between a currency and itself, else a stored rate either way round, else
/// through a third currency both have a rate with (the euro first, as the ECB's rates all
/// are, then by code), kept to twelve significant digits. `None` when no path exists.
pub fn rate_between(quotes: &[Quote], from: &str, to: &str) -> Option<Decimal> {
    if from == to {
        return Some(Decimal::ONE);
    }
    if let Some(direct) = one_step(quotes, from, to) {
        return Some(direct);
    }
    let mut thirds: Vec<&str> = quotes
        .iter()
        .flat_map(|q| [q.base.as_str(), q.quote.as_str()])
        .filter(|c| *c != from && *c != to)
        .collect();
    thirds.sort_by_key(|c| (*c != "eur", *c));
    thirds.dedup();
    thirds.into_iter().find_map(|via| {
        let a = one_step(quotes, from, via)?;
        let b = one_step(quotes, via, to)?;
        Some(a.checked_mul(b)?.round_sf(CROSS_RATE_DIGITS)?.normalize())
    })
}

/// A stored rate from `from` to `to`, or the inverse of one from `to` to `from`.
fn one_step(quotes: &[Quote], from: &str, to: &str) -> Option<Decimal> {
    if let Some(q) = quotes.iter().find(|q| q.base == from && q.quote == to) {
        return Some(q.rate);
    }
    let q = quotes.iter().find(|q| q.base == to && q.quote == from)?;
    Decimal::ONE
        .checked_div(q.rate)?
        .round_sf(CROSS_RATE_DIGITS)
        .map(|r| r.normalize())
}

/// `amount` minor units of `from` in minor units of `to` at `rate` (units of `to` for one
/// of `from`), rounded half away from zero; saturates at the bounds of `i64`.
pub fn convert(amount: i64, from: &str, to: &str, rate: Decimal) -> i64 {
    let shift = decimals(to) as i32 - decimals(from) as i32;
    let scaled = Decimal::from(amount).checked_mul(rate).and_then(|v| {
        if shift >= 0 {
            v.checked_mul(Decimal::from(10_i64.pow(shift as u32)))
        } else {
            v.checked_div(Decimal::from(10_i64.pow((-shift) as u32)))
        }
    });
    match scaled {
        Some(v) => v
            .round_dp_with_strategy(0, RoundingStrategy::MidpointAwayFromZero)
            .to_i64()
            .unwrap_or(if amount < 0 { i64::MIN } else { i64::MAX }),
        None if amount < 0 => i64::MIN,
        None => i64::MAX,
    }
}

/// The part of a converted amount `converted` (of a sale of `amount` in its own currency)
/// that refunds of `refunded` in the sale's currency take back in all: in proportion,
/// rounded half up, so that successive partial refunds add up to exactly `converted` once
/// the whole sale is refunded, and never to more.
pub fn refunded_share(converted: i64, amount: i64, refunded: i64) -> i64 {
    if amount <= 0 || refunded <= 0 {
        return 0;
    }
    if refunded >= amount {
        return converted;
    }
    let (c, a, r) = (
        i128::from(converted),
        i128::from(amount),
        i128::from(refunded),
    );
    ((c * r * 2 + a) / (2 * a)) as i64
}

#[cfg(test)]
mod tests;
