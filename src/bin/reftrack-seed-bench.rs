//! `reftrack-seed-bench`: fills a database for `scripts/bench` (see `reftrack::seed`).
//!
//! ```text
//! reftrack-seed-bench DATABASE_URL [BIG_CLICKS] [SMALL_CLICKS]
//! ```
//!
//! Seeds a program of `BIG_CLICKS` click events (10,000,000 by default), one of
//! `SMALL_CLICKS` (10,000), each with its customers, leads, sales and rollups over the
//! last 365 days, then prints `KEY=value` lines for
//! the load generator.

use std::io::Write;
use std::time::Instant;

use reftrack::seed::{self, ProgramSpec, SeedOptions};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(url) = args.first() else {
        anyhow::bail!("usage: reftrack-seed-bench DATABASE_URL [BIG_CLICKS] [SMALL_CLICKS]");
    };
    let count = |i: usize, default: u64| -> anyhow::Result<u64> {
        Ok(match args.get(i) {
            Some(v) => v.replace('_', "").parse()?,
            None => default,
        })
    };
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
    let started = Instant::now();
    let mut last = Instant::now();
    let report = seed::run(url, &opts, |k, done| {
        if last.elapsed().as_secs() >= 10 || done == opts.programs[k].clicks {
            last = Instant::now();
            eprintln!(
                "seed: {}: {done} of {} clicks ({:.0} s)",
                opts.programs[k].name,
                opts.programs[k].clicks,
                started.elapsed().as_secs_f64()
            );
        }
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
