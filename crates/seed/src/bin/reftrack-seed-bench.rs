//! `reftrack-seed-bench`: fills a database for `scripts/bench` (see `reftrack_seed`).
//!
//! ```text
//! reftrack-seed-bench DATABASE_URL [BIG_CLICKS] [SMALL_CLICKS]
//! reftrack-seed-bench --payouts DATABASE_URL [COMMISSIONS]
//! ```
//!
//! The first form seeds a program of `BIG_CLICKS` click events (10,000,000 by default)
//! and one of `SMALL_CLICKS` (10,000), each with its customers, leads, sales and rollups
//! over the last 365 days. The second adds the program of the payouts benchmark:
//! `COMMISSIONS` approved commissions (1,000,000 by default), one partner with PayPal
//! payout details per 100 of them. Both then print `KEY=value` lines for the load
//! generator.

use std::io::Write;
use std::time::Instant;

use reftrack_seed::{self as seed, PayoutsSpec, ProgramSpec, SeedOptions};

const USAGE: &str = "usage: reftrack-seed-bench DATABASE_URL [BIG_CLICKS] [SMALL_CLICKS]\n       \
                     reftrack-seed-bench --payouts DATABASE_URL [COMMISSIONS]";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let payouts = args.first().is_some_and(|a| a == "--payouts");
    if payouts {
        args.remove(0);
    }
    let Some(url) = args.first() else {
        anyhow::bail!(USAGE);
    };
    let count = |i: usize, default: u64| -> anyhow::Result<u64> {
        Ok(match args.get(i) {
            Some(v) => v.replace('_', "").parse()?,
            None => default,
        })
    };
    let started = Instant::now();
    let mut last = Instant::now();
    let mut tell = |name: &str, done: u64, total: u64, what: &str| {
        if last.elapsed().as_secs() >= 10 || done == total {
            last = Instant::now();
            eprintln!(
                "seed: {name}: {done} of {total} {what} ({:.0} s)",
                started.elapsed().as_secs_f64()
            );
        }
    };
    if payouts {
        let spec = PayoutsSpec {
            name: "Payouts program".into(),
            commissions: count(1, 1_000_000)?,
            prefix: "pay".into(),
            days: 365,
        };
        let p = seed::run_payouts(url, &spec, |done| {
            tell(&spec.name, done, spec.commissions, "sales")
        })
        .await?;
        let mut out = std::io::stdout().lock();
        writeln!(
            out,
            "PAYOUTS_SEED_SECONDS={:.1}",
            started.elapsed().as_secs_f64()
        )?;
        writeln!(out, "PAYOUTS_PROGRAM={}", p.id)?;
        writeln!(out, "PAYOUTS_PARTNERS={}", p.partners)?;
        writeln!(out, "PAYOUTS_CUSTOMERS={}", p.customers)?;
        writeln!(out, "PAYOUTS_COMMISSIONS={}", p.commissions)?;
        return Ok(());
    }
    let (big, small) = (count(1, 10_000_000)?, count(2, 10_000)?);
    let spec = |name: &str, clicks, partners, prefix: &str| ProgramSpec {
        name: name.into(),
        clicks,
        partners,
        link_prefix: format!("{prefix}-p"),
        key_prefix: format!("{prefix}-c"),
    };
    let opts = SeedOptions {
        programs: vec![
            spec("Large program", big, 50, "big"),
            spec("Small program", small, 5, "small"),
        ],
        days: 365,
        user_password: "bench password".into(),
    };
    let report = seed::run(url, &opts, |k, done| {
        let p = &opts.programs[k];
        tell(&p.name, done, p.clicks, "clicks")
    })
    .await?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "SEED_SECONDS={:.1}", started.elapsed().as_secs_f64())?;
    writeln!(out, "SESSION_TOKEN={}", report.session_token)?;
    for (name, p) in ["BIG", "SMALL"].iter().zip(&report.programs) {
        writeln!(out, "{name}_PROGRAM={}", p.id)?;
        writeln!(out, "{name}_API_TOKEN={}", p.api_token)?;
        writeln!(out, "{name}_LINK={}", p.short_link)?;
        writeln!(out, "{name}_LINK_ID={}", p.link_id)?;
        writeln!(out, "{name}_CLICKS={}", p.clicks)?;
        writeln!(out, "{name}_LEADS={}", p.leads)?;
        writeln!(out, "{name}_SALES={}", p.sales)?;
    }
    Ok(())
}
