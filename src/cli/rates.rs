//! `reftrack rates`: the server's exchange rates from the European Central Bank's
//! reference-rate file ([`crate::app::money::rates`]).

use clap::{Args, Subcommand};
use futures::FutureExt;
use serde_json::json;

use super::{answer, run_on};
use crate::config::{DatabaseArgs, WebhookArgs};

/// Options of `reftrack rates`.
#[derive(Debug, Args)]
pub struct RatesArgs {
    #[command(flatten)]
    pub database: DatabaseArgs,
    #[command(subcommand)]
    pub command: RatesCommand,
}

/// One rates operation.
#[derive(Debug, Subcommand)]
pub enum RatesCommand {
    /// Store the rates of an ECB reference-rate CSV (`eurofxref.csv`, the day's, or
    /// `eurofxref-hist.csv`, every day's; units per euro). A rate already stored for a
    /// day is replaced; sales waiting for these rates are converted by the running
    /// servers within a minute. Prints how many rates it stored.
    Import { file: std::path::PathBuf },
}

/// Runs one `reftrack rates` subcommand; returns whether it succeeded.
pub async fn run_rates(args: RatesArgs) -> anyhow::Result<bool> {
    let RatesCommand::Import { file } = args.command;
    let text = std::fs::read_to_string(&file)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", file.display()))?;
    run_on(&args.database, WebhookArgs::default(), None, |app| {
        async move {
            let done = app.import_ecb_file(&text).await.map(|done| {
                json!({
                    "stored": done.stored,
                    "first_day": done.first_day,
                    "last_day": done.last_day,
                    "skipped_currencies": done.skipped_currencies,
                })
            });
            answer(done).map(Some)
        }
        .boxed()
    })
    .await
}
