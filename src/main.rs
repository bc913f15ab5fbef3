//! The `reftrack` binary: parses the command line and calls into the library.

use std::process::ExitCode;

use clap::Parser;
use reftrack::config::{Cli, Command};

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("REFTRACK_LOG")
                .unwrap_or_else(|_| "reftrack=info,tower_http=warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        None => serve(cli.serve).await,
        Some(Command::Serve(args)) => serve(args).await,
        Some(Command::Migrate(db)) => reftrack::store::migrate(&db.database_url)
            .await
            .map(|()| println!("migrations applied")),
        Some(Command::Admin(args)) => match reftrack::cli::run_admin(args).await {
            Ok(true) => Ok(()),
            Ok(false) => return ExitCode::FAILURE,
            Err(e) => Err(e),
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(args: reftrack::config::ServeArgs) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", args.listen))?;
    reftrack::serve(args, listener).await
}
