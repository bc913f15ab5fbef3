//! `reftrack-bench-sink`: the webhook receiver of `scripts/bench`. Answers every `POST`
//! with 204 at once and counts them; `GET /count` answers the count. Prints
//! `SINK_URL=http://127.0.0.1:PORT` once it listens.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::Router;

#[tokio::main(flavor = "multi_thread", worker_threads = 1)]
async fn main() -> anyhow::Result<()> {
    let count = Arc::new(AtomicU64::new(0));
    let app =
        Router::new()
            .route(
                "/hook",
                post(|State(c): State<Arc<AtomicU64>>| async move {
                    c.fetch_add(1, Ordering::Relaxed);
                    StatusCode::NO_CONTENT
                }),
            )
            .route(
                "/count",
                get(|State(c): State<Arc<AtomicU64>>| async move {
                    c.load(Ordering::Relaxed).to_string()
                }),
            )
            .with_state(count);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    println!("SINK_URL=http://{}", listener.local_addr()?);
    axum::serve(listener, app).await?;
    Ok(())
}
