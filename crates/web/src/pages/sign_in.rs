//! The sign-in page of a site: the form, its errors beside the fields, the per-account
//! lockout as a page that says how long to wait, and the way back to the page the
//! visitor wanted. An account with two-factor gets a second step after a right password:
//! the code page, whose form carries the pending sign-in's token (a random token whose
//! hash the server keeps for 5 minutes) instead of the password.

use askama::Template;
use axum::extract::State;
use axum::http::header::RETRY_AFTER;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use super::session::{see_other, MaybeSigned, SessionCookie, Visitor};
use super::view::{ok, render, Chrome, Field, PageError, PageResult, Posted, Query, Site};
use crate::track::Caller;
use crate::{AppState, Error};
use reftrack_service::two_factor::{SecondFactor, SignInStep};

/// `GET …/login`: the form, or straight on when the visitor is signed in already.
pub async fn login_page<V: Visitor>(
    MaybeSigned(signed): MaybeSigned<V>,
    Query(q): Query,
) -> Response {
    V::SIGN_IN.form(signed.is_some(), &q)
}

/// `POST …/login`: signs in and goes on, or shows the form with its errors.
pub async fn login<V: Visitor>(
    State(s): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    form: Posted,
) -> Response {
    let ip = caller.client_ip(&s);
    V::SIGN_IN.submit::<V>(&s, &headers, &form, ip).await
}

/// `POST …/logout`: ends the session and clears the cookie.
pub async fn logout<V: Visitor>(
    State(s): State<AppState>,
    headers: HeaderMap,
    MaybeSigned(signed): MaybeSigned<V>,
) -> PageResult {
    if let Some(visitor) = signed {
        visitor.sign_out(&s).await?;
    }
    Ok(V::SIGN_IN.cookie.signed_out(&s, &headers))
}

/// A site's sign-in: its frame, cookie and words.
pub struct SignIn {
    pub site: Site,
    pub cookie: SessionCookie,
    /// The line under the heading.
    pub lead: &'static str,
    /// The line under the form (what to do about a forgotten password).
    pub help: &'static str,
    /// The page that resets a forgotten password, linked after `help`, if the site has one.
    pub reset: Option<&'static str>,
    /// The site's accounts are partners (else dashboard users).
    pub partner: bool,
}

#[derive(Template)]
#[template(path = "login_code.html")]
struct CodePage {
    chrome: Chrome,
    /// The pending sign-in's token.
    pending: String,
    code: Field,
    recovery_code: Field,
    next: String,
    form_error: Option<String>,
}

#[derive(Template)]
#[template(path = "login.html")]
struct LoginPage {
    chrome: Chrome,
    lead: &'static str,
    help: &'static str,
    reset: Option<&'static str>,
    email: Field,
    password: Field,
    /// Where to go after signing in.
    next: String,
    form_error: Option<String>,
}

impl SignIn {
    fn page(&self, next: &str) -> LoginPage {
        LoginPage {
            chrome: Chrome::public(self.site, "Sign in"),
            lead: self.lead,
            help: self.help,
            reset: self.reset,
            email: Field::new("email", "Email"),
            password: Field::new("password", "Password"),
            next: next.to_string(),
            form_error: None,
        }
    }

    /// The form, or straight on when the visitor is signed in already.
    fn form(&self, signed_in: bool, q: &Posted) -> Response {
        let next = self
            .cookie
            .local_next(q.text("next").as_deref())
            .to_string();
        if signed_in {
            return see_other(&next);
        }
        let mut page = self.page(&next);
        if q.text("signed_out").is_some() {
            page.chrome.notice = Some("You are signed out.".into());
        }
        ok(&page)
    }

    fn code_page(&self, pending: String, next: &str) -> CodePage {
        CodePage {
            chrome: Chrome::public(self.site, "Two-factor code"),
            pending,
            code: Field::new("code", "Code from your app"),
            recovery_code: Field::new("recovery_code", "Or a recovery code"),
            next: next.to_string(),
            form_error: None,
        }
    }

    /// The second step: the code (or recovery code) of the pending sign-in, under the
    /// account's lockout; then signed in, or the code page again with the error beside
    /// the code. An unknown or expired pending sign-in goes back to the first step.
    async fn submit_code<V: Visitor>(
        &self,
        s: &AppState,
        headers: &HeaderMap,
        form: &Posted,
        pending: String,
        next: &str,
        ip: Option<std::net::IpAddr>,
    ) -> Response {
        let found = match s.app.pending_sign_in(self.partner, &pending).await {
            Ok(found) => found,
            Err(e) => return PageError::from(e).into_response(),
        };
        let Some((_, email)) = found else {
            let mut page = self.page(next);
            page.form_error = Some(reftrack_service::two_factor::SIGN_IN_EXPIRED.into());
            return render(StatusCode::UNAUTHORIZED, &page);
        };
        let second = SecondFactor {
            code: form.text("code"),
            recovery_code: form.text("recovery_code"),
        };
        let mut page = self.code_page(pending.clone(), next);
        if second.is_empty() {
            page.code.error = Some("Enter the 6-digit code from your app".into());
            return render(StatusCode::BAD_REQUEST, &page);
        }
        let key = if self.partner {
            crate::partner::throttle_key(&email)
        } else {
            email
        };
        let attempt = s.app.finish_sign_in(self.partner, &pending, &second);
        match crate::session::throttled(s, &key, attempt).await {
            Ok(session) => {
                V::signed_in_from(s, &session, ip).await;
                self.cookie.signed_in_to(s, headers, &session, next)
            }
            Err(Error::Unauthorized(text)) => {
                page.code.error = Some(text);
                render(StatusCode::UNAUTHORIZED, &page)
            }
            Err(Error::TooManyRequests(secs)) => {
                page.form_error = Some(locked_out(secs));
                retry_after(render(StatusCode::TOO_MANY_REQUESTS, &page), secs)
            }
            Err(e) => PageError::from(e).into_response(),
        }
    }

    /// Signs a `V` in with the email and password sent and goes on (or on to the code
    /// page), or shows the form with its errors and the email typed.
    async fn submit<V: Visitor>(
        &self,
        s: &AppState,
        headers: &HeaderMap,
        form: &Posted,
        ip: Option<std::net::IpAddr>,
    ) -> Response {
        let next = self
            .cookie
            .local_next(form.text("next").as_deref())
            .to_string();
        if let Some(pending) = form.text("pending").filter(|p| !p.trim().is_empty()) {
            return self
                .submit_code::<V>(s, headers, form, pending, &next, ip)
                .await;
        }
        let mut page = self.page(&next);
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
        let signed_in = V::sign_in(s, &page.email.value, password).await;
        match signed_in {
            Ok(SignInStep::Session(session)) => {
                V::signed_in_from(s, &session, ip).await;
                self.cookie.signed_in_to(s, headers, &session, &next)
            }
            Ok(SignInStep::CodeNeeded { pending }) => ok(&self.code_page(pending, &next)),
            Err(Error::Unauthorized(text)) => {
                page.password.error = Some(text);
                render(StatusCode::UNAUTHORIZED, &page)
            }
            Err(Error::TooManyRequests(secs)) => {
                page.form_error = Some(locked_out(secs));
                retry_after(render(StatusCode::TOO_MANY_REQUESTS, &page), secs)
            }
            Err(e) => PageError::from(e).into_response(),
        }
    }
}

/// What a sign-in page says while the account is locked out for `secs` seconds.
fn locked_out(secs: u64) -> String {
    format!("Too many failed sign-ins for this account. Wait {secs} seconds, then try again.")
}

/// `r` with the `Retry-After` of a lock-out of `secs` seconds.
fn retry_after(mut r: Response, secs: u64) -> Response {
    r.headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from(secs.max(1)));
    r
}
