//! The European Central Bank's reference rates as it publishes them in CSV: the daily
//! file (`eurofxref.csv`, one row dated `27 November 2026`) and the historical one
//! (`eurofxref-hist.csv`, a row per day dated `2026-11-27`). Both have a `Date` column,
//! then one column per currency in units per euro, `N/A` (or nothing) where the ECB
//! published no rate that day, and a trailing comma.

use chrono::NaiveDate;

use reftrack_domain::currency;
use reftrack_store::ExchangeRateRow;

/// What a file held: its rates (the euro as base) and the columns it skipped because
/// their code is no ISO 4217 currency of today (the historical file still lists the
/// Cyprus pound and others the euro replaced).
#[derive(Debug, Default)]
pub struct EcbRates {
    pub rates: Vec<ExchangeRateRow>,
    pub skipped_currencies: Vec<String>,
}

/// Reads an ECB reference-rate CSV; why not, naming the line, when it is not one.
pub fn parse(text: &str) -> Result<EcbRates, String> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let headers = reader
        .headers()
        .map_err(|e| format!("the file is not CSV: {e}"))?
        .clone();
    if !headers.get(0).is_some_and(|h| {
        h.trim_start_matches('\u{feff}')
            .eq_ignore_ascii_case("date")
    }) {
        return Err("the file's first column is not `Date`: not an ECB reference-rate file".into());
    }
    let mut out = EcbRates::default();
    // Per column: its currency, or None when skipped.
    let columns: Vec<Option<String>> = headers
        .iter()
        .skip(1)
        .map(|h| {
            if h.is_empty() {
                None
            } else if currency::is_known(h) {
                Some(h.to_ascii_lowercase())
            } else {
                out.skipped_currencies.push(h.to_string());
                None
            }
        })
        .collect();
    for (n, record) in reader.records().enumerate() {
        let line = n + 2;
        let record = record.map_err(|e| format!("line {line}: {e}"))?;
        let Some(date) = record.get(0).filter(|d| !d.is_empty()) else {
            continue;
        };
        let date = read_date(date).ok_or_else(|| format!("line {line}: `{date}` is not a date"))?;
        for (value, code) in record.iter().skip(1).zip(&columns) {
            let Some(code) = code else { continue };
            if value.is_empty() || value.eq_ignore_ascii_case("N/A") {
                continue;
            }
            let rate = currency::parse_rate(value).ok_or_else(|| {
                format!("line {line}: the {code} rate `{value}` is not a positive number")
            })?;
            out.rates.push(ExchangeRateRow {
                date: date.clone(),
                base: "eur".into(),
                quote: code.clone(),
                rate: rate.to_string(),
            });
        }
    }
    if out.rates.is_empty() {
        return Err("the file holds no rates".into());
    }
    Ok(out)
}

/// A date as either file writes it, as `YYYY-MM-DD`.
fn read_date(text: &str) -> Option<String> {
    NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .or_else(|_| NaiveDate::parse_from_str(text, "%d %B %Y"))
        .ok()
        .map(|d| d.format("%Y-%m-%d").to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAILY: &str = "Date, USD, JPY, BGN, CYP, GBP, \n\
        27 November 2026, 1.0423, 161.47, 1.9558, N/A, 0.83210, \n";

    const HISTORICAL: &str = "Date,USD,JPY,GBP,ISK,\n\
        2026-11-27,1.0423,161.47,0.8321,N/A,\n\
        2026-11-26,1.0398,160.9,0.8330,,\n";

    #[test]
    fn the_daily_file() {
        let r = parse(DAILY).unwrap();
        assert_eq!(r.skipped_currencies, ["CYP"]);
        let got: Vec<(&str, &str, &str)> = r
            .rates
            .iter()
            .map(|x| (x.date.as_str(), x.quote.as_str(), x.rate.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("2026-11-27", "usd", "1.0423"),
                ("2026-11-27", "jpy", "161.47"),
                ("2026-11-27", "bgn", "1.9558"),
                ("2026-11-27", "gbp", "0.8321"),
            ]
        );
        assert!(r.rates.iter().all(|x| x.base == "eur"));
    }

    #[test]
    fn the_historical_file() {
        let r = parse(HISTORICAL).unwrap();
        assert_eq!(r.rates.len(), 6);
        assert_eq!(r.rates[3].date, "2026-11-26");
        assert_eq!(r.rates[4].rate, "160.9");
        assert!(r.skipped_currencies.is_empty());
    }

    #[test]
    fn other_files_are_refused_with_the_reason() {
        assert!(parse("").is_err());
        assert!(parse("Day,USD\n2026-11-27,1.1\n")
            .unwrap_err()
            .contains("Date"));
        assert!(parse("Date,USD\nyesterday,1.1\n")
            .unwrap_err()
            .contains("line 2"));
        assert!(parse("Date,USD\n2026-11-27,-1\n")
            .unwrap_err()
            .contains("usd"));
        assert!(parse("Date,USD\n2026-11-27,N/A\n")
            .unwrap_err()
            .contains("no rates"));
    }
}
