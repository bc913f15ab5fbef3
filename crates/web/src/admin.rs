//! The management API, under `/api/admin`, behind the admin token. Handlers validate
//! their bodies and call the service layer ([`reftrack_service::admin`]).

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::bearer::{bearer, Bearer};
use super::error::{Error, Result};
use super::extract::{JsonBody, OptionalJsonBody};
use super::AppState;
use reftrack_service::admin::{
    LinkBody, LinkPatchBody, MemberBody, MemberPatchBody, PartnerBody, PartnerPatchBody,
    PaymentAccountBody, ProgramBody, ProgramPartnerBody, ProgramPatchBody, ProgramView,
    RotateTokenBody, UserBody, UserPatchBody, WorkspaceBody,
};
use reftrack_service::Caller;
use reftrack_store::{Link, Membership, Partner, PartnerProgram, User, Workspace};

/// Routes of the management API.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_workspace))
        .routes(routes!(add_member))
        .routes(routes!(update_member))
        .routes(routes!(create_program))
        .routes(routes!(get_program, update_program))
        .routes(routes!(rotate_token))
        .routes(routes!(add_program_partner))
        .routes(routes!(set_payment_account))
        .routes(routes!(create_partner))
        .routes(routes!(update_partner))
        .routes(routes!(create_link))
        .routes(routes!(get_link, update_link))
        .routes(routes!(create_user))
        .routes(routes!(update_user))
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
        if state.app.is_admin_token(token).await? {
            return Ok(Manager(Caller::Operator));
        }
        match state.app.session_user(token).await? {
            Some((user, _)) => Ok(Manager(state.app.member_caller(user.user_id).await?)),
            None => Err(unauthorized()),
        }
    }
}

fn unauthorized() -> Error {
    Error::Unauthorized("Missing or invalid admin token or dashboard session".into())
}

/// Declares management endpoints whose handler only forwards to the service layer: each
/// takes the [`Manager`], its path ids and its JSON body, calls the `App` method named
/// after `=` with the caller, the ids and the body, and answers what it returns: with
/// `200` as JSON, with `201` as the created record, with `202` as the record of work
/// accepted. The OpenAPI description comes from the same declaration: the
/// first response text is the success's, the others answer [`ErrorBody`]; every endpoint
/// is under `tag` and takes the admin token or a dashboard session.
///
/// ```text
/// /// Change a member's role or status.
/// patch "/workspaces/{id}/members/{user_id}"
///     path(id: ("id" = i64, Path, …), user_id: ("user_id" = i64, Path, …))
///     body(b: JsonBody<MemberPatchBody>)
///     => update_member -> 200 Membership = update_member;
///     responses("The changed membership", 400 "Invalid field", 404 "Unknown membership");
/// ```
macro_rules! management_endpoints {
    (@reply 200 $out:ty) => { ::axum::Json<$out> };
    (@reply $status:literal $out:ty) => { (::axum::http::StatusCode, ::axum::Json<$out>) };
    (@answer 200 $v:expr) => { ::axum::Json($v) };
    (@answer 201 $v:expr) => { (::axum::http::StatusCode::CREATED, ::axum::Json($v)) };
    (@answer 202 $v:expr) => { (::axum::http::StatusCode::ACCEPTED, ::axum::Json($v)) };
    (tag = $tag:literal; $(
        $(#[doc = $doc:literal])*
        $method:ident $path:literal
        $(path($($arg:ident: $param:tt),+ $(,)?))?
        $(body($b:ident: $extract:ident<$body:ty>))?
        => $name:ident -> $status:tt $out:ty = $call:ident;
        responses($ok:literal $(, $code:literal $text:literal)* $(,)?);
    )+) => {$(
        $(#[doc = $doc])*
        #[utoipa::path(
            $method,
            path = $path,
            tag = $tag,
            $(request_body = $body,)?
            $(params($($param),+),)?
            security(("admin_token" = []), ("session" = [])),
            responses(
                (status = $status, description = $ok, body = $out),
                $((status = $code, description = $text, body = $crate::ErrorBody),)*
            ),
        )]
        async fn $name(
            $crate::admin::Manager(caller): $crate::admin::Manager,
            ::axum::extract::State(s): ::axum::extract::State<$crate::AppState>,
            // The path's ids, as many as there are names.
            $(
                $crate::extract::PathParams(ids):
                $crate::extract::PathParams<[i64; [$(stringify!($arg)),+].len()]>,
            )?
            $($extract($b): $extract<$body>,)?
        ) -> $crate::error::Result<management_endpoints!(@reply $status $out)> {
            $(let [$($arg),+] = ids;)?
            let done = s.app.$call(&caller, $($($arg,)+)? $($b)?).await?;
            Ok(management_endpoints!(@answer $status done))
        }
    )+};
}
pub(super) use management_endpoints;

management_endpoints! {
    tag = "management";

    /// Create a workspace.
    post "/workspaces"
        body(b: JsonBody<WorkspaceBody>)
        => create_workspace -> 201 Workspace = create_workspace;
        responses("Created", 400 "Invalid field");

    /// Create a program; the answer carries its API key, shown only here.
    post "/programs"
        body(b: JsonBody<ProgramBody>)
        => create_program -> 201 ProgramView = create_program;
        responses(
            "Created; carries the API key",
            400 "Invalid field",
            404 "Unknown workspace",
        );

    /// Show a program.
    get "/programs/{id}"
        path(id: ("id" = i64, Path, description = "id"))
        => get_program -> 200 ProgramView = program_view;
        responses("The program", 400 "Invalid field", 404 "Unknown program");

    /// Change a program; absent fields stay, `null` clears the nullable ones.
    patch "/programs/{id}"
        path(id: ("id" = i64, Path, description = "id"))
        body(b: JsonBody<ProgramPatchBody>)
        => update_program -> 200 ProgramView = update_program;
        responses("The changed program", 400 "Invalid field", 404 "Unknown program");

    /// Issue a new API key for a program. The old one stops working at once, or after
    /// `keep_old_for_hours` (up to 168), so servers can switch keys without refused
    /// calls; the body may be left out.
    post "/programs/{id}/rotate-token"
        path(id: ("id" = i64, Path, description = "id"))
        body(b: OptionalJsonBody<RotateTokenBody>)
        => rotate_token -> 200 ProgramView = rotate_program_token;
        responses(
            "The program with its new API key",
            400 "Invalid field",
            404 "Unknown program",
        );

    /// Create a partner.
    post "/partners"
        body(b: JsonBody<PartnerBody>)
        => create_partner -> 201 Partner = create_partner;
        responses(
            "Created",
            400 "Invalid field",
            404 "Unknown workspace_id",
            409 "The code is taken",
        );

    /// Change a partner's name, email or payout details; absent fields stay, `null` clears.
    /// Changing the email or payout details of a partner that is also in programs of a
    /// workspace the session does not manage is refused (403): that is for the partner
    /// itself, or the operator.
    patch "/partners/{id}"
        path(id: ("id" = i64, Path, description = "id"))
        body(b: JsonBody<PartnerPatchBody>)
        => update_partner -> 200 Partner = update_partner;
        responses("The changed partner", 400 "Invalid field", 404 "Unknown partner");

    /// Add a partner to a program (the partner-program record).
    post "/programs/{id}/partners"
        path(id: ("id" = i64, Path, description = "id"))
        body(b: JsonBody<ProgramPartnerBody>)
        => add_program_partner -> 201 PartnerProgram = add_program_partner;
        responses(
            "Created",
            400 "Invalid field",
            404 "Unknown program or partner",
            409 "The partner is already in the program",
        );

    /// Create a referral link.
    post "/links"
        body(b: JsonBody<LinkBody>)
        => create_link -> 201 Link = create_link;
        responses(
            "Created",
            400 "Invalid field",
            404 "Unknown program or partner",
            409 "The short_link is taken",
        );

    /// Show a referral link, with its click counter and active coupon codes.
    get "/links/{id}"
        path(id: ("id" = i64, Path, description = "id"))
        => get_link -> 200 Link = link;
        responses(
            "The link with its click counter",
            400 "Invalid field",
            404 "Unknown link",
        );

    /// Change a link's status or destination; absent fields stay, a `null` destination
    /// falls back to the program's.
    patch "/links/{id}"
        path(id: ("id" = i64, Path, description = "id"))
        body(b: JsonBody<LinkPatchBody>)
        => update_link -> 200 Link = update_link;
        responses("The changed link", 400 "Invalid field", 404 "Unknown link");

    /// Create a dashboard user (password stored with argon2id).
    post "/users"
        body(b: JsonBody<UserBody>)
        => create_user -> 201 User = create_user;
        responses("Created", 400 "Invalid field", 409 "The email is taken");

    /// Change a dashboard user's name or password: the operator's alone, for a user who
    /// forgot a password. A new password ends every session the user had.
    patch "/users/{id}"
        path(id: ("id" = i64, Path, description = "id"))
        body(b: JsonBody<UserPatchBody>)
        => update_user -> 200 User = update_user;
        responses(
            "The changed user",
            400 "Invalid field",
            403 "Not the operator",
            404 "Unknown user",
        );

    /// Add a user to a workspace with a role.
    post "/workspaces/{id}/members"
        path(id: ("id" = i64, Path, description = "id"))
        body(b: JsonBody<MemberBody>)
        => add_member -> 201 Membership = add_member;
        responses(
            "Created",
            400 "Invalid field",
            404 "Unknown workspace or user",
            409 "Already a member",
        );

    /// Change a member's role or status.
    patch "/workspaces/{id}/members/{user_id}"
        path(
            id: ("id" = i64, Path, description = "id"),
            user_id: ("user_id" = i64, Path, description = "user id"),
        )
        body(b: JsonBody<MemberPatchBody>)
        => update_member -> 200 Membership = update_member;
        responses("The changed membership", 400 "Invalid field", 404 "Unknown membership");

    /// Set a program's payment-account fields.
    put "/programs/{id}/payment-account"
        path(id: ("id" = i64, Path, description = "id"))
        body(b: JsonBody<PaymentAccountBody>)
        => set_payment_account -> 200 ProgramView = set_payment_account;
        responses("The program", 400 "Invalid field", 404 "Unknown program");
}
