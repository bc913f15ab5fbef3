//! The audit log under a program's Settings: its workspace's changes to money, access
//! and settings, newest first, filtered by action, program and dates (a GET form), with
//! a CSV download of the same filter. Owners and admins only: the service layer refuses
//! the others, as it does on the management API.

use askama::Template;
use axum::extract::State;

use super::frame::{Frame, Head, Tab};
use super::session::Signed;
use crate::downloads::csv_stream;
use crate::pages::view::{ok, place_error, Chrome, Field, Moment, PageResult, ProgramId, Query};
use crate::AppState;
use reftrack_domain::audit::Action;
use reftrack_service as app;
use reftrack_service::audit::AuditParams;
use reftrack_service::money::exports;
use reftrack_service::PageParams;
use reftrack_store::AuditRow;

#[derive(Template)]
#[template(path = "console/audit.html")]
struct AuditPage {
    chrome: Chrome,
    head: Head,
    /// Every action: value and whether it is the one filtered on.
    actions: Vec<(&'static str, bool)>,
    action: Field,
    /// The workspace's programs: id, name, and whether it is the one filtered on.
    programs: Vec<(String, String, bool)>,
    program: Field,
    from: Field,
    to: Field,
    filter_error: Option<String>,
    rows: Vec<EntryView>,
    csv_href: String,
    next_href: Option<String>,
    first_href: Option<String>,
}

struct EntryView {
    id: i64,
    at: Moment,
    actor: String,
    actor_kind: &'static str,
    action: String,
    program: String,
    target: String,
    details: String,
    ip: String,
    request_id: String,
}

fn entry_view(r: AuditRow, programs: &[(String, String, bool)]) -> EntryView {
    let actor = match (&r.actor.email, r.actor.id) {
        (Some(email), _) => email.clone(),
        (None, Some(id)) => format!("{} {id}", r.actor.kind.as_str()),
        (None, None) => r.actor.kind.as_str().to_string(),
    };
    let program = r
        .program_id
        .map(|id| {
            programs
                .iter()
                .find(|(p, _, _)| *p == id.to_string())
                .map_or_else(|| format!("Program {id}"), |(_, name, _)| name.clone())
        })
        .unwrap_or_default();
    EntryView {
        id: r.id,
        at: Moment::of(r.at),
        actor,
        actor_kind: r.actor.kind.as_str(),
        action: r.action,
        program,
        target: format!("{} {}", r.target.kind.replace('_', " "), r.target.id),
        details: match &r.details {
            serde_json::Value::Object(m) if m.is_empty() => String::new(),
            d => d.to_string(),
        },
        ip: r.ip.unwrap_or_default(),
        request_id: r.request_id.unwrap_or_default(),
    }
}

/// The filter a page's query names.
fn params(q: &crate::pages::view::Posted) -> AuditParams {
    AuditParams {
        action: q.text("action"),
        program_id: q.text("program_id"),
        from: q.text("from"),
        to: q.text("to"),
    }
}

/// `GET /app/programs/{id}/settings/audit?action=…&program_id=…&from=…&to=…&cursor=…`.
pub(super) async fn audit(
    State(s): State<AppState>,
    user: Signed,
    ProgramId(id): ProgramId,
    Query(q): Query,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Settings, None).await?;
    let workspace_id = frame.program.workspace_id;
    // Refused before anything is read for a role that may not see it.
    s.app.allow_audit(&frame.caller, workspace_id).await?;
    let mut action = Field::new("action", "Action").with(q.text("action").unwrap_or_default());
    let mut program =
        Field::new("program_id", "Program").with(q.text("program_id").unwrap_or_default());
    let mut from = Field::new("from", "From").with(q.text("from").unwrap_or_default());
    let mut to = Field::new("to", "To").with(q.text("to").unwrap_or_default());
    let listed = s
        .app
        .list_programs(
            &frame.caller,
            Some(&workspace_id.to_string()),
            &PageParams {
                limit: Some("100".into()),
                cursor: None,
            },
        )
        .await?;
    let programs: Vec<(String, String, bool)> = listed
        .data
        .into_iter()
        .map(|p| {
            let pid = p.id.to_string();
            let chosen = pid == program.value;
            (pid, p.name, chosen)
        })
        .collect();
    let (entries, filter_error) = match s
        .app
        .audit_log(&frame.caller, workspace_id, &params(&q), &q.page())
        .await
    {
        Ok(l) => (Some(l), None),
        Err(app::Error::Invalid(text)) => (
            None,
            place_error(&text, &mut [&mut action, &mut program, &mut from, &mut to]),
        ),
        Err(e) => return Err(e.into()),
    };
    let (rows, next) = entries.map_or((Vec::new(), None), |l| (l.data, l.next_cursor));
    let query = [
        ("action", action.value.as_str()),
        ("program_id", program.value.as_str()),
        ("from", from.value.as_str()),
        ("to", to.value.as_str()),
    ]
    .into_iter()
    .filter(|(_, v)| !v.is_empty())
    .map(|(k, v)| {
        let v: String = url::form_urlencoded::byte_serialize(v.as_bytes()).collect();
        format!("{k}={v}")
    })
    .collect::<Vec<_>>()
    .join("&");
    let base = format!("/app/programs/{id}/settings/audit");
    let with = |extra: &str| {
        let parts: Vec<&str> = [query.as_str(), extra]
            .into_iter()
            .filter(|p| !p.is_empty())
            .collect();
        if parts.is_empty() {
            base.clone()
        } else {
            format!("{base}?{}", parts.join("&"))
        }
    };
    let page = AuditPage {
        actions: Action::NAMES
            .iter()
            .map(|a| (*a, *a == action.value))
            .collect(),
        rows: rows.into_iter().map(|r| entry_view(r, &programs)).collect(),
        programs,
        csv_href: if query.is_empty() {
            format!("/app/programs/{id}/settings/audit.csv")
        } else {
            format!("/app/programs/{id}/settings/audit.csv?{query}")
        },
        next_href: if filter_error.is_none() {
            next.map(|c| with(&format!("cursor={c}")))
        } else {
            None
        },
        first_href: q.text("cursor").map(|_| with("")),
        action,
        program,
        from,
        to,
        filter_error,
        chrome: frame.chrome,
        head: frame.head,
    };
    Ok(ok(&page))
}

/// `GET /app/programs/{id}/settings/audit.csv?…`: every entry of the filter.
pub(super) async fn audit_csv(
    State(s): State<AppState>,
    user: Signed,
    ProgramId(id): ProgramId,
    Query(q): Query,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Settings, None).await?;
    let workspace_id = frame.program.workspace_id;
    let chunks = s
        .app
        .export_audit_log(&frame.caller, workspace_id, &params(&q))
        .await?;
    Ok(csv_stream(
        &format!("workspace-{workspace_id}-audit-log.csv"),
        chunks,
        exports::audit_csv,
    ))
}
