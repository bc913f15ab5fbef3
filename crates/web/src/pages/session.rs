//! What the session cookies of both sites share: reading and setting a cookie, where a
//! page may send a visitor after sign-in, redirects, and the same-origin rule of forms.
//!
//! Each site's cookie carries a session token of the API's kind (the same sessions,
//! lifetime and sign-out): `HttpOnly`, `SameSite=Lax`, on the site's path only, and
//! `Secure` when the server is reached over HTTPS.

use std::future::Future;

use axum::extract::{FromRequestParts, Request};
use axum::http::header::{COOKIE, HOST, LOCATION, ORIGIN, REFERER, SET_COOKIE};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Extension;

use super::sign_in::SignIn;
use super::view::PageError;
use crate::{AppState, Error};
use reftrack_service as app;
use reftrack_service::dashboard::NewSession;
use reftrack_service::two_factor::SignInStep;

/// The signed-in visitor of a site: how the site's sessions are begun, found from its
/// cookie and ended.
pub trait Visitor: Sized + Send + 'static {
    /// The site's sign-in page, with its session cookie.
    const SIGN_IN: SignIn;

    /// The visitor of the live session of `token`, if there is one.
    fn find(
        state: &AppState,
        token: &str,
    ) -> impl Future<Output = app::Result<Option<Self>>> + Send;

    /// A new session of the account of `email` and `password`, or the pending sign-in
    /// that waits for its two-factor code.
    fn sign_in(
        state: &AppState,
        email: &str,
        password: String,
    ) -> impl Future<Output = Result<SignInStep, Error>> + Send;

    /// Notes that `session` was signed in to from `ip` (the portal keeps a partner's
    /// sign-in IPs for the fraud rules); nothing by default.
    fn signed_in_from(
        state: &AppState,
        session: &NewSession,
        ip: Option<std::net::IpAddr>,
    ) -> impl Future<Output = ()> + Send {
        let _ = (state, session, ip);
        async {}
    }

    /// Ends the visitor's session.
    fn sign_out(self, state: &AppState) -> impl Future<Output = app::Result<()>> + Send;

    /// The page a signed-out visitor of this request is brought back to after signing
    /// in; the site's home page when `None` (or not one of the site's pages).
    fn back_after_sign_in(parts: &Parts) -> Option<String>;

    /// The signed-in visitor; without a live session (none, signed out, expired), the
    /// 303 to the sign-in page, which brings the visitor back afterwards.
    fn signed(
        parts: &mut Parts,
        state: &AppState,
    ) -> impl Future<Output = Result<Self, Response>> + Send {
        async move {
            if let MaybeSigned(Some(v)) =
                MaybeSigned::<Self>::from_request_parts(parts, state).await?
            {
                return Ok(v);
            }
            let cookie = Self::SIGN_IN.cookie;
            let back = Self::back_after_sign_in(parts);
            Err(see_other(
                &cookie.login_href(cookie.local_next(back.as_deref())),
            ))
        }
    }
}

/// The signed-in visitor, if any, on pages that signed-out visitors see too.
pub struct MaybeSigned<V>(pub Option<V>);

impl<V: Visitor> FromRequestParts<AppState> for MaybeSigned<V> {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        let Some(token) = V::SIGN_IN.cookie.token(&parts.headers) else {
            return Ok(MaybeSigned(None));
        };
        match V::find(state, token).await {
            Ok(found) => Ok(MaybeSigned(found)),
            Err(e) => Err(PageError::from(e).into_response()),
        }
    }
}

/// A site's session cookie: its name and path.
#[derive(Debug, Clone, Copy)]
pub struct SessionCookie {
    pub name: &'static str,
    /// The path it is sent on, which is also the site's home page.
    pub path: &'static str,
}

impl SessionCookie {
    /// The session token of the request's cookie, if any.
    pub fn token<'h>(&self, headers: &'h HeaderMap) -> Option<&'h str> {
        headers
            .get_all(COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .find(|(name, _)| *name == self.name)
            .map(|(_, value)| value.trim())
            .filter(|v| !v.is_empty())
    }

    /// The `Set-Cookie` of this cookie with `value`, kept `max_age` seconds.
    fn header(
        &self,
        state: &AppState,
        headers: &HeaderMap,
        value: &str,
        max_age: i64,
    ) -> HeaderValue {
        let secure = if https(state, headers) {
            "; Secure"
        } else {
            ""
        };
        let text = format!(
            "{}={value}; Path={}; HttpOnly; SameSite=Lax; Max-Age={max_age}{secure}",
            self.name, self.path
        );
        HeaderValue::from_str(&text).expect("tokens are hex")
    }

    /// The `Set-Cookie` that signs the visitor in on this browser with `session`.
    pub fn set_cookie(
        &self,
        state: &AppState,
        headers: &HeaderMap,
        session: &NewSession,
    ) -> HeaderValue {
        let max_age = ((session.expires_at - state.app.now_ms()) / 1000).max(0);
        self.header(state, headers, &session.token, max_age)
    }

    /// Signs the visitor in on this browser and sends it to `next` (303).
    pub fn signed_in_to(
        &self,
        state: &AppState,
        headers: &HeaderMap,
        session: &NewSession,
        next: &str,
    ) -> Response {
        let mut r = see_other(next);
        r.headers_mut()
            .insert(SET_COOKIE, self.set_cookie(state, headers, session));
        r
    }

    /// Clears the cookie and sends the visitor to the sign-in page (303).
    pub fn signed_out(&self, state: &AppState, headers: &HeaderMap) -> Response {
        let mut r = see_other(&format!("{}/login?signed_out=1", self.path));
        r.headers_mut()
            .insert(SET_COOKIE, self.header(state, headers, "", 0));
        r
    }

    /// `next` when it is a page of this site on this server (the home page or below it,
    /// no scheme, host or `//`, not the sign-in or sign-out page), else the home page: a
    /// sign-in never sends a visitor elsewhere.
    pub fn local_next<'a>(&self, next: Option<&'a str>) -> &'a str {
        let home = self.path;
        let Some(n) = next else { return home };
        let below = n
            .strip_prefix(home)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/') || rest.starts_with('?'));
        let clean = n.len() <= 2000
            && !n.contains("//")
            && !n.contains('\\')
            && !n.chars().any(char::is_control)
            && !n.starts_with(&format!("{home}/login"))
            && !n.starts_with(&format!("{home}/logout"));
        if below && clean {
            n
        } else {
            home
        }
    }

    /// The sign-in page that brings the visitor to `next` afterwards.
    pub fn login_href(&self, next: &str) -> String {
        if next == self.path {
            return format!("{}/login", self.path);
        }
        let encoded: String = url::form_urlencoded::byte_serialize(next.as_bytes()).collect();
        format!("{}/login?next={encoded}", self.path)
    }
}

/// A 303 to `location`.
pub fn see_other(location: &str) -> Response {
    let mut r = StatusCode::SEE_OTHER.into_response();
    if let Ok(v) = HeaderValue::from_str(location) {
        r.headers_mut().insert(LOCATION, v);
    }
    r
}

/// Whether the visitor reaches this server over HTTPS: the public URL says so, or a
/// proxy in front of it does (a false claim only keeps the cookie from being sent back
/// over plain HTTP).
fn https(state: &AppState, headers: &HeaderMap) -> bool {
    state
        .public_url
        .as_deref()
        .is_some_and(|u| u.starts_with("https://"))
        || forwarded_https(headers)
}

/// Whether a proxy in front of this server says the visitor came over HTTPS
/// (`X-Forwarded-Proto: https`).
pub(crate) fn forwarded_https(headers: &HeaderMap) -> bool {
    headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("https"))
}

/// Refuses (403 page) a POST, PUT, PATCH or DELETE whose `Origin` (or, without one,
/// `Referer`) is not this server: a form of another site cannot act for the visitor.
/// A request that names neither is refused too; browsers send `Origin` with every form.
pub async fn same_origin_posts(
    Extension(state): Extension<AppState>,
    req: Request,
    next: Next,
) -> Response {
    if matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS) {
        return next.run(req).await;
    }
    if from_this_site(
        &state,
        req.headers(),
        req.uri().authority().map(|a| a.as_str()),
    ) {
        return next.run(req).await;
    }
    tracing::debug!("cross-site form refused");
    PageError::new(
        StatusCode::FORBIDDEN,
        "This form was sent from another site, so it was not accepted. Open the page on \
         this site and send the form again.",
    )
    .into_response()
}

/// Whether the request's `Origin`, or its `Referer` when it has no `Origin`, is this
/// server: the request's own host, or the public URL.
fn from_this_site(state: &AppState, headers: &HeaderMap, authority: Option<&str>) -> bool {
    let claimed = match headers.get(ORIGIN) {
        Some(o) => o.to_str().ok(),
        None => headers.get(REFERER).and_then(|r| r.to_str().ok()),
    };
    let Some(url) = claimed.and_then(|c| url::Url::parse(c).ok()) else {
        return false;
    };
    let Some(host) = url.host_str() else {
        return false;
    };
    let claimed_authority = match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_string(),
    };
    let own = headers
        .get(HOST)
        .and_then(|h| h.to_str().ok())
        .or(authority);
    if own.is_some_and(|own| own.eq_ignore_ascii_case(&claimed_authority)) {
        return true;
    }
    state
        .public_url
        .as_deref()
        .and_then(|p| url::Url::parse(p).ok())
        .is_some_and(|public| public.origin() == url.origin())
}

/// The path and query of the page a form was sent from, when its `Referer` is a page of
/// this server: where a visitor whose session ended on a form goes back after signing in.
pub fn referring_page(headers: &HeaderMap) -> Option<String> {
    let referer = headers.get(REFERER)?.to_str().ok()?;
    let url = url::Url::parse(referer).ok()?;
    let own = headers.get(HOST)?.to_str().ok()?;
    let authority = match url.port() {
        Some(port) => format!("{}:{port}", url.host_str()?),
        None => url.host_str()?.to_string(),
    };
    if !own.eq_ignore_ascii_case(&authority) {
        return None;
    }
    Some(match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARTNER: SessionCookie = SessionCookie {
        name: "rt_partner",
        path: "/partner",
    };

    #[test]
    fn next_stays_in_the_site() {
        assert_eq!(PARTNER.local_next(None), "/partner");
        assert_eq!(
            PARTNER.local_next(Some("/partner/programs/3/links?x=1")),
            "/partner/programs/3/links?x=1"
        );
        assert_eq!(
            PARTNER.local_next(Some("/partner?program=2")),
            "/partner?program=2"
        );
        for bad in [
            "https://evil.example/partner",
            "//evil.example/partner",
            "/partner//evil.example",
            "/partnerx",
            "/api/admin",
            "/app",
            "/partner/login?next=/partner",
            "/partner/\\evil",
            "/partner/\nx",
        ] {
            assert_eq!(PARTNER.local_next(Some(bad)), "/partner", "{bad}");
        }
        assert_eq!(
            PARTNER.login_href("/partner/programs/1/links"),
            "/partner/login?next=%2Fpartner%2Fprograms%2F1%2Flinks"
        );
        assert_eq!(PARTNER.login_href("/partner"), "/partner/login");
    }

    #[test]
    fn the_cookie_is_found_among_others() {
        let mut h = HeaderMap::new();
        h.insert(
            COOKIE,
            HeaderValue::from_static("a=1; rt_partner=rtp_abc; b=2"),
        );
        assert_eq!(PARTNER.token(&h), Some("rtp_abc"));
        h.insert(COOKIE, HeaderValue::from_static("rt_partner="));
        assert_eq!(PARTNER.token(&h), None);
    }

    #[test]
    fn the_referring_page_is_one_of_this_server() {
        let mut h = HeaderMap::new();
        h.insert(HOST, HeaderValue::from_static("shop.test:8080"));
        h.insert(
            REFERER,
            HeaderValue::from_static(
                "http://shop.test:8080/app/programs/1/partners?status=pending",
            ),
        );
        assert_eq!(
            referring_page(&h).as_deref(),
            Some("/app/programs/1/partners?status=pending")
        );
        h.insert(REFERER, HeaderValue::from_static("http://evil.test/app"));
        assert_eq!(referring_page(&h), None);
    }
}
