//! The `reftrack` binary: parses the command line and calls into the library.

use std::process::ExitCode;

use clap::Parser;
use reftrack::config::{Cli, Command};

/// mimalloc instead of glibc's allocator: see docs/benchmarks.md.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> ExitCode {
    if let Err(e) = reftrack::logging::init() {
        eprintln!("error: {}", reftrack::error_line(&e));
        return ExitCode::FAILURE;
    }
    let cli = Cli::parse();
    reftrack::config::warn_of_unknown_settings();
    let result = match cli.command {
        None => exit_on_error(serve(cli.serve).await),
        Some(Command::Serve(args)) => exit_on_error(serve(args).await),
        Some(Command::Migrate(db)) => reftrack::store::migrate(&db.database_url)
            .await
            .map(|()| println!("migrations applied")),
        Some(Command::Admin(args)) => answered(reftrack::cli::run_admin(args).await),
        Some(Command::Commissions(args)) => {
            answered(reftrack::cli::payouts::run_commissions(args).await)
        }
        Some(Command::Payouts(args)) => answered(reftrack::cli::payouts::run_payouts(args).await),
        Some(Command::Rates(args)) => answered(reftrack::cli::rates::run_rates(args).await),
        Some(Command::Verify(db)) => match reftrack::verify::run(&db.database_url).await {
            Ok(report) => {
                if let Err(e) = reftrack::cli::print_json(&report.to_json()) {
                    eprintln!("error: {}", reftrack::error_line(&e));
                    return ExitCode::FAILURE;
                }
                if report.ok() {
                    Ok(())
                } else {
                    eprintln!("verify: drift or broken invariants found (see report)");
                    return ExitCode::FAILURE;
                }
            }
            Err(e) => Err(e),
        },
        Some(Command::Backup(args)) => reftrack::backup::run_backup(args).await,
        Some(Command::Restore(args)) => reftrack::backup::run_restore(args).await,
        Some(Command::Healthcheck(args)) => reftrack::healthcheck::run(args).await,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", reftrack::error_line(&e));
            ExitCode::FAILURE
        }
    }
}

/// The result of a command that printed its own answer or error: `Ok(false)` (it
/// printed an error) exits with failure, without a second message.
fn answered(result: anyhow::Result<bool>) -> anyhow::Result<()> {
    match result {
        Ok(true) => Ok(()),
        Ok(false) => std::process::exit(1),
        Err(e) => Err(e),
    }
}

/// A failed serve (including a shutdown that overran its grace period) exits at once:
/// returning would wait for any blocking task still running.
fn exit_on_error(result: anyhow::Result<()>) -> anyhow::Result<()> {
    if let Err(e) = result {
        eprintln!("error: {}", reftrack::error_line(&e));
        std::process::exit(1);
    }
    Ok(())
}

async fn serve(args: reftrack::config::ServeArgs) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", args.listen))?;
    reftrack::serve(args, listener).await
}
