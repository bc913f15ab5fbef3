//! The HTML error pages: a failed page as [`PageError`], the error page itself, and the
//! headers every page answer carries ([`page_headers`]), which also turn the other
//! layers' error answers into pages.

use askama::Template;
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, REFERRER_POLICY, RETRY_AFTER,
    X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS,
};
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};

use crate::Error;
use reftrack_service as app;

use super::{Chrome, Site, CSP};

/// The last resort when even the error page does not render.
fn fallback_error(site: Site) -> Response {
    let html = format!(
        "<!doctype html><title>Error</title><h1>Something went wrong</h1><p><a href=\"{}\">{}</a></p>",
        site.home, site.home_label
    );
    (StatusCode::INTERNAL_SERVER_ERROR, Html(html)).into_response()
}

/// An error page.
#[derive(Template)]
#[template(path = "error.html")]
struct ErrorPage {
    chrome: Chrome,
    heading: String,
    message: String,
}

/// An HTML error page of `site` with `status` and a message a person may read.
pub fn error_page(site: Site, status: StatusCode, message: &str) -> Response {
    let heading = match status {
        StatusCode::NOT_FOUND => "Page not found",
        StatusCode::FORBIDDEN => "Not available to you",
        StatusCode::TOO_MANY_REQUESTS => "Too many attempts",
        StatusCode::SERVICE_UNAVAILABLE => "Temporarily unavailable",
        s if s.is_server_error() => "Something went wrong",
        _ => "This request could not be served",
    };
    let page = ErrorPage {
        chrome: Chrome::public(site, heading),
        heading: heading.into(),
        message: message.into(),
    };
    match page.render() {
        Ok(html) => (status, Html(html)).into_response(),
        Err(e) => {
            tracing::error!(error = %e, "error page did not render");
            fallback_error(site)
        }
    }
}

/// The words of a failure for its error page, carried by a body-less answer until
/// [`page_headers`] renders the page of its site.
#[derive(Debug, Clone)]
struct ErrorWords(String);

/// The failure of a page handler: a status and the words of its error page (which
/// [`page_headers`] renders in the frame of the page's site).
#[derive(Debug)]
pub struct PageError {
    status: StatusCode,
    message: String,
    /// Where to send the visitor instead of showing the error page.
    redirect: Option<&'static str>,
}

impl PageError {
    /// A failure with `status`, explained by `message`.
    pub fn new(status: StatusCode, message: impl Into<String>) -> PageError {
        PageError {
            status,
            message: message.into(),
            redirect: None,
        }
    }

    /// The 404 page of what does not exist or is not the visitor's to see.
    pub fn not_yours() -> PageError {
        PageError::new(StatusCode::NOT_FOUND, NOT_YOURS)
    }
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        if let Some(to) = self.redirect {
            return super::super::session::see_other(to);
        }
        let mut r = self.status.into_response();
        r.extensions_mut().insert(ErrorWords(self.message));
        r
    }
}

/// What a visitor reads of a failed use case.
pub const NOT_YOURS: &str = "There is nothing here, or it is not yours to see.";

impl From<Error> for PageError {
    fn from(e: Error) -> Self {
        let status = e.status();
        let message = match &e {
            Error::Internal(text, cause) => {
                tracing::error!(error = ?cause, "{text}");
                "Something went wrong on our side. Please try again in a moment.".to_string()
            }
            Error::Unavailable(cause) => {
                tracing::warn!(error = %cause, "database unavailable");
                "The service is temporarily unavailable. Please try again in a moment.".into()
            }
            Error::NotFound(_) => NOT_YOURS.into(),
            // A workspace that requires two-factor: the dashboard's page that sets it up.
            Error::Forbidden(text) if text == app::two_factor::WORKSPACE_REQUIRES => {
                let mut e = PageError::new(status, text.clone());
                e.redirect = Some("/app/two-factor?required=1");
                return e;
            }
            other => other.to_string(),
        };
        PageError::new(status, message)
    }
}

impl From<app::Error> for PageError {
    fn from(e: app::Error) -> Self {
        Error::from(e).into()
    }
}

/// The result of a page handler.
pub type PageResult = Result<Response, PageError>;

/// The 404 page of any path of a site that is not a page.
pub async fn not_found() -> PageError {
    PageError::not_yours()
}

/// Every answer of `site`'s pages: a failure that is not already a page (a
/// [`PageError`], a rejected extractor, the per-IP login limit, a JSON error) becomes
/// the site's error page with the same status; pages get the Content-Security-Policy and
/// headers that keep them out of caches and frames.
pub async fn page_headers(State(site): State<Site>, req: Request, next: Next) -> Response {
    let response = next.run(req).await;
    let status = response.status();
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let mut response = if (status.is_client_error() || status.is_server_error())
        && !content_type.starts_with("text/html")
    {
        let retry_after = response.headers().get(RETRY_AFTER).cloned();
        let words = response.extensions().get::<ErrorWords>().cloned();
        let text = match words {
            Some(ErrorWords(text)) => text,
            None => {
                let body = axum::body::to_bytes(response.into_body(), 64 * 1024)
                    .await
                    .unwrap_or_default();
                error_text(status, &content_type, &body)
            }
        };
        let mut page = error_page(site, status, &text);
        if let Some(v) = retry_after {
            page.headers_mut().insert(RETRY_AFTER, v);
        }
        page
    } else {
        response
    };
    let is_html = response
        .headers()
        .get(CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/html"));
    if is_html {
        let h = response.headers_mut();
        h.insert(CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
        h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
        h.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
        h.insert(X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
        h.insert(REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    }
    response
}

/// The words of an error answer that is not a page: its JSON `error`, or the status.
fn error_text(status: StatusCode, content_type: &str, body: &Bytes) -> String {
    if status == StatusCode::NOT_FOUND {
        return NOT_YOURS.into();
    }
    if status.is_server_error() {
        return "Something went wrong on our side. Please try again in a moment.".into();
    }
    if content_type.starts_with("application/json") {
        if let Ok(v) = serde_json::from_slice::<serde_json::Value>(body) {
            if let Some(text) = v["error"].as_str() {
                return text.to_string();
            }
        }
    }
    status
        .canonical_reason()
        .unwrap_or("The request could not be served")
        .to_string()
}
