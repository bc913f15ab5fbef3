//! The first-run setup: while no user exists, the page that creates the first
//! workspace, its owner and a first program, then signs the owner in. It asks for the
//! admin token, and for the server's address (prefilled from the request, which only
//! suggests it: the owner confirms it).

use askama::Template;
use axum::extract::State;
use axum::http::header::{HOST, SET_COOKIE};
use axum::http::{HeaderMap, StatusCode};

use super::frame::public;
use super::install::setup_page;
use super::session::{Signed, COOKIE};
use crate::pages::session::{forwarded_https, see_other};
use crate::pages::view::{ok, place_errors, render, Chrome, Field, PageResult, Posted};
use crate::AppState;
use reftrack_service as app;
use reftrack_service::programs::first_run::FirstRunBody;

#[derive(Template)]
#[template(path = "console/first_run.html")]
struct FirstRunPage {
    chrome: Chrome,
    admin_token: Field,
    public_url: Field,
    /// `REFTRACK_PUBLIC_URL`, which then is the address and is not asked for.
    configured_url: Option<String>,
    workspace_name: Field,
    name: Field,
    email: Field,
    password: Field,
    confirm: Field,
    program_name: Field,
    website: Field,
    currency: Field,
    form_error: Option<String>,
}

impl FirstRunPage {
    fn new(s: &AppState) -> FirstRunPage {
        FirstRunPage {
            chrome: public("Set up Reftrack"),
            admin_token: Field::new("admin_token", "Admin token"),
            public_url: Field::new("public_url", "Address of this server"),
            configured_url: s.public_url.as_deref().map(str::to_string),
            workspace_name: Field::new("workspace_name", "Company or team"),
            name: Field::new("name", "Your name"),
            email: Field::new("email", "Email"),
            password: Field::new("password", "Password"),
            confirm: Field::new("confirm", "Repeat the password"),
            program_name: Field::new("program_name", "Program name"),
            website: Field::new("website", "Your site"),
            currency: Field::new("currency", "Currency").with("USD"),
            form_error: None,
        }
    }
}

/// The address the request was sent to (`X-Forwarded-Proto`'s scheme and the `Host`),
/// as the form's first suggestion of the server's address; nothing is built from it
/// until the owner confirms it.
fn suggested_address(headers: &HeaderMap) -> String {
    let Some(host) = headers
        .get(HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_graphic()))
    else {
        return String::new();
    };
    let scheme = if forwarded_https(headers) {
        "https"
    } else {
        "http"
    };
    format!("{scheme}://{host}")
}

/// `GET /app/setup`: the setup form while the server has no user; the dashboard after.
pub(super) async fn page(State(s): State<AppState>, headers: HeaderMap) -> PageResult {
    if !s.app.needs_first_run().await? {
        return Ok(see_other("/app"));
    }
    let mut page = FirstRunPage::new(&s);
    page.public_url.value = suggested_address(&headers);
    Ok(ok(&page))
}

/// `POST /app/setup`: creates the workspace, the owner and the program, signs the owner
/// in and shows the program's setup page with its API token; or shows the form again
/// with its errors.
pub(super) async fn submit(
    State(s): State<AppState>,
    headers: HeaderMap,
    form: Posted,
) -> PageResult {
    let mut page = FirstRunPage::new(&s);
    form.refill_trimmed(&mut [
        &mut page.public_url,
        &mut page.workspace_name,
        &mut page.name,
        &mut page.email,
        &mut page.program_name,
        &mut page.website,
        &mut page.currency,
    ]);
    let password = form.get("password");
    let b = FirstRunBody {
        // A token typed is never sent back.
        admin_token: form.get("admin_token"),
        public_url: page
            .configured_url
            .is_none()
            .then(|| page.public_url.value.clone()),
        workspace_name: page.workspace_name.value.clone(),
        name: page.name.value.clone(),
        email: page.email.value.clone(),
        password: password.clone(),
        program_name: page.program_name.value.clone(),
        currency: Some(page.currency.value.clone()),
        website: Some(page.website.value.clone()),
    };
    // Every field's error at once, each beside its field.
    let problems = b.problems();
    if password != form.get("confirm") {
        page.confirm.error = Some("The two passwords are not the same".into());
    }
    if !problems.is_empty() || page.confirm.error.is_some() {
        page.place_errors(&problems);
        return Ok(render(StatusCode::BAD_REQUEST, &page));
    }
    let refused = match s.app.first_run(b).await {
        Ok(done) => {
            let session = s
                .app
                .login(&done.user.email, password, &Default::default())
                .await?;
            let user = Signed {
                user_id: done.user.id,
                who: done.user.name.clone().unwrap_or(done.user.email.clone()),
                email: done.user.email.clone(),
                token_hash: String::new(),
                request: Default::default(),
            };
            // The setup page itself, not a redirect: it is the one answer that shows the
            // program's API token.
            let mut page = setup_page(
                &s,
                &user,
                done.program.id,
                done.program.api_token,
                Some("welcome"),
            )
            .await?;
            let cookie = COOKIE.set_cookie(&s, &headers, &session);
            page.headers_mut().insert(SET_COOKIE, cookie);
            return Ok(page);
        }
        Err(app::Error::Invalid(text)) => text,
        Err(app::Error::Forbidden(text)) => {
            page.place_errors(&[text]);
            return Ok(render(StatusCode::FORBIDDEN, &page));
        }
        Err(app::Error::Conflict(text)) => {
            page.form_error = Some(text);
            return Ok(render(StatusCode::CONFLICT, &page));
        }
        Err(e) => return Err(e.into()),
    };
    page.place_errors(&[refused]);
    Ok(render(StatusCode::BAD_REQUEST, &page))
}

impl FirstRunPage {
    /// Puts each of `errors` beside the field it names, or above the form.
    fn place_errors(&mut self, errors: &[String]) {
        self.form_error = place_errors(
            errors,
            &mut [
                &mut self.admin_token,
                &mut self.public_url,
                &mut self.workspace_name,
                &mut self.name,
                &mut self.email,
                &mut self.password,
                &mut self.program_name,
                &mut self.website,
                &mut self.currency,
            ],
        );
    }
}
