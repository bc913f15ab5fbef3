//! What every page shares: the site a page belongs to ([`Site`]), the frame around it
//! ([`Chrome`]), rendering, the HTML error pages, form fields with their errors, and the
//! headers of every page answer.

use std::collections::HashMap;

use askama::Template;
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Path, Request, State};
use axum::http::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, REFERRER_POLICY, RETRY_AFTER,
    X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS,
};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};

use super::assets;
use crate::Error;
use reftrack_service as app;
use reftrack_service::PageParams;

/// The Content-Security-Policy of every page: nothing from other hosts, no inline script
/// or style, forms only to this site.
pub const CSP: &str = "default-src 'self'; img-src 'self' data:; style-src 'self'; \
    script-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// Which set of pages a page belongs to: the partner portal or the owner's dashboard.
/// Its name, home and sign-out address frame every page, error pages included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Site {
    /// Shown beside the product's name in the header ("Partners").
    pub brand: &'static str,
    /// Ends every page title.
    pub title: &'static str,
    /// The site's first page.
    pub home: &'static str,
    /// The words of the link to it on error pages.
    pub home_label: &'static str,
    /// Where the sign-out form posts.
    pub logout: &'static str,
    /// The footer's line.
    pub footer: &'static str,
}

/// The frame of a page: its title, the navigation of a signed-in visitor, a notice.
pub struct Chrome {
    /// The site of the page.
    pub site: Site,
    /// The page's own title (the site's name is added).
    pub title: String,
    /// The navigation of a signed-in visitor; none on the pages of signed-out ones.
    pub nav: Option<Nav>,
    /// A one-line confirmation shown above the page (after a change).
    pub notice: Option<String>,
    /// The stylesheet's URL, versioned by its content.
    pub css: &'static str,
    /// The script's URL, versioned by its content.
    pub js: &'static str,
}

/// The navigation of a signed-in visitor.
pub struct Nav {
    /// Who is signed in, as the header shows it.
    pub who: String,
    pub items: Vec<NavItem>,
}

/// A link of a navigation bar.
pub struct NavItem {
    pub href: String,
    pub label: String,
    /// Marks the link of the page shown (`aria-current`).
    pub current: bool,
}

impl NavItem {
    /// A link, current when `href` is `current`.
    pub fn new(href: String, label: impl Into<String>, current: &str) -> NavItem {
        NavItem {
            current: href == current,
            href,
            label: label.into(),
        }
    }
}

impl Chrome {
    /// The frame of a page of `site` for signed-out visitors.
    pub fn public(site: Site, title: impl Into<String>) -> Chrome {
        Chrome {
            site,
            title: title.into(),
            nav: None,
            notice: None,
            css: assets::css_href(),
            js: assets::js_href(),
        }
    }

    /// The frame of a page of `site` for `who`, signed in, with its navigation.
    pub fn signed_in(
        site: Site,
        title: impl Into<String>,
        who: impl Into<String>,
        items: Vec<NavItem>,
    ) -> Chrome {
        Chrome {
            nav: Some(Nav {
                who: who.into(),
                items,
            }),
            ..Chrome::public(site, title)
        }
    }

    /// The same frame with a notice.
    pub fn with_notice(mut self, notice: Option<&str>) -> Chrome {
        self.notice = notice.map(str::to_string);
        self
    }
}

/// A rendered page with `status`; a template that fails to render is a 500 page.
pub fn render(status: StatusCode, page: &impl Template) -> Response {
    match page.render() {
        Ok(html) => (status, Html(html)).into_response(),
        Err(e) => {
            tracing::error!(error = %e, "page did not render");
            PageError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Something went wrong on our side. Please try again in a moment.",
            )
            .into_response()
        }
    }
}

/// A page with 200.
pub fn ok(page: &impl Template) -> Response {
    render(StatusCode::OK, page)
}

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
}

impl PageError {
    /// A failure with `status`, explained by `message`.
    pub fn new(status: StatusCode, message: impl Into<String>) -> PageError {
        PageError {
            status,
            message: message.into(),
        }
    }

    /// The 404 page of what does not exist or is not the visitor's to see.
    pub fn not_yours() -> PageError {
        PageError::new(StatusCode::NOT_FOUND, NOT_YOURS)
    }
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
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

/// A submitted form's fields, each with every value it was sent with (checkboxes of
/// one name send several). As an extractor it reads the request body, and refuses one
/// with a NUL character with the 400 page.
pub struct Posted(HashMap<String, Vec<String>>);

impl<S: Send + Sync> FromRequest<S> for Posted {
    type Rejection = Response;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let body = Bytes::from_request(req, state)
            .await
            .map_err(IntoResponse::into_response)?;
        refuse_nul(&body).map_err(IntoResponse::into_response)?;
        Ok(Posted::parse(&body))
    }
}

impl Posted {
    /// Reads an `application/x-www-form-urlencoded` body; anything else reads as empty.
    pub fn parse(body: &[u8]) -> Posted {
        let mut fields: HashMap<String, Vec<String>> = HashMap::new();
        for (k, v) in url::form_urlencoded::parse(body) {
            fields
                .entry(k.into_owned())
                .or_default()
                .push(v.into_owned());
        }
        Posted(fields)
    }

    /// A field's (first) value, empty when absent.
    pub fn get(&self, name: &str) -> String {
        self.0
            .get(name)
            .and_then(|v| v.first())
            .cloned()
            .unwrap_or_default()
    }

    /// Every value of a field, in the order sent; none when absent.
    pub fn all(&self, name: &str) -> Vec<String> {
        self.0.get(name).cloned().unwrap_or_default()
    }

    /// Whether the form has the field at all (blank or not).
    pub fn has(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }

    /// A field's value trimmed, `None` when absent or blank.
    pub fn text(&self, name: &str) -> Option<String> {
        Some(self.get(name).trim().to_string()).filter(|v| !v.is_empty())
    }

    /// Shows each of `fields` again with what this form sent under its name.
    pub fn refill(&self, fields: &mut [&mut Field]) {
        for f in fields {
            f.value = self.get(f.name);
        }
    }

    /// Shows each of `fields` again with what this form sent under its name, trimmed
    /// (the value the form's use case is given).
    pub fn refill_trimmed(&self, fields: &mut [&mut Field]) {
        for f in fields {
            f.value = self.get(f.name).trim().to_string();
        }
    }
}

/// The fields of the request's query string, read like a form's (the 400 page only for
/// a NUL character).
pub struct Query(pub Posted);

impl<S: Send + Sync> FromRequestParts<S> for Query {
    type Rejection = PageError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let query = parts.uri.query().unwrap_or_default().as_bytes();
        refuse_nul(query)?;
        Ok(Query(Posted::parse(query)))
    }
}

/// The 400 page of a form or query with a NUL character (`%00`) in it, which no field
/// stores.
fn refuse_nul(urlencoded: &[u8]) -> Result<(), PageError> {
    if memchr::memmem::find(urlencoded, b"%00").is_some() {
        return Err(PageError::new(
            StatusCode::BAD_REQUEST,
            crate::extract::NUL_REFUSED,
        ));
    }
    Ok(())
}

impl Posted {
    /// The page a list's `cursor` field asks for, of the default size.
    pub fn page(&self) -> PageParams {
        PageParams {
            limit: None,
            cursor: self.text("cursor"),
        }
    }
}

/// The program id of a page's path (`{id}` or `{program_id}`); anything but a positive
/// integer is the 404 page.
pub struct ProgramId(pub i64);

impl<S: Send + Sync> FromRequestParts<S> for ProgramId {
    type Rejection = PageError;

    async fn from_request_parts(parts: &mut Parts, s: &S) -> Result<Self, PageError> {
        let Path(raw) = Path::<String>::from_request_parts(parts, s)
            .await
            .map_err(|_| PageError::from(Error::not_found("Not found")))?;
        raw.parse::<i64>()
            .ok()
            .filter(|id| *id > 0)
            .map(ProgramId)
            .ok_or_else(|| Error::not_found("Not found").into())
    }
}

/// One input of a form: its name, label, the value to show again and its error.
#[derive(Debug, Clone)]
pub struct Field {
    pub name: &'static str,
    pub label: &'static str,
    pub value: String,
    pub error: Option<String>,
}

impl Field {
    /// An empty field.
    pub fn new(name: &'static str, label: &'static str) -> Field {
        Field {
            name,
            label,
            value: String::new(),
            error: None,
        }
    }

    /// The same field showing `value`.
    pub fn with(mut self, value: impl Into<String>) -> Field {
        self.value = value.into();
        self
    }

    /// Whether `text` is about this field: it starts with the field's name or speaks of
    /// "this <name>" (`A link with this short_link already exists`).
    fn concerns(&self, text: &str) -> bool {
        text.strip_prefix(self.name)
            .is_some_and(|rest| rest.starts_with(' '))
            || text.contains(&format!("this {}", self.name))
    }

    /// `text` in a person's words: the field's name replaced by its label.
    fn worded(&self, text: &str) -> String {
        match text.strip_prefix(self.name) {
            Some(rest) => format!("{}{rest}", self.label),
            None => text.replace(self.name, &self.label.to_ascii_lowercase()),
        }
    }
}

/// One checkbox of a group of one name (the group's [`Field`] carries that name, its
/// legend and its error).
#[derive(Debug, Clone)]
pub struct Choice {
    /// The value sent when it is checked.
    pub value: &'static str,
    pub label: &'static str,
    /// A few words under the label; empty for none.
    pub hint: &'static str,
    pub checked: bool,
}

/// Puts a service error's `text` beside the field it is about; the text for the top of
/// the form when it concerns none of them.
pub fn place_error(text: &str, fields: &mut [&mut Field]) -> Option<String> {
    match fields.iter_mut().find(|f| f.concerns(text)) {
        Some(f) => {
            f.error = Some(f.worded(text));
            None
        }
        None => Some(text.to_string()),
    }
}

/// Puts each of `texts` beside the field it is about, as [`place_error`] does; the last
/// that concerns none of them, for the top of the form.
pub fn place_errors<S: AsRef<str>>(
    texts: impl IntoIterator<Item = S>,
    fields: &mut [&mut Field],
) -> Option<String> {
    let mut above = None;
    for text in texts {
        if let Some(text) = place_error(text.as_ref(), fields) {
            above = Some(text);
        }
    }
    above
}

/// A refused form shown again: `fields` with what `form` sent under their names, and
/// each of the `refused` texts beside the field it is about, as [`place_errors`] puts
/// them; the last that concerns none of them, for the top of the form.
pub fn show_refused<S: AsRef<str>>(
    form: &Posted,
    refused: impl IntoIterator<Item = S>,
    fields: &mut [&mut Field],
) -> Option<String> {
    form.refill(fields);
    place_errors(refused, fields)
}

/// What a refused form shows: every wrong field the body's own checks name (`problems`),
/// or, when they find none (a taken code, a rule about stored records), the service's
/// `refused`.
pub fn problems_or(problems: Vec<String>, refused: String) -> Vec<String> {
    if problems.is_empty() {
        vec![refused]
    } else {
        problems
    }
}

/// The answer of a service call a form made, split for its page: the service's refusal
/// of the values sent (its words go beside a field, or atop the form shown again) apart
/// from any other failure (an error page).
pub trait Refusal<T> {
    /// `Ok(Err(text))` when a value is invalid or conflicts with a stored record; any
    /// other failure is an `Err`.
    fn refused(self) -> Result<Result<T, String>, PageError>;

    /// `Ok(Err(text))` when a value is invalid; a conflict too is an `Err`.
    fn invalid(self) -> Result<Result<T, String>, PageError>;

    /// `Ok(Err(text))` when the change conflicts with a stored record; an invalid value
    /// too is an `Err`.
    fn conflict(self) -> Result<Result<T, String>, PageError>;
}

impl<T> Refusal<T> for app::Result<T> {
    fn refused(self) -> Result<Result<T, String>, PageError> {
        split(self, true, true)
    }

    fn invalid(self) -> Result<Result<T, String>, PageError> {
        split(self, true, false)
    }

    fn conflict(self) -> Result<Result<T, String>, PageError> {
        split(self, false, true)
    }
}

/// `answer` with the texts of the refusals asked for (invalid values, conflicts) apart.
fn split<T>(
    answer: app::Result<T>,
    invalid: bool,
    conflict: bool,
) -> Result<Result<T, String>, PageError> {
    match answer {
        Ok(done) => Ok(Ok(done)),
        Err(app::Error::Invalid(t)) if invalid => Ok(Err(t)),
        Err(app::Error::Conflict(t)) if conflict => Ok(Err(t)),
        Err(e) => Err(e.into()),
    }
}

/// The commission statuses a list filters on, with their words (the empty value is
/// every status).
pub const COMMISSION_STATUSES: [(&str, &str); 6] = [
    ("", "All"),
    ("pending", "Pending"),
    ("approved", "Approved"),
    ("paid", "Paid"),
    ("reversed", "Reversed"),
    ("rejected", "Rejected"),
];

/// What a partner shares for its link `short_link` in a program whose site is at
/// `origins` (the first): an address on that site, or, without one, the `aff` parameter
/// to add to any page of the site that carries the tracker.
pub fn share_text(origins: &[String], short_link: &str) -> String {
    let aff: String = url::form_urlencoded::byte_serialize(short_link.as_bytes()).collect();
    match origins.first() {
        Some(origin) => format!("{}/?aff={aff}", origin.trim_end_matches('/')),
        None => format!("?aff={aff}"),
    }
}

/// An instant as a page shows it in `<time datetime=…>`: the day or the minute, in UTC;
/// the script puts them in the viewer's time zone.
pub struct Moment {
    /// `YYYY-MM-DD`, UTC.
    pub day: String,
    /// `YYYY-MM-DD HH:MM UTC`.
    pub minute: String,
    /// ISO 8601 with milliseconds, UTC.
    pub iso: String,
}

impl Moment {
    /// The moment of `ms` since the epoch.
    pub fn of(ms: i64) -> Moment {
        let iso = reftrack_domain::time::iso(ms);
        Moment {
            day: reftrack_domain::time::day_of(ms),
            minute: format!("{} {} UTC", &iso[..10], &iso[11..16]),
            iso,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_errors_land_beside_their_field() {
        let mut link = Field::new("short_link", "Short link");
        let text = place_error(
            "A link with this short_link already exists",
            &mut [&mut link],
        );
        assert_eq!(text, None);
        assert_eq!(
            link.error.as_deref(),
            Some("A link with this short link already exists")
        );

        let mut email = Field::new("email", "Email");
        let mut payout = Field::new("payout_email", "Payout email");
        place_error(
            "payout_email must be an email address",
            &mut [&mut email, &mut payout],
        );
        assert_eq!(email.error, None);
        assert_eq!(
            payout.error.as_deref(),
            Some("Payout email must be an email address")
        );

        let mut password = Field::new("password", "Password");
        assert_eq!(
            place_error("This invite link has expired", &mut [&mut password]).as_deref(),
            Some("This invite link has expired")
        );
        assert_eq!(password.error, None);
    }

    #[test]
    fn a_refused_form_shows_what_was_sent_and_why() {
        let form = Posted::parse(b"name=+Ann+&payout_email=nope");
        let mut name = Field::new("name", "Name");
        let mut payout = Field::new("payout_email", "Payout email");
        let above = show_refused(
            &form,
            ["payout_email must be an email address", "Try again later"],
            &mut [&mut name, &mut payout],
        );
        assert_eq!(name.value, " Ann ");
        assert_eq!(payout.value, "nope");
        assert_eq!(
            payout.error.as_deref(),
            Some("Payout email must be an email address")
        );
        assert_eq!(above.as_deref(), Some("Try again later"));
        form.refill_trimmed(&mut [&mut name]);
        assert_eq!(name.value, "Ann");
    }

    #[test]
    fn moments_read_in_utc() {
        let m = Moment::of(1_767_323_700_123);
        assert_eq!(m.day, "2026-01-02");
        assert_eq!(m.minute, "2026-01-02 03:15 UTC");
        assert_eq!(m.iso, "2026-01-02T03:15:00.123Z");
    }

    #[test]
    fn forms_read_the_first_value_of_each_field_or_all_of_them() {
        let p = Posted::parse(b"email=a%40b.c&email=x&name=+Ann+&empty=");
        assert_eq!(p.get("email"), "a@b.c");
        assert_eq!(p.text("name").as_deref(), Some("Ann"));
        assert_eq!(p.text("empty"), None);
        assert_eq!(p.get("missing"), "");
        let p = Posted::parse(b"events=a&events=b&x=1");
        assert_eq!(p.all("events"), ["a", "b"]);
        assert!(p.all("missing").is_empty());
    }
}
