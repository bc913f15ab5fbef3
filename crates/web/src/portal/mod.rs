//! The partner portal: server-rendered pages under `/partner/` (sign-in, invites,
//! applications with the program's terms, the overview with earnings, terms, the links
//! to share and a daily chart, links, commissions, payouts and settings).
//!
//! Pages are askama templates (`templates/partner/`) filled by handlers that call the
//! service layer ([`reftrack_service`]) directly, on the page layer shared with the owner's
//! dashboard ([`crate::pages`]). A page's session is the partner session token in
//! the `rt_partner` cookie ([`session`]); every POST must come from this site (its
//! `Origin`, or `Referer`, names this server), and every error is an HTML page.

mod auth;
mod overview;
mod programs;
mod session;
mod settings;
mod terms;
mod view;

use axum::middleware;
use axum::routing::{any, get, post};
use axum::Router;

use super::pages::session::same_origin_posts;
use super::pages::sign_in::{login, login_page, logout};
use super::pages::two_factor;
use super::pages::view::{not_found, page_headers};
use super::AppState;
use session::Signed;

/// The portal's pages.
pub fn router() -> Router<AppState> {
    // Every form that checks or hashes a password (sign-in, invites, applications,
    // password changes) or mails a reset link counts against the per-client-IP login
    // limit, as its API twin does.
    let sign_in = Router::new()
        .route(
            "/partner/login",
            get(login_page::<Signed>).post(login::<Signed>),
        )
        .route(
            "/partner/invite",
            get(auth::invite_page).post(auth::accept_invite),
        )
        .route("/partner/reset", get(auth::reset_page).post(auth::reset))
        .route(
            "/partner/apply/{program_id}",
            get(auth::apply_page).post(auth::apply),
        )
        .route(
            "/partner/settings/password",
            post(settings::change_password),
        )
        .route(
            "/partner/settings",
            get(settings::settings).post(settings::save_profile),
        )
        .route("/partner/two-factor", get(two_factor::page::<Signed>))
        .route(
            "/partner/two-factor/setup",
            post(two_factor::setup::<Signed>),
        )
        .route(
            "/partner/two-factor/enable",
            post(two_factor::enable::<Signed>),
        )
        .route(
            "/partner/two-factor/disable",
            post(two_factor::disable::<Signed>),
        )
        .route_layer(middleware::from_fn(super::rate_limit::logins));
    Router::new()
        .merge(sign_in)
        .route("/partner/logout", post(logout::<Signed>))
        .route("/partner", get(overview::overview))
        .route("/partner/", get(overview::to_overview))
        .route(
            "/partner/programs/{id}/links",
            get(programs::links).post(programs::create_link),
        )
        .route(
            "/partner/programs/{id}/commissions",
            get(programs::commissions),
        )
        .route(
            "/partner/programs/{id}/commissions.csv",
            get(programs::commissions_csv),
        )
        .route("/partner/programs/{id}/payouts", get(programs::payouts))
        .route("/partner/{*rest}", any(not_found))
        .layer(middleware::from_fn(same_origin_posts))
        .layer(middleware::from_fn_with_state(view::PORTAL, page_headers))
}
