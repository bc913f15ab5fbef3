//! The management lists, under `/api/admin`: workspaces, programs, partners, a program's
//! partners (and their standing), links. Handlers read the query and call
//! [`reftrack_service::management`].

use axum::extract::{RawQuery, State};
use axum::Json;
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::admin::{management_endpoints, Manager};
use super::error::{ErrorBody, Result};
use super::extract::{read_list_query, JsonBody};
use super::payouts::ListQuery;
use super::AppState;
use reftrack_service::admin::ProgramView;
use reftrack_service::exports;
use reftrack_service::management::{LinkParams, PartnerStatusBody};
use reftrack_service::{Listed, PageParams};
use reftrack_store::{Link, Partner, PartnerProgram, ProgramPartnerRow, User, Workspace};

/// Routes of the management lists.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_workspaces))
        .routes(routes!(list_programs))
        .routes(routes!(list_partners))
        .routes(routes!(list_users))
        .routes(routes!(list_program_partners))
        .routes(routes!(set_program_partner_status))
        .routes(routes!(list_links))
}

/// The paging of a list that has no CSV form.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// Rows per page, 1 to 100 (default 50).
    #[param(value_type = Option<i64>, minimum = 1, maximum = 100)]
    pub limit: Option<String>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

impl PageQuery {
    /// The paging asked for.
    pub(super) fn page(self) -> PageParams {
        PageParams {
            limit: self.limit,
            cursor: self.cursor,
        }
    }
}

/// The filter of the program list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ProgramQuery {
    /// Only this workspace's programs.
    #[param(value_type = Option<i64>)]
    pub workspace_id: Option<String>,
}

/// The filter of the partner list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PartnerQuery {
    /// Partners whose name, email or code contains this text (any case).
    pub q: Option<String>,
}

/// The filter of the user list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct UserQuery {
    /// Users whose email or name contains this text (any case).
    pub q: Option<String>,
}

/// The filter of a program's partner list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ProgramPartnerQuery {
    /// `approved`, `pending`, `rejected` or `banned`.
    pub status: Option<String>,
}

/// The filters of the link list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LinkQuery {
    /// Only this program's links.
    #[param(value_type = Option<i64>)]
    pub program_id: Option<String>,
    /// Only this partner's links.
    #[param(value_type = Option<i64>)]
    pub partner_id: Option<String>,
    /// `active` or `inactive`.
    pub status: Option<String>,
}

impl LinkQuery {
    /// The service layer's parameters.
    fn params(self) -> LinkParams {
        LinkParams {
            program_id: self.program_id,
            partner_id: self.partner_id,
            status: self.status,
        }
    }
}

/// Declares management lists whose handler only reads the query and forwards to the
/// service layer: each takes the [`Manager`], its path ids and its query string, reads the
/// paging (`PageQuery`, or `ListQuery` for a list that exports) and then the filter, if
/// any, binds each argument named in the call, and calls the `App` method named after `=`
/// with the caller, the ids, those arguments and the page, answering the page as JSON.
/// With `csv(method, file name, writer)` the list also answers `format=csv`: every row of
/// the export `method`, called with the caller, the ids and the arguments, as the download
/// `writer` writes ([`ListQuery::page_or_csv`]). The OpenAPI description comes from the
/// same declaration, as with `management_endpoints`: the query's parameters are the filter's
/// and then the paging's. The module declaring lists imports [`Listed`], which utoipa
/// names the answer by.
///
/// ```text
/// /// List a program's partners with their totals, or export them with `?format=csv`.
/// get "/programs/{id}/partners"
///     path(id: ("id" = i64, Path, description = "Program id"))
///     query(ListQuery, q: ProgramPartnerQuery)
///     => list_program_partners -> ProgramPartnerRow
///         = program_partners(status = q.status.as_deref())
///         csv(export_program_partners, "program-{id}-partners.csv", exports::program_partners_csv);
///     responses("One page, or every row as text/csv", 404 "Unknown program");
/// ```
macro_rules! management_lists {
    // The answer: the page as JSON, or, with `csv`, the page or the export. The handler
    // passes its `list` and `page` in by name: hygiene hides them from this rule.
    (@answer $list:ident $page:ident [$($call:tt)+] ($($args:tt)*)) => {
        Ok(::axum::response::IntoResponse::into_response(::axum::Json(
            $($call)+($($args)* &$page).await?,
        )))
    };
    (@answer $list:ident $page:ident [$($call:tt)+] ($($args:tt)*)
        csv [$($export:tt)+] $file:literal $write:path) => {
        $list
            .page_or_csv(
                $($call)+($($args)* &$page),
                $($export)+($($args)*),
                format!($file),
                $write,
            )
            .await
    };
    (tag = $tag:literal; $(
        $(#[doc = $doc:literal])*
        get $path:literal
        $(path($($arg:ident: $param:tt),+ $(,)?))?
        query($paging:ident $(, $q:ident: $filter:ty)?)
        => $name:ident -> $row:ty = $call:ident($($f:ident = $fexpr:expr),* $(,)?)
        $(csv($export:ident, $file:literal, $write:path))?;
        responses($ok:literal $(, $code:literal $text:literal)* $(,)?);
    )+) => {$(
        $(#[doc = $doc])*
        #[utoipa::path(
            get,
            path = $path,
            tag = $tag,
            params($($($param,)+)? $($filter,)? $paging),
            security(("admin_token" = []), ("session" = [])),
            // utoipa names a generic body by its last segment: `Listed` must be in scope.
            responses(
                (status = 200, description = $ok, body = Listed<$row>),
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
            ::axum::extract::RawQuery(raw): ::axum::extract::RawQuery,
        ) -> $crate::error::Result<::axum::response::Response> {
            $(let [$($arg),+] = ids;)?
            let list: $paging = $crate::extract::read_list_query(raw.as_deref())?;
            $(let $q: $filter = $crate::extract::read_list_query(raw.as_deref())?;)?
            $(let $f = $fexpr;)*
            let page = list.page();
            management_lists!(@answer list page [s.app.$call] (&caller, $($($arg,)+)? $($f,)*)
                $(csv [s.app.$export] $file $write)?)
        }
    )+};
}
pub(super) use management_lists;

management_lists! {
    tag = "management";

    /// List workspaces (a dashboard session sees those it is an active member of).
    get "/workspaces"
        query(PageQuery)
        => list_workspaces -> Workspace = list_workspaces();
        responses("One page", 400 "Invalid limit or cursor");

    /// List programs, of one workspace with `workspace_id`.
    get "/programs"
        query(PageQuery, q: ProgramQuery)
        => list_programs -> ProgramView
            = list_programs(workspace_id = q.workspace_id.as_deref());
        responses("One page", 400 "Invalid filter, limit or cursor", 404 "Unknown workspace");

    /// List partners, searching with `q`. A dashboard session sees the partners of its
    /// workspaces' programs and those its workspaces created.
    get "/partners"
        query(PageQuery, q: PartnerQuery)
        => list_partners -> Partner = list_partners(search = q.q.as_deref());
        responses("One page", 400 "Invalid filter, limit or cursor");

    /// List a program's partners with their totals, or export them with `?format=csv`.
    get "/programs/{id}/partners"
        path(id: ("id" = i64, Path, description = "Program id"))
        query(ListQuery, q: ProgramPartnerQuery)
        => list_program_partners -> ProgramPartnerRow
            = program_partners(status = q.status.as_deref())
            csv(export_program_partners, "program-{id}-partners.csv", exports::program_partners_csv);
        responses(
            "One page, or every row as text/csv",
            400 "Invalid filter, limit or cursor",
            404 "Unknown program",
        );

    /// List links, filtered by program, partner or status.
    get "/links"
        query(PageQuery, q: LinkQuery)
        => list_links -> Link = list_links(params = &q.params());
        responses("One page", 400 "Invalid filter, limit or cursor", 404 "Unknown program");
}

// The operator's alone: unlike the lists above, a dashboard session may not ask for it.
/// List the server's dashboard users, searching with `q`: the operator's alone (admin
/// token), to find the user whose password to set or whom to add to a workspace.
#[utoipa::path(
    get,
    path = "/users",
    tag = "management",
    params(UserQuery, PageQuery),
    security(("admin_token" = [])),
    responses(
        (status = 200, description = "One page", body = Listed<User>),
        (status = 400, description = "Invalid filter, limit or cursor", body = ErrorBody),
        (status = 403, description = "Not the operator", body = ErrorBody),
    ),
)]
async fn list_users(
    Manager(caller): Manager,
    State(s): State<AppState>,
    RawQuery(raw): RawQuery,
) -> Result<Json<Listed<User>>> {
    let list: PageQuery = read_list_query(raw.as_deref())?;
    let q: UserQuery = read_list_query(raw.as_deref())?;
    Ok(Json(
        s.app
            .list_users(&caller, q.q.as_deref(), &list.page())
            .await?,
    ))
}

management_endpoints! {
    tag = "management";

    /// Change a partner's standing in a program. A decided partner cannot go back to
    /// `pending`.
    patch "/programs/{id}/partners/{partner_id}"
        path(
            id: ("id" = i64, Path, description = "Program id"),
            partner_id: ("partner_id" = i64, Path, description = "Partner id"),
        )
        body(b: JsonBody<PartnerStatusBody>)
        => set_program_partner_status -> 200 PartnerProgram = set_program_partner_status;
        responses(
            "The partner-program record",
            400 "Invalid status",
            404 "Unknown program, or the partner is not in it",
            409 "Back to pending, or changed meanwhile",
        );
}
