//! The two-factor page of a site (`/app/two-factor`, `/partner/two-factor`): setting up
//! with the QR code (an SVG drawn here) and the secret in text, turning it on with a code,
//! the recovery codes shown once, and turning it off with a code or a recovery code.

use std::future::Future;

use askama::Template;
use axum::extract::{FromRequestParts, State};
use axum::http::StatusCode;
use axum::response::Response;
use qrcode::render::svg;
use qrcode::QrCode;

use super::session::{see_other, Visitor};
use super::view::{ok, render, Chrome, Field, PageResult, Posted, Query};
use crate::origin::RequestOrigin;
use crate::AppState;
use reftrack_service as app;
use reftrack_service::two_factor::{actor_of, otpauth_url, Account, SecondFactor};

/// A signed-in visitor that may turn two-factor on: its account and its page's frame.
pub trait TwoFactorVisitor: Visitor + FromRequestParts<AppState, Rejection = Response> {
    /// The address of the site's two-factor page.
    const PAGE: &'static str;
    /// The visitor's account.
    fn account(&self) -> Account;
    /// The frame of a page titled `title`, and the email the visitor signs in with.
    fn frame(
        &self,
        s: &AppState,
        title: &str,
    ) -> impl Future<Output = app::Result<(Chrome, String)>> + Send;
}

#[derive(Template)]
#[template(path = "two_factor.html")]
struct TwoFactorPage {
    chrome: Chrome,
    /// The page's address, which its forms post below.
    action: &'static str,
    /// Two-factor is on.
    on: bool,
    /// A workspace requires it: said at the top.
    required: bool,
    /// The QR code of the pending secret (an `<svg>` element), while off.
    qr_svg: String,
    /// The pending secret in base32, while off.
    secret: String,
    /// The pending secret's `otpauth://` URL, while off.
    otpauth_url: String,
    code: Field,
    disable_code: Field,
    recovery_code: Field,
    /// The recovery codes, on the one page that shows them.
    recovery_codes: Vec<String>,
    /// Unused recovery codes, while on.
    codes_left: i64,
    form_error: Option<String>,
}

/// The QR code of `text` as an inline `<svg>` element.
pub fn qr_svg(text: &str) -> String {
    let Ok(code) = QrCode::new(text.as_bytes()) else {
        return String::new();
    };
    let image = code
        .render::<svg::Color>()
        .min_dimensions(220, 220)
        .quiet_zone(true)
        .build();
    // The renderer writes a standalone document: keep the element only.
    match image.find("<svg") {
        Some(at) => image[at..].to_string(),
        None => image,
    }
}

impl TwoFactorPage {
    /// The page of `v` now: while off, with the pending secret (drawn when there is none).
    async fn of<V: TwoFactorVisitor>(s: &AppState, v: &V) -> app::Result<TwoFactorPage> {
        let (chrome, email) = v.frame(s, "Two-factor sign-in").await?;
        let account = v.account();
        let on = s.app.two_factor_on(account).await?;
        let (mut secret, mut url) = (String::new(), String::new());
        if !on {
            match s.app.pending_two_factor(account).await? {
                Some(pending) => {
                    url = otpauth_url(&email, &pending);
                    secret = pending;
                }
                None => {
                    let setup = s.app.two_factor_setup(account, &email).await?;
                    secret = setup.secret;
                    url = setup.otpauth_url;
                }
            }
        }
        let codes_left = if on {
            s.app.recovery_codes_left(account).await?
        } else {
            0
        };
        Ok(TwoFactorPage {
            chrome,
            action: V::PAGE,
            on,
            required: false,
            qr_svg: if on { String::new() } else { qr_svg(&url) },
            secret,
            otpauth_url: url,
            code: Field::new("code", "Code from your app"),
            disable_code: Field::new("code", "Code from your app"),
            recovery_code: Field::new("recovery_code", "Or a recovery code"),
            recovery_codes: Vec::new(),
            codes_left,
            form_error: None,
        })
    }
}

/// The confirmation after a change.
fn notice(done: Option<&str>) -> Option<&'static str> {
    match done? {
        "off" => Some("Two-factor sign-in is off."),
        "new" => Some("A new secret was drawn: add it to your app."),
        _ => None,
    }
}

/// `GET …/two-factor`.
pub async fn page<V: TwoFactorVisitor>(
    State(s): State<AppState>,
    v: V,
    Query(q): Query,
) -> PageResult {
    let mut page = TwoFactorPage::of(&s, &v).await?;
    page.required = q.text("required").is_some() && !page.on;
    page.chrome.notice = notice(q.text("done").as_deref()).map(str::to_string);
    Ok(ok(&page))
}

/// `POST …/two-factor/setup`: draws a new pending secret.
pub async fn setup<V: TwoFactorVisitor>(State(s): State<AppState>, v: V) -> PageResult {
    let (_, email) = v.frame(&s, "Two-factor sign-in").await?;
    match s.app.two_factor_setup(v.account(), &email).await {
        Ok(_) | Err(app::Error::Conflict(_)) => Ok(see_other(&format!("{}?done=new", V::PAGE))),
        Err(e) => Err(e.into()),
    }
}

/// `POST …/two-factor/enable`: turns it on and shows the recovery codes, once.
pub async fn enable<V: TwoFactorVisitor>(
    State(s): State<AppState>,
    v: V,
    origin: RequestOrigin,
    form: Posted,
) -> PageResult {
    let (_, email) = v.frame(&s, "Two-factor sign-in").await?;
    let origin = origin.of_actor(actor_of(v.account(), &email));
    let result = s
        .app
        .enable_two_factor(v.account(), &form.get("code"), &origin)
        .await;
    let mut page = TwoFactorPage::of(&s, &v).await?;
    match result {
        Ok(codes) => {
            page.recovery_codes = codes.recovery_codes;
            page.chrome.notice = Some("Two-factor sign-in is on.".into());
            Ok(ok(&page))
        }
        Err(app::Error::Invalid(text) | app::Error::Conflict(text)) => {
            page.code.error = Some(text);
            Ok(render(StatusCode::BAD_REQUEST, &page))
        }
        Err(e) => Err(e.into()),
    }
}

/// `POST …/two-factor/disable`: turns it off with a code or a recovery code, under the
/// account's sign-in lock-out.
pub async fn disable<V: TwoFactorVisitor>(
    State(s): State<AppState>,
    v: V,
    origin: RequestOrigin,
    form: Posted,
) -> PageResult {
    let second = SecondFactor {
        code: form.text("code"),
        recovery_code: form.text("recovery_code"),
    };
    let (_, email) = v.frame(&s, "Two-factor sign-in").await?;
    let key = match v.account() {
        Account::Partner(_) => crate::partner::throttle_key(&email),
        Account::User(_) => email.trim().to_ascii_lowercase(),
    };
    let origin = origin.of_actor(actor_of(v.account(), &email));
    let attempt = s.app.disable_two_factor(v.account(), &second, &origin);
    let result = crate::session::throttled(&s, &key, attempt).await;
    let mut page = TwoFactorPage::of(&s, &v).await?;
    match result {
        Ok(()) => Ok(see_other(&format!("{}?done=off", V::PAGE))),
        Err(crate::Error::BadRequest(text)) => {
            page.disable_code.error = Some(text);
            Ok(render(StatusCode::BAD_REQUEST, &page))
        }
        Err(crate::Error::TooManyRequests(secs)) => {
            page.form_error = Some(format!(
                "Too many failed codes for this account. Wait {secs} seconds, then try again."
            ));
            Ok(render(StatusCode::TOO_MANY_REQUESTS, &page))
        }
        Err(e) => Err(e.into()),
    }
}
