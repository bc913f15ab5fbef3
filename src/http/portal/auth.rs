//! Signing in and out, accepting an invite, and applying to a program.

use askama::Template;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::header::RETRY_AFTER;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use super::session::{local_next, login_href, signed_in_to, signed_out, MaybeSigned};
use super::view::{
    ok, place_error, render, standing_text, Chrome, Field, PageResult, Posted, ProgramId, Query,
    Section,
};
use crate::app;
use crate::app::partners::{AcceptInviteBody, ApplyBody, OpenProgram};
use crate::http::partner::sign_in;
use crate::http::{AppState, Error};

#[derive(Template)]
#[template(path = "partner/login.html")]
struct LoginPage {
    chrome: Chrome,
    email: Field,
    password: Field,
    /// Where to go after signing in.
    next: String,
    form_error: Option<String>,
}

impl LoginPage {
    fn new(next: &str) -> LoginPage {
        LoginPage {
            chrome: Chrome::public("Sign in"),
            email: Field::new("email", "Email"),
            password: Field::new("password", "Password"),
            next: next.to_string(),
            form_error: None,
        }
    }
}

/// `GET /partner/login`: the sign-in form, or straight on when already signed in.
pub(super) async fn login_page(MaybeSigned(signed): MaybeSigned, Query(q): Query) -> Response {
    let next = local_next(q.text("next").as_deref()).to_string();
    if signed.is_some() {
        return super::session::see_other(&next);
    }
    let mut page = LoginPage::new(&next);
    if q.text("signed_out").is_some() {
        page.chrome.notice = Some("You are signed out.".into());
    }
    ok(&page)
}

/// `POST /partner/login`: signs in and goes on, or shows the form with its errors.
pub(super) async fn login(State(s): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let form = Posted::parse(&body);
    let next = local_next(form.text("next").as_deref()).to_string();
    let mut page = LoginPage::new(&next);
    page.email = page.email.with(form.get("email").trim());
    let password = form.get("password");
    if page.email.value.is_empty() {
        page.email.error = Some("Enter the email you signed up with".into());
    }
    if password.is_empty() {
        page.password.error = Some("Enter your password".into());
    }
    if page.email.error.is_some() || page.password.error.is_some() {
        return render(StatusCode::BAD_REQUEST, &page);
    }
    match sign_in(&s, &page.email.value, password).await {
        Ok(session) => signed_in_to(&s, &headers, &session, &next),
        Err(Error::Unauthorized(text)) => {
            page.password.error = Some(text);
            render(StatusCode::UNAUTHORIZED, &page)
        }
        Err(Error::TooManyRequests(secs)) => {
            page.form_error = Some(format!(
                "Too many failed sign-ins for this account. Wait {secs} seconds, then try again."
            ));
            let mut r = render(StatusCode::TOO_MANY_REQUESTS, &page);
            r.headers_mut()
                .insert(RETRY_AFTER, HeaderValue::from(secs.max(1)));
            r
        }
        Err(e) => super::view::PageError::from(e).into_response(),
    }
}

/// `POST /partner/logout`: ends the session and clears the cookie.
pub(super) async fn logout(
    State(s): State<AppState>,
    headers: HeaderMap,
    MaybeSigned(signed): MaybeSigned,
) -> PageResult {
    if let Some(p) = signed {
        s.app.partner_logout(&p.token_hash).await?;
    }
    Ok(signed_out(&s, &headers))
}

#[derive(Template)]
#[template(path = "partner/invite.html")]
struct InvitePage {
    chrome: Chrome,
    token: String,
    password: Field,
    confirm: Field,
    form_error: Option<String>,
}

impl InvitePage {
    fn new(token: String) -> InvitePage {
        InvitePage {
            chrome: Chrome::public("Set your password"),
            form_error: token
                .is_empty()
                .then(|| "This invite link is not valid: it has no token. Open the link from your invite again.".into()),
            token,
            password: Field::new("password", "New password"),
            confirm: Field::new("confirm", "Repeat the password"),
        }
    }
}

/// `GET /partner/invite?token=…`: the form that sets the partner's password.
pub(super) async fn invite_page(Query(q): Query) -> Response {
    let page = InvitePage::new(q.text("token").unwrap_or_default());
    let status = if page.form_error.is_some() {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    render(status, &page)
}

/// `POST /partner/invite`: sets the password, signs in and opens the overview.
pub(super) async fn accept_invite(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> PageResult {
    let form = Posted::parse(&body);
    let mut page = InvitePage::new(form.text("token").unwrap_or_default());
    if page.form_error.is_some() {
        return Ok(render(StatusCode::BAD_REQUEST, &page));
    }
    let password = form.get("password");
    if password != form.get("confirm") {
        page.confirm.error = Some("The two passwords are not the same".into());
        return Ok(render(StatusCode::BAD_REQUEST, &page));
    }
    let body = AcceptInviteBody {
        token: page.token.clone(),
        password,
    };
    match s.app.accept_invite(body).await {
        Ok(session) => Ok(signed_in_to(
            &s,
            &headers,
            &session,
            "/partner?done=welcome",
        )),
        Err(app::Error::Invalid(text)) | Err(app::Error::Conflict(text)) => {
            page.form_error = place_error(&text, &mut [&mut page.password]);
            Ok(render(StatusCode::BAD_REQUEST, &page))
        }
        Err(e) => Err(e.into()),
    }
}

#[derive(Template)]
#[template(path = "partner/apply.html")]
struct ApplyPage {
    chrome: Chrome,
    program: OpenProgram,
    /// Signed in: only website and message are asked.
    signed_in: bool,
    /// The standing of a signed-in partner already in the program.
    member_standing: Option<&'static str>,
    name: Field,
    email: Field,
    password: Field,
    website: Field,
    message: Field,
    form_error: Option<String>,
    /// The sign-in page that comes back here.
    login_href: String,
}

impl ApplyPage {
    async fn new(
        s: &AppState,
        program: OpenProgram,
        partner: Option<i64>,
    ) -> app::Result<ApplyPage> {
        let title = format!("Apply to {}", program.name);
        let (chrome, member_standing) = match partner {
            Some(id) => {
                let me = s.app.partner_me(id).await?;
                let standing = me
                    .programs
                    .iter()
                    .find(|p| p.program_id == program.id)
                    .map(|p| standing_text(p.status));
                (Chrome::signed_in(title, &me, Section::None), standing)
            }
            None => (Chrome::public(title), None),
        };
        Ok(ApplyPage {
            chrome,
            login_href: login_href(&format!("/partner/apply/{}", program.id)),
            program,
            signed_in: partner.is_some(),
            member_standing,
            name: Field::new("name", "Your name"),
            email: Field::new("email", "Email"),
            password: Field::new("password", "Password"),
            website: Field::new("website", "Website"),
            message: Field::new("message", "Message to the program"),
            form_error: None,
        })
    }
}

/// `GET /partner/apply/{program_id}`: the application form of a program that takes
/// applications (a 404 page otherwise).
pub(super) async fn apply_page(
    State(s): State<AppState>,
    MaybeSigned(signed): MaybeSigned,
    ProgramId(id): ProgramId,
) -> PageResult {
    let program = s.app.open_program(id).await?;
    let page = ApplyPage::new(&s, program, signed.map(|p| p.partner_id)).await?;
    Ok(ok(&page))
}

/// `POST /partner/apply/{program_id}`: applies (creating the account when signed out),
/// signs in and opens the program's overview, which shows the application pending.
pub(super) async fn apply(
    State(s): State<AppState>,
    headers: HeaderMap,
    MaybeSigned(signed): MaybeSigned,
    ProgramId(id): ProgramId,
    body: Bytes,
) -> PageResult {
    let program = s.app.open_program(id).await?;
    let program_id = program.id;
    let partner = signed.map(|p| p.partner_id);
    let form = Posted::parse(&body);
    let mut page = ApplyPage::new(&s, program, partner).await?;
    page.website = page.website.with(form.get("website").trim());
    page.message = page.message.with(form.get("message").trim());
    page.name = page.name.with(form.get("name").trim());
    page.email = page.email.with(form.get("email").trim());
    let password = form.get("password");
    let b = ApplyBody {
        name: partner.is_none().then(|| page.name.value.clone()),
        email: partner.is_none().then(|| page.email.value.clone()),
        password: partner.is_none().then(|| password.clone()),
        website: Some(page.website.value.clone()),
        message: Some(page.message.value.clone()),
    };
    let overview = format!("/partner?program={program_id}&done=applied");
    let refused = match s.app.apply(program_id, partner, b).await {
        Ok(_) if partner.is_some() => return Ok(super::session::see_other(&overview)),
        Ok(_) => {
            let email = page.email.value.to_ascii_lowercase();
            let session = s.app.partner_login(&email, password).await?;
            return Ok(signed_in_to(&s, &headers, &session, &overview));
        }
        Err(app::Error::Invalid(text)) | Err(app::Error::Conflict(text)) => text,
        Err(e) => return Err(e.into()),
    };
    page.form_error = place_error(
        &refused,
        &mut [
            &mut page.name,
            &mut page.email,
            &mut page.password,
            &mut page.website,
            &mut page.message,
        ],
    );
    Ok(render(StatusCode::BAD_REQUEST, &page))
}
