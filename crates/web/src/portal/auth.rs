//! The portal's sessions, which the shared sign-in and sign-out pages begin and end
//! ([`crate::pages::sign_in`]), accepting an invite, and applying to a program.

use askama::Template;
use axum::extract::State;
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::Response;

use super::session::{login_href, Signed, COOKIE};
use super::terms;
use super::view::{
    self, ok, place_error, place_errors, render, standing_text, Chrome, Field, PageResult, Posted,
    ProgramId, Query, Section,
};
use crate::error::Result;
use crate::pages::session::{MaybeSigned, Visitor};
use crate::pages::sign_in::SignIn;
use crate::pages::two_factor::TwoFactorVisitor;
use crate::pages::view::PageError;
use crate::AppState;
use reftrack_service as app;
use reftrack_service::accounts::{AcceptInviteBody, ApplyBody, OpenProgram};
use reftrack_service::dashboard::NewSession;
use reftrack_service::two_factor::Account;
use reftrack_service::two_factor::SignInStep;

impl TwoFactorVisitor for Signed {
    const PAGE: &'static str = "/partner/two-factor";

    fn account(&self) -> Account {
        Account::Partner(self.partner_id)
    }

    async fn frame(&self, s: &AppState, title: &str) -> app::Result<(Chrome, String)> {
        let me = s.app.partner_me(self.partner_id).await?;
        let email = me.email.clone().unwrap_or_default();
        Ok((view::signed_in(title, &me, Section::TwoFactor), email))
    }
}

impl Visitor for Signed {
    const SIGN_IN: SignIn = SignIn {
        site: view::PORTAL,
        cookie: COOKIE,
        lead: "Sign in to see your links, earnings and payouts.",
        help: "Forgot your password?",
        reset: Some("/partner/reset"),
        partner: true,
    };

    async fn find(state: &AppState, token: &str) -> app::Result<Option<Signed>> {
        let found = state.app.partner_session(token).await?;
        Ok(found.map(|(partner_id, token_hash)| Signed {
            partner_id,
            token_hash,
        }))
    }

    async fn sign_in(state: &AppState, email: &str, password: String) -> Result<SignInStep> {
        crate::partner::sign_in(state, email, password).await
    }

    async fn signed_in_from(state: &AppState, session: &NewSession, ip: Option<std::net::IpAddr>) {
        if let Some(ip) = ip {
            state.app.note_partner_sign_in(&session.token, ip).await;
        }
    }

    async fn sign_out(self, state: &AppState) -> app::Result<()> {
        state.app.partner_logout(&self.token_hash).await
    }

    /// The page asked for; after a form, the portal's home page.
    fn back_after_sign_in(parts: &Parts) -> Option<String> {
        let here = parts.uri.path_and_query().map(|p| p.as_str().to_string());
        here.filter(|_| parts.method == Method::GET)
    }
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
            chrome: view::public("Set your password"),
            form_error: token
                .is_empty()
                .then(|| "This invite link is not valid: it has no token. Open the link from your invite again.".into()),
            token,
            password: Field::new("password", "New password"),
            confirm: Field::new("confirm", "Repeat the password"),
        }
    }
}

#[derive(Template)]
#[template(path = "partner/reset.html")]
struct ResetPage {
    chrome: Chrome,
    /// Whether this server mails reset links ([`app::App::partner_reset_available`]).
    available: bool,
    /// The request was taken: the page says what happens next.
    sent: bool,
    email: Field,
    form_error: Option<String>,
}

impl ResetPage {
    async fn new(s: &AppState) -> app::Result<ResetPage> {
        Ok(ResetPage {
            chrome: view::public("Forgot your password?"),
            available: s.app.partner_reset_available().await?,
            sent: false,
            email: Field::new("email", "Email"),
            form_error: None,
        })
    }
}

/// `GET /partner/reset`: asks for the email that a new-password link is mailed to.
pub(super) async fn reset_page(State(s): State<AppState>) -> PageResult {
    Ok(ok(&ResetPage::new(&s).await?))
}

/// `POST /partner/reset`: mails the link when the email has an account; the page says
/// the same either way.
pub(super) async fn reset(State(s): State<AppState>, form: Posted) -> PageResult {
    let mut page = ResetPage::new(&s).await?;
    page.email = page.email.with(form.get("email"));
    match s.app.reset_partner_password(&form.get("email")).await {
        Ok(()) => {
            page.sent = true;
            Ok(ok(&page))
        }
        Err(app::Error::Invalid(text)) => {
            page.form_error = place_error(&text, &mut [&mut page.email]);
            Ok(render(StatusCode::BAD_REQUEST, &page))
        }
        Err(app::Error::NotFound(_)) => Ok(render(StatusCode::NOT_FOUND, &page)),
        Err(e) => Err(e.into()),
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
    form: Posted,
) -> PageResult {
    let mut page = InvitePage::new(form.text("token").unwrap_or_default());
    if page.form_error.is_some() {
        return Ok(render(StatusCode::BAD_REQUEST, &page));
    }
    let password = form.get("password");
    let same = password == form.get("confirm");
    let body = AcceptInviteBody {
        token: page.token.clone(),
        password,
    };
    // Both fields' errors at once: a too-short password is said beside it even when the
    // repeat differs.
    if let Some(text) = body.password_problem() {
        page.form_error = place_error(&text, &mut [&mut page.password]);
    }
    if !same {
        page.confirm.error = Some("The two passwords are not the same".into());
    }
    if page.password.error.is_some() || page.confirm.error.is_some() {
        return Ok(render(StatusCode::BAD_REQUEST, &page));
    }
    match s.app.accept_invite(body).await {
        Ok(session) => Ok(COOKIE.signed_in_to(&s, &headers, &session, "/partner?done=welcome")),
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
    /// What the program offers, one sentence a line ([`terms::lines`]).
    terms: Vec<String>,
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
                (view::signed_in(title, &me, Section::None), standing)
            }
            None => (view::public(title), None),
        };
        Ok(ApplyPage {
            chrome,
            terms: terms::lines(&program.terms),
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

/// The words of the apply page's 404: the program does not exist or takes no
/// applications, which it does not tell apart (as the API does not).
const NOT_OPEN: &str = "This program does not exist or is not taking applications right now.";

/// The program of an apply page, when it takes applications; else the 404 page saying
/// so (an id that is not one included).
async fn open_program(
    s: &AppState,
    id: std::result::Result<ProgramId, PageError>,
) -> std::result::Result<OpenProgram, PageError> {
    let not_open = || PageError::new(StatusCode::NOT_FOUND, NOT_OPEN);
    let ProgramId(id) = id.map_err(|_| not_open())?;
    match s.app.open_program(id).await {
        Ok(program) => Ok(program),
        Err(app::Error::NotFound(_)) => Err(not_open()),
        Err(e) => Err(e.into()),
    }
}

/// `GET /partner/apply/{program_id}`: the application form of a program that takes
/// applications, with its terms (a 404 page otherwise).
pub(super) async fn apply_page(
    State(s): State<AppState>,
    MaybeSigned(signed): MaybeSigned<Signed>,
    id: std::result::Result<ProgramId, PageError>,
) -> PageResult {
    let program = open_program(&s, id).await?;
    let page = ApplyPage::new(&s, program, signed.map(|p| p.partner_id)).await?;
    Ok(ok(&page))
}

/// `POST /partner/apply/{program_id}`: applies (creating the account when signed out),
/// signs in and opens the program's overview, which shows the application pending.
pub(super) async fn apply(
    State(s): State<AppState>,
    headers: HeaderMap,
    MaybeSigned(signed): MaybeSigned<Signed>,
    id: std::result::Result<ProgramId, PageError>,
    form: Posted,
) -> PageResult {
    let program = open_program(&s, id).await?;
    let program_id = program.id;
    let partner = signed.map(|p| p.partner_id);
    let mut page = ApplyPage::new(&s, program, partner).await?;
    form.refill_trimmed(&mut [
        &mut page.website,
        &mut page.message,
        &mut page.name,
        &mut page.email,
    ]);
    let password = form.get("password");
    let b = ApplyBody {
        name: partner.is_none().then(|| page.name.value.clone()),
        email: partner.is_none().then(|| page.email.value.clone()),
        password: partner.is_none().then(|| password.clone()),
        website: Some(page.website.value.clone()),
        message: Some(page.message.value.clone()),
    };
    let overview = format!("/partner?program={program_id}&done=applied");
    // Every field's error at once; else the use case's own answer.
    let mut refused = b.problems();
    if refused.is_empty() {
        match s.app.apply(program_id, partner, b).await {
            Ok(_) if partner.is_some() => return Ok(super::session::see_other(&overview)),
            Ok(_) => {
                let email = page.email.value.to_ascii_lowercase();
                let session = s
                    .app
                    .partner_login(&email, password, &Default::default())
                    .await?;
                return Ok(COOKIE.signed_in_to(&s, &headers, &session, &overview));
            }
            Err(app::Error::Invalid(text)) | Err(app::Error::Conflict(text)) => refused.push(text),
            Err(e) => return Err(e.into()),
        }
    }
    page.form_error = place_errors(
        refused,
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
