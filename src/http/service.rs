//! Service endpoints: liveness and readiness (product.md §6).

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::AppState;

/// `/healthz` and `/readyz`.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
}

/// The process is up.
async fn healthz() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}

/// The database answers within 2 s; 503 otherwise.
async fn readyz(State(state): State<AppState>) -> Result<Json<Value>> {
    match tokio::time::timeout(std::time::Duration::from_secs(2), state.store.ping()).await {
        Ok(Ok(())) => Ok(Json(json!({ "status": "ready" }))),
        Ok(Err(e)) => Err(Error::Unavailable(anyhow::anyhow!(
            "readiness check failed: {e}"
        ))),
        Err(_) => Err(Error::Unavailable(anyhow::anyhow!(
            "readiness check timed out"
        ))),
    }
}
