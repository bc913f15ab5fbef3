//! An owner's bonus to a partner, under
//! `/api/admin/programs/{id}/partners/{partner_id}/bonuses`
//! ([`reftrack_service::money::bonuses`]).

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;

use super::{created, Manager};
use crate::error::{ErrorBody, Result};
use crate::extract::{JsonBody, PathParams};
use crate::AppState;
use reftrack_service::money::bonuses::BonusBody;
use reftrack_store::CommissionRow;

/// Give a partner a bonus.
///
/// The bonus is a commission of kind `bonus` in the program's currency, approved at once
/// (no hold) and paid with the partner's next payout. The partner must be approved in the
/// program.
#[utoipa::path(
    post,
    path = "/programs/{id}/partners/{partner_id}/bonuses",
    tag = "management",
    request_body = BonusBody,
    params(
        ("id" = i64, Path, description = "Program id"),
        ("partner_id" = i64, Path, description = "Partner id"),
    ),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 201, description = "The bonus's commission", body = CommissionRow),
        (status = 400, description = "Invalid amount or description", body = ErrorBody),
        (status = 404, description = "Unknown program, or the partner is not in it", body = ErrorBody),
        (status = 409, description = "The partner is not approved in the program", body = ErrorBody),
    ),
)]
pub(super) async fn create_bonus(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams((id, partner_id)): PathParams<(i64, i64)>,
    JsonBody(body): JsonBody<BonusBody>,
) -> Result<(StatusCode, Json<CommissionRow>)> {
    Ok(created(
        s.app.give_bonus(&caller, id, partner_id, body).await?,
    ))
}
