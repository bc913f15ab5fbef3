//! The management API, under `/api/admin`, behind the admin token or a dashboard session
//! ([`Manager`]): workspaces, their members and the dashboard users ([`workspaces`]),
//! programs ([`programs`]), partners and their standing in programs ([`partners`]), and
//! referral links ([`links`]), with their lists; partner groups ([`groups`]), bonuses
//! ([`bonuses`]) and bounties ([`bounties`]); the server's exchange rates ([`rates`]). Handlers validate their bodies and call the
//! service layer ([`reftrack_service::programs`], [`reftrack_service::programs::management`]).

pub mod bonuses;
pub mod bounties;
pub mod groups;
pub mod links;
pub mod partners;
pub mod programs;
pub mod rates;
pub mod workspaces;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::Json;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::bearer::{bearer, Bearer};
use super::error::{Error, Result};
use super::origin::RequestOrigin;
use super::AppState;
use reftrack_service::Caller;

/// Routes of the management API.
pub fn router() -> OpenApiRouter<AppState> {
    // The order of the routes is the order of the paths in the OpenAPI document.
    OpenApiRouter::new()
        .routes(routes!(workspaces::create_workspace))
        .routes(routes!(workspaces::add_member))
        .routes(routes!(
            workspaces::update_member,
            workspaces::remove_member
        ))
        .routes(routes!(workspaces::audit_log))
        .routes(routes!(workspaces::update_workspace))
        .routes(routes!(programs::create_program))
        .routes(routes!(programs::get_program, programs::update_program))
        .routes(routes!(programs::rotate_token))
        .routes(routes!(partners::add_program_partner))
        .routes(routes!(programs::set_payment_account))
        .routes(routes!(partners::create_partner))
        .routes(routes!(partners::update_partner))
        .routes(routes!(links::create_link))
        .routes(routes!(links::get_link, links::update_link))
        .routes(routes!(workspaces::create_user))
        .routes(routes!(workspaces::update_user))
        .routes(routes!(workspaces::list_workspaces))
        .routes(routes!(programs::list_programs))
        .routes(routes!(partners::list_partners))
        .routes(routes!(workspaces::list_users))
        .routes(routes!(partners::list_program_partners))
        .routes(routes!(partners::set_program_partner_status))
        .routes(routes!(bonuses::create_bonus))
        .routes(routes!(groups::list_groups, groups::create_group))
        .routes(routes!(
            groups::get_group,
            groups::update_group,
            groups::delete_group
        ))
        .routes(routes!(bounties::list_bounties, bounties::create_bounty))
        .routes(routes!(
            bounties::get_bounty,
            bounties::update_bounty,
            bounties::archive_bounty
        ))
        .routes(routes!(links::list_links))
        .routes(routes!(rates::import_rates, rates::list_rates))
}

/// The caller of a management call: the operator's admin token, or a dashboard session
/// (then scoped to its workspaces by the service layer). Rejects with 401 when the
/// request carries neither.
pub struct Manager(pub Caller);

impl FromRequestParts<AppState> for Manager {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self> {
        let Bearer::Token(token) = bearer(&parts.headers) else {
            return Err(unauthorized());
        };
        let origin = RequestOrigin::of(parts, state);
        if state.app.is_admin_token(token).await? {
            return Ok(Manager(origin.caller(Caller::operator())));
        }
        match state.app.session_user(token).await? {
            Some((user, _)) => {
                let caller = state.app.member_caller(user.user_id, &user.email).await?;
                Ok(Manager(origin.caller(caller)))
            }
            None => Err(unauthorized()),
        }
    }
}

fn unauthorized() -> Error {
    Error::Unauthorized("Missing or invalid admin token or dashboard session".into())
}

/// A created record: `201 Created` with the record as JSON.
pub(crate) fn created<T>(record: T) -> (StatusCode, Json<T>) {
    (StatusCode::CREATED, Json(record))
}

/// The record of work accepted: `202 Accepted` with the record as JSON.
pub(crate) fn accepted<T>(record: T) -> (StatusCode, Json<T>) {
    (StatusCode::ACCEPTED, Json(record))
}
