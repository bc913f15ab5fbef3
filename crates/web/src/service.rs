//! Service endpoints: liveness and readiness.

use axum::extract::State;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::error::{Error, ErrorBody, Result};
use super::AppState;

/// `/healthz` and `/readyz`.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(healthz))
        .routes(routes!(readyz))
}

/// The state of the service.
#[derive(Debug, Serialize, ToSchema)]
pub struct ServiceStatus {
    /// `ok` (healthz) or `ready` (readyz).
    pub status: String,
}

/// Liveness: the process is up.
#[utoipa::path(
    get,
    path = "/healthz",
    tag = "service",
    responses((status = 200, description = "Up", body = ServiceStatus)),
)]
async fn healthz() -> Json<ServiceStatus> {
    Json(ServiceStatus {
        status: "ok".into(),
    })
}

/// Readiness: the database answers within 2 s; 503 otherwise.
#[utoipa::path(
    get,
    path = "/readyz",
    tag = "service",
    responses(
        (status = 200, description = "Ready", body = ServiceStatus),
        (status = 503, description = "Database unavailable", body = ErrorBody),
    ),
)]
async fn readyz(State(state): State<AppState>) -> Result<Json<ServiceStatus>> {
    match tokio::time::timeout(std::time::Duration::from_secs(2), state.app.ping()).await {
        Ok(Ok(())) => Ok(Json(ServiceStatus {
            status: "ready".into(),
        })),
        Ok(Err(e)) => Err(Error::Unavailable(anyhow::anyhow!(
            "readiness check failed: {e}"
        ))),
        Err(_) => Err(Error::Unavailable(anyhow::anyhow!(
            "readiness check timed out"
        ))),
    }
}
