//! `/app`: the programs of the signed-in user's workspaces (straight to the only one),
//! and a new program.

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;

use super::frame::{notice, signed_in};
use super::install::setup_page;
use super::session::Signed;
use crate::pages::session::see_other;
use crate::pages::view::{
    ok, place_error, render, Chrome, Field, PageResult, Posted, Query, Refusal,
};
use crate::AppState;
use reftrack_domain::access::Access;
use reftrack_service as app;
use reftrack_service::programs::ProgramBody;
use reftrack_service::{Caller, PageParams};

#[derive(Template)]
#[template(path = "console/programs.html")]
struct ProgramsPage {
    chrome: Chrome,
    programs: Vec<ProgramRow>,
    /// The workspaces where the user may create programs: (id, name, chosen).
    workspaces: Vec<(i64, String, bool)>,
    name: Field,
    workspace: Field,
    website: Field,
    currency: Field,
    form_error: Option<String>,
}

struct ProgramRow {
    id: i64,
    name: String,
    workspace: String,
    currency: String,
}

async fn programs_page(s: &AppState, user: &Signed, caller: &Caller) -> app::Result<ProgramsPage> {
    let page = PageParams {
        limit: Some("100".into()),
        cursor: None,
    };
    let listed = s.app.list_programs(caller, None, &page).await?;
    let memberships = caller.memberships();
    let workspace_name = |id: i64| {
        memberships
            .iter()
            .find(|m| m.workspace_id == id)
            .map(|m| m.workspace_name.clone())
            .unwrap_or_default()
    };
    let changeable = caller.changeable_workspaces().unwrap_or_default();
    Ok(ProgramsPage {
        chrome: signed_in("Programs", user, true),
        programs: listed
            .data
            .iter()
            .map(|p| ProgramRow {
                id: p.id,
                name: p.name.clone(),
                workspace: workspace_name(p.workspace_id),
                currency: p.currency.to_ascii_uppercase(),
            })
            .collect(),
        workspaces: memberships
            .iter()
            .filter(|m| changeable.contains(&m.workspace_id) && m.role.allows(Access::Change))
            .map(|m| (m.workspace_id, m.workspace_name.clone(), false))
            .collect(),
        name: Field::new("name", "Program name"),
        workspace: Field::new("workspace_id", "Workspace"),
        website: Field::new("website", "Your site"),
        currency: Field::new("currency", "Currency").with("USD"),
        form_error: None,
    })
}

/// `GET /app`: the user's programs; the only one opens at once.
pub(super) async fn home(State(s): State<AppState>, user: Signed, Query(q): Query) -> PageResult {
    let caller = user.caller(&s).await?;
    let mut page = programs_page(&s, &user, &caller).await?;
    if page.programs.len() == 1 && q.text("all").is_none() {
        return Ok(see_other(&format!("/app/programs/{}", page.programs[0].id)));
    }
    page.chrome.notice = notice(q.text("done").as_deref()).map(str::to_string);
    Ok(ok(&page.chosen(None)))
}

impl ProgramsPage {
    /// The page with `workspace` chosen in the form (the first when none is).
    fn chosen(mut self, workspace: Option<i64>) -> ProgramsPage {
        let first = self.workspaces.first().map(|w| w.0);
        let chosen = workspace.or(first);
        for w in &mut self.workspaces {
            w.2 = Some(w.0) == chosen;
        }
        self
    }
}

/// `POST /app/programs`: a new program in one of the user's workspaces.
pub(super) async fn create(State(s): State<AppState>, user: Signed, form: Posted) -> PageResult {
    let caller = user.caller(&s).await?;
    let workspace_id = form
        .text("workspace_id")
        .and_then(|w| w.parse::<i64>().ok());
    let website = form.text("website");
    let b = ProgramBody {
        workspace_id: workspace_id.unwrap_or(0),
        name: form.get("name"),
        cookie_window_days: None,
        currency: form.text("currency"),
        commission: None,
        recurring_commission_months: None,
        allowed_origins: website.clone().map(|w| vec![w]),
        // The site is also where redirect links send visitors, until changed.
        destination_url: website.clone(),
        stripe_webhook_secret: None,
        commission_hold_days: None,
        min_payout_cents: None,
        applications_open: None,
        partner_links_allowed: None,
    };
    let refused = match s.app.create_program(&caller, b).await.invalid()? {
        // The setup page itself: the one answer that shows the new program's API token.
        Ok(p) => return Ok(setup_page(&s, &user, p.id, p.api_token, Some("program")).await?),
        Err(refused) => refused.replace("allowed_origins", "website"),
    };
    let mut page = programs_page(&s, &user, &caller)
        .await?
        .chosen(workspace_id);
    page.name = page.name.with(form.get("name"));
    page.website = page.website.with(website.unwrap_or_default());
    page.currency = page.currency.with(form.get("currency"));
    page.form_error = place_error(
        &refused,
        &mut [&mut page.name, &mut page.website, &mut page.currency],
    );
    Ok(render(StatusCode::BAD_REQUEST, &page))
}
