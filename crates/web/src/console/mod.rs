//! The owner's dashboard: server-rendered pages under `/app/` where a program's owners
//! and their team run it in the browser. `/` leads there (or, on a server without any
//! user yet, to the first-run setup).
//!
//! Pages: the first-run setup and sign-in ([`first_run`], [`auth`]), the programs
//! ([`programs`]), and for each program its overview with charts ([`overview`]), setup
//! checklist and snippets ([`install`]), events ([`events`]), partners and links
//! ([`partners`], with the links' coupon codes), commissions ([`commissions`]), the
//! commissions held by the fraud rules and the rules themselves ([`review`]), balances
//! and payouts ([`payouts`]), settings ([`settings`]) and outbound webhooks with their
//! deliveries ([`webhooks`]).
//!
//! Handlers call the same service-layer functions as the JSON API ([`reftrack_service`]) with
//! the signed-in user's `Caller` (or, for the dashboard reads, its user id), so the role
//! rules and their 403s are the API's; pages only leave out what the role may not use
//! ([`frame::Head`]). The session is the `rt_session` cookie ([`session`]); the frame,
//! forms, error pages, same-origin rule and assets are the page layer shared with the
//! partner portal ([`crate::pages`]).

mod audit;
mod auth;
mod bounties;
mod commissions;
mod events;
mod first_run;
mod frame;
mod groups;
mod install;
mod overview;
mod partners;
mod payouts;
mod programs;
mod review;
mod session;
mod settings;
mod webhooks;

use axum::middleware;
use axum::routing::{any, get, post, MethodRouter};
use axum::Router;

use super::pages::session::{same_origin_posts, see_other};
use super::pages::sign_in::{login, login_page, logout};
use super::pages::two_factor;
use super::pages::view::{not_found, page_headers};
use super::AppState;
use session::Signed;

/// The dashboard's pages, and `/`.
pub fn router() -> Router<AppState> {
    // Sign-in, the first run (which hashes a password) and two-factor's pages (which
    // check codes) count against the per-client-IP login limit, as the API's sign-in does.
    let sign_in = Router::new()
        .route(
            "/app/login",
            get(login_page::<Signed>).post(login::<Signed>),
        )
        .route("/app/setup", get(first_run::page).post(first_run::submit))
        .route("/app/two-factor", get(two_factor::page::<Signed>))
        .route("/app/two-factor/setup", post(two_factor::setup::<Signed>))
        .route("/app/two-factor/enable", post(two_factor::enable::<Signed>))
        .route(
            "/app/two-factor/disable",
            post(two_factor::disable::<Signed>),
        )
        .route_layer(middleware::from_fn(super::rate_limit::logins));
    // A program's pages, below the address of its overview.
    let program_pages: Vec<(&str, MethodRouter<AppState>)> = vec![
        ("", get(overview::overview)),
        ("/setup", get(install::setup)),
        ("/events", get(events::events)),
        ("/partners", get(partners::list).post(partners::add)),
        (
            "/partners/{partner_id}",
            get(partners::detail).post(partners::edit),
        ),
        ("/partners/{partner_id}/status", post(partners::set_status)),
        ("/partners/{partner_id}/group", post(partners::set_group)),
        (
            "/partners/{partner_id}/bonuses",
            post(partners::create_bonus),
        ),
        ("/groups", get(groups::list).post(groups::create)),
        ("/groups/{group_id}", get(groups::detail).post(groups::save)),
        ("/groups/{group_id}/delete", post(groups::delete)),
        ("/bounties", get(bounties::list).post(bounties::create)),
        (
            "/bounties/{bounty_id}",
            get(bounties::detail).post(bounties::save),
        ),
        ("/bounties/{bounty_id}/archive", post(bounties::archive)),
        ("/partners/{partner_id}/invite", post(partners::invite)),
        ("/partners/{partner_id}/links", post(partners::create_link)),
        (
            "/partners/{partner_id}/coupons",
            post(partners::create_coupon),
        ),
        ("/links/{link_id}/status", post(partners::set_link_status)),
        (
            "/links/{link_id}/coupons/{coupon_id}/archive",
            post(partners::archive_coupon),
        ),
        ("/commissions", get(commissions::commissions)),
        ("/commissions.csv", get(commissions::commissions_csv)),
        (
            "/commissions/{commission_id}/approve",
            post(commissions::approve),
        ),
        (
            "/commissions/{commission_id}/reject",
            post(commissions::reject),
        ),
        ("/review", get(review::review)),
        ("/review/{commission_id}/approve", post(review::approve)),
        ("/review/{commission_id}/reject", post(review::reject)),
        ("/settings/fraud-rules", post(review::save_rules)),
        (
            "/payouts",
            get(payouts::payouts).post(payouts::create_payout),
        ),
        ("/payouts/{payout_id}", get(payouts::payout)),
        ("/payouts/{payout_id}/export", get(payouts::export)),
        ("/payouts/{payout_id}/paid", post(payouts::mark_paid)),
        ("/payouts/{payout_id}/cancel", post(payouts::cancel)),
        ("/settings", get(settings::settings).post(settings::save)),
        ("/settings/token", post(settings::rotate_token)),
        ("/settings/audit", get(audit::audit)),
        ("/settings/audit.csv", get(audit::audit_csv)),
        ("/settings/address", post(settings::save_address)),
        ("/settings/two-factor", post(settings::require_two_factor)),
        ("/settings/members", post(settings::add_member)),
        ("/settings/members/{user_id}", post(settings::update_member)),
        (
            "/settings/members/{user_id}/remove",
            post(settings::remove_member),
        ),
        (
            "/settings/webhooks",
            get(webhooks::list).post(webhooks::add),
        ),
        (
            "/settings/webhooks/{webhook_id}",
            get(webhooks::detail).post(webhooks::edit),
        ),
        (
            "/settings/webhooks/{webhook_id}/enabled",
            post(webhooks::set_enabled),
        ),
        (
            "/settings/webhooks/{webhook_id}/delete",
            post(webhooks::delete),
        ),
        (
            "/settings/webhooks/{webhook_id}/test",
            post(webhooks::send_test),
        ),
        (
            "/settings/webhooks/{webhook_id}/deliveries",
            get(webhooks::deliveries),
        ),
        (
            "/settings/webhooks/{webhook_id}/deliveries/{delivery_id}/retry",
            post(webhooks::retry),
        ),
    ];
    let mut router = Router::new()
        .route("/", get(auth::root))
        .merge(sign_in)
        .route("/app/logout", post(logout::<Signed>))
        .route("/app", get(programs::home))
        .route("/app/", get(|| async { see_other("/app") }))
        .route("/app/programs", post(programs::create));
    for (path, page) in program_pages {
        router = router.route(&format!("/app/programs/{{id}}{path}"), page);
    }
    router
        .route("/app/{*rest}", any(not_found))
        .layer(middleware::from_fn(same_origin_posts))
        .layer(middleware::from_fn_with_state(frame::CONSOLE, page_headers))
}
