//! `reftrack commissions …` and `reftrack payouts …`: paying partners from the command
//! line, for operators who script it. Each calls the same service-layer function as the
//! management API; answers print as its JSON, exports as its CSV.

use std::io::Write;

use clap::{Args, Subcommand};
use futures::{FutureExt, StreamExt};
use serde_json::Value;

use super::{answer, run_on, Paging};
use crate::app::money::bonuses::BonusBody;
use crate::app::money::exports::{self, PayoutFormat};
use crate::app::money::payouts::{CommissionParams, MarkPaidBody, RejectBody};
use crate::app::App;
use crate::app::{Caller, PageParams};
use crate::config::DatabaseArgs;
use crate::config::WebhookArgs;

/// Paging of a list that also exports: `--limit`, `--cursor`, `--csv`.
#[derive(Debug, Clone, Args)]
pub struct PageOptions {
    #[command(flatten)]
    pub paging: Paging,
    /// Every matching row as CSV with a header row, instead of a page of JSON.
    #[arg(long)]
    pub csv: bool,
}

impl PageOptions {
    fn page(&self) -> PageParams {
        self.paging.page()
    }
}

/// Options of `reftrack commissions`.
#[derive(Debug, Args)]
pub struct CommissionsArgs {
    #[command(flatten)]
    pub database: DatabaseArgs,
    #[command(subcommand)]
    pub command: CommissionsCommand,
}

/// One commission operation.
#[derive(Debug, Subcommand)]
pub enum CommissionsCommand {
    /// List a program's commissions, newest first.
    List {
        program_id: i64,
        /// pending, approved, paid, reversed or rejected.
        #[arg(long)]
        status: Option<String>,
        #[arg(long)]
        partner_id: Option<String>,
        /// First day, YYYY-MM-DD (UTC).
        #[arg(long)]
        from: Option<String>,
        /// Last day, YYYY-MM-DD (UTC), inclusive.
        #[arg(long)]
        to: Option<String>,
        #[command(flatten)]
        page: PageOptions,
    },
    /// Approve a pending commission ahead of its hold period.
    Approve { id: i64 },
    /// Reject a pending or unpaid approved commission.
    Reject {
        id: i64,
        #[arg(long)]
        reason: String,
    },
    /// Give an approved partner of a program a bonus, due at once.
    Bonus {
        program_id: i64,
        partner_id: i64,
        /// In the program's currency's minor units.
        #[arg(long)]
        amount_cents: i64,
        /// What it is for, as the partner reads it.
        #[arg(long)]
        description: String,
    },
    /// The partners' pending, approved and paid amounts in a program.
    Balances {
        program_id: i64,
        #[command(flatten)]
        paging: Paging,
    },
}

/// Options of `reftrack payouts`.
#[derive(Debug, Args)]
pub struct PayoutsArgs {
    #[command(flatten)]
    pub database: DatabaseArgs,
    #[command(subcommand)]
    pub command: PayoutsCommand,
}

/// One payout operation.
#[derive(Debug, Subcommand)]
pub enum PayoutsCommand {
    /// Create a payout of every qualifying partner's approved balance.
    Create { program_id: i64 },
    /// List a program's payouts, newest first.
    List {
        program_id: i64,
        #[command(flatten)]
        page: PageOptions,
    },
    /// Show a payout with its items.
    Show { id: i64 },
    /// Mark a pending payout paid.
    MarkPaid {
        id: i64,
        /// The transfer's reference in the tool that sent the money.
        #[arg(long)]
        reference: Option<String>,
    },
    /// Cancel a pending payout.
    Cancel { id: i64 },
    /// Print a payout's items as CSV: csv, paypal (PayPal Payouts' bulk file) or wise
    /// (Wise's batch payment file).
    Export {
        id: i64,
        #[arg(long, default_value = "csv")]
        format: String,
    },
}

/// Writes `bytes` to standard output.
pub(super) fn print(bytes: &[u8]) -> Result<(), String> {
    std::io::stdout()
        .lock()
        .write_all(bytes)
        .map_err(|e| e.to_string())
}

/// Prints every chunk of an export as it is read.
pub(super) async fn print_chunks<T>(
    chunks: crate::app::Result<futures::stream::BoxStream<'static, crate::app::Result<Vec<T>>>>,
    write: fn(&[T], bool) -> Vec<u8>,
) -> Result<Option<Value>, String> {
    let mut chunks = chunks.map_err(|e| e.to_string())?;
    print(&write(&[], true))?;
    while let Some(chunk) = chunks.next().await {
        print(&write(&chunk.map_err(|e| e.to_string())?, false))?;
    }
    Ok(None)
}

impl CommissionsCommand {
    async fn run(self, app: &App) -> Result<Option<Value>, String> {
        match self {
            CommissionsCommand::List {
                program_id,
                status,
                partner_id,
                from,
                to,
                page,
            } => {
                let params = CommissionParams {
                    status,
                    partner_id,
                    from,
                    to,
                    flagged: None,
                };
                if page.csv {
                    let chunks = app
                        .export_commissions(&Caller::operator(), program_id, &params)
                        .await;
                    return print_chunks(chunks, exports::commissions_csv).await;
                }
                answer(
                    app.list_commissions(&Caller::operator(), program_id, &params, &page.page())
                        .await,
                )
                .map(Some)
            }
            CommissionsCommand::Approve { id } => {
                answer(app.approve_commission(&Caller::operator(), id).await).map(Some)
            }
            CommissionsCommand::Reject { id, reason } => answer(
                app.reject_commission(&Caller::operator(), id, RejectBody { reason })
                    .await,
            )
            .map(Some),
            CommissionsCommand::Bonus {
                program_id,
                partner_id,
                amount_cents,
                description,
            } => {
                let b = BonusBody {
                    amount_cents,
                    description,
                };
                answer(
                    app.give_bonus(&Caller::operator(), program_id, partner_id, b)
                        .await,
                )
                .map(Some)
            }
            CommissionsCommand::Balances { program_id, paging } => answer(
                app.balances(&Caller::operator(), program_id, &paging.page())
                    .await,
            )
            .map(Some),
        }
    }
}

impl PayoutsCommand {
    async fn run(self, app: &App) -> Result<Option<Value>, String> {
        match self {
            PayoutsCommand::Create { program_id } => {
                answer(app.create_payout(&Caller::operator(), program_id).await).map(Some)
            }
            PayoutsCommand::List { program_id, page } => {
                if page.csv {
                    let chunks = app.export_payouts(&Caller::operator(), program_id).await;
                    return print_chunks(chunks, exports::payouts_csv).await;
                }
                answer(
                    app.list_payouts(&Caller::operator(), program_id, &page.page())
                        .await,
                )
                .map(Some)
            }
            PayoutsCommand::Show { id } => {
                answer(app.payout(&Caller::operator(), id).await).map(Some)
            }
            PayoutsCommand::MarkPaid { id, reference } => answer(
                app.mark_payout_paid(&Caller::operator(), id, MarkPaidBody { reference })
                    .await,
            )
            .map(Some),
            PayoutsCommand::Cancel { id } => {
                answer(app.cancel_payout(&Caller::operator(), id).await).map(Some)
            }
            PayoutsCommand::Export { id, format } => {
                let format = PayoutFormat::parse(Some(&format)).map_err(|e| e.to_string())?;
                let payout = app
                    .payout(&Caller::operator(), id)
                    .await
                    .map_err(|e| e.to_string())?;
                print(&exports::payout_file(&payout, format))?;
                Ok(None)
            }
        }
    }
}

/// Runs one `reftrack commissions` subcommand; returns whether it succeeded.
pub async fn run_commissions(args: CommissionsArgs) -> anyhow::Result<bool> {
    let command = args.command;
    run_on(&args.database, WebhookArgs::default(), None, |app| {
        command.run(app).boxed()
    })
    .await
}

/// Runs one `reftrack payouts` subcommand; returns whether it succeeded.
pub async fn run_payouts(args: PayoutsArgs) -> anyhow::Result<bool> {
    let command = args.command;
    run_on(&args.database, WebhookArgs::default(), None, |app| {
        command.run(app).boxed()
    })
    .await
}
