//! Forms: the fields a page was sent ([`Posted`], [`Query`]), the program id of its
//! path ([`ProgramId`]), the fields a page shows with their errors ([`Field`],
//! [`Choice`]), and placing the service layer's refusals beside the field they name.

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Path, Request};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::Error;
use reftrack_service as app;
use reftrack_service::PageParams;

use super::errors::PageError;

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
