//! Request extractors that answer bad input with `{"error": …}` and a 4xx status.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::header::CONTENT_TYPE;
use axum::http::request::Parts;
use axum::http::StatusCode;
use serde::de::DeserializeOwned;

use super::error::Error;

/// Request bodies larger than this are refused with 413.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// Reads a body that must be JSON: 415 for another content type, 413 over the limit,
/// 400 for anything that does not parse.
async fn json_bytes<S: Send + Sync>(req: Request, state: &S) -> Result<Bytes, Error> {
    let is_json = req
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|m| {
            let m = m.trim().to_ascii_lowercase();
            m == "application/json" || (m.starts_with("application/") && m.ends_with("+json"))
        })
        .unwrap_or(false);
    if !is_json {
        return Err(Error::UnsupportedMediaType);
    }
    let bytes = Bytes::from_request(req, state)
        .await
        .map_err(|e: BytesRejection| {
            if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                Error::PayloadTooLarge
            } else {
                Error::bad_request("Could not read the request body")
            }
        })?;
    refuse_nul_in_json(&bytes)?;
    Ok(bytes)
}

/// What a request with a NUL character in its text is answered.
pub const NUL_REFUSED: &str = "Text must not contain the NUL character (\\u0000)";

/// 400 [`NUL_REFUSED`] when a JSON text holds the escape `\u0000` in a string (JSON
/// allows no raw NUL byte). No field stores one: PostgreSQL refuses it in text, and one
/// refused statement would fail the whole write batch it shares with other requests.
pub fn refuse_nul_in_json(json: &[u8]) -> Result<(), Error> {
    let escaped = memchr::memmem::find_iter(json, br"\u0000").any(|at| {
        // An even run of backslashes before it is escaped backslashes: this one starts
        // the escape. An odd run escapes this backslash, and the text reads `\u0000`.
        json[..at].iter().rev().take_while(|b| **b == b'\\').count() % 2 == 0
    });
    if escaped {
        return Err(Error::bad_request(NUL_REFUSED));
    }
    Ok(())
}

fn parse_error(e: serde_json::Error) -> Error {
    use serde_json::error::Category;
    match e.classify() {
        Category::Data => Error::bad_request(format!("Invalid request body: {e}")),
        _ => Error::bad_request(format!("Malformed JSON: {e}")),
    }
}

/// The error of a field that does not fit its type: the type's text with the field's path
/// put in (`error_text` may word it otherwise); malformed JSON and a body that is not an
/// object keep their own texts.
fn field_error(
    e: serde_path_to_error::Error<serde_json::Error>,
    error_text: impl Fn(&str, String) -> String,
) -> Error {
    let field = e.path().to_string();
    let inner = e.into_inner();
    if !inner.is_data() {
        return Error::bad_request(format!("Malformed JSON: {inner}"));
    }
    let text = inner.to_string();
    // serde_json appends the position; the texts of the interface have none.
    let text = match text.rfind(" at line ") {
        Some(at) => text[..at].to_string(),
        None => text,
    };
    Error::bad_request(if text.contains("{field}") {
        error_text(&field, text.replace("{field}", &field))
    } else if field == "." {
        "Request body must be a JSON object".to_string()
    } else {
        format!("Invalid request body: {field}: {text}")
    })
}

/// Reads a query string into `T`: values trimmed, empty ones absent, the last of repeated
/// keys winning; a parameter that does not fit fails with its field type's text, named by
/// its key. Unknown keys are ignored.
pub fn read_query<T: DeserializeOwned>(raw: Option<&str>) -> Result<T, Error> {
    query_of(raw, true)
}

/// Reads the query string of a management or partner list into `T`: like [`read_query`],
/// but an empty value is kept (an empty `limit=` or id filter is then refused, as the
/// parameter's integer type says, rather than taken for absent).
pub fn read_list_query<T: DeserializeOwned>(raw: Option<&str>) -> Result<T, Error> {
    query_of(raw, false)
}

fn query_of<T: DeserializeOwned>(raw: Option<&str>, drop_empty: bool) -> Result<T, Error> {
    if raw.is_some_and(|q| q.contains("%00")) {
        return Err(Error::bad_request(NUL_REFUSED));
    }
    let params: serde_json::Map<String, serde_json::Value> =
        url::form_urlencoded::parse(raw.unwrap_or_default().as_bytes())
            .filter(|(_, v)| !(drop_empty && v.trim().is_empty()))
            .map(|(k, v)| {
                (
                    k.into_owned(),
                    serde_json::Value::String(v.trim().to_string()),
                )
            })
            .collect();
    serde_path_to_error::deserialize(serde_json::Value::Object(params))
        .map_err(|e| field_error(e, |_, text| text))
}

/// A body already parsed (the CLI's fields) read into `T` as [`JsonBody`] reads one: a
/// field that does not fit is named by its path.
pub fn read_body_value<T: DeserializeOwned>(value: serde_json::Value) -> Result<T, Error> {
    serde_path_to_error::deserialize(value).map_err(body_error)
}

/// The error of a body that does not fit `T`: a field's names the field; one of the
/// object itself (a missing field) has no field to name.
fn body_error(e: serde_path_to_error::Error<serde_json::Error>) -> Error {
    if e.path().iter().next().is_none() {
        parse_error(e.into_inner())
    } else {
        field_error(e, |_, text| text)
    }
}

/// A JSON object read into `T`: `not_object` for well-formed JSON that is not an object,
/// `misfit` for a value that does not fit `T`, "Malformed JSON" for the rest (trailing
/// characters included).
fn read_object<T: DeserializeOwned>(
    bytes: &[u8],
    not_object: &str,
    misfit: impl FnOnce(serde_path_to_error::Error<serde_json::Error>) -> Error,
) -> Result<T, Error> {
    // Serde also reads a struct from a JSON array of its fields in order; a body's
    // fields are named, so only an object is one.
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(
            match serde_json::from_slice::<serde::de::IgnoredAny>(bytes) {
                Ok(_) => Error::bad_request(not_object),
                Err(e) => parse_error(e),
            },
        );
    }
    let mut json = serde_json::Deserializer::from_slice(bytes);
    let value: T = serde_path_to_error::deserialize(&mut json).map_err(misfit)?;
    json.end()
        .map_err(|e| Error::bad_request(format!("Malformed JSON: {e}")))?;
    Ok(value)
}

/// A management, partner or dashboard request body read into `T`: 415 for another
/// content type, 413 over [`MAX_BODY_BYTES`], 400 for malformed JSON or a body that is
/// not an object. A field that does not fit its type is a 400 naming the field by its
/// path (`Invalid request body: commission.percent: invalid type: …`), and so is an
/// unknown field; an error of the object as a whole (a missing field) keeps serde's text.
pub struct JsonBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = Error;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = json_bytes(req, state).await?;
        read_object(
            &bytes,
            "Invalid request body: expected a JSON object",
            body_error,
        )
        .map(JsonBody)
    }
}

/// A JSON body that may be left out: a request without a body reads as `T::default()`.
pub struct OptionalJsonBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Default> FromRequest<S> for OptionalJsonBody<T> {
    type Rejection = Error;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let headers = req.headers();
        let empty = headers.get(axum::http::header::CONTENT_TYPE).is_none()
            && headers
                .get(axum::http::header::CONTENT_LENGTH)
                .is_none_or(|v| v.as_bytes() == b"0");
        if empty {
            return Ok(OptionalJsonBody(T::default()));
        }
        JsonBody::from_request(req, state)
            .await
            .map(|JsonBody(v)| OptionalJsonBody(v))
    }
}

/// Path parameters; a malformed id is a 400 JSON error, not axum's plain text.
pub struct PathParams<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for PathParams<T> {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|p| PathParams(p.0))
            .map_err(|_| {
                Error::bad_request("Invalid path parameter: expected a positive integer id")
            })
    }
}

/// A tracking request body read into `T`, one of the request types of the tracking
/// interface. A field that does not fit fails with the text its field type gives, with
/// the field's path (`additional_data.program_id`) put in; [`TrackRequest::error_text`]
/// may word it otherwise for one request.
pub struct TrackJson<T>(pub T);

/// A request type of the tracking interface.
pub trait TrackRequest: DeserializeOwned {
    /// The error text of a field that does not fit; `text` is the field type's.
    fn error_text(_field: &str, text: String) -> String {
        text
    }
}

impl<S: Send + Sync, T: TrackRequest> FromRequest<S> for TrackJson<T> {
    type Rejection = Error;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = json_bytes(req, state).await?;
        read_object(&bytes, "Request body must be a JSON object", |e| {
            field_error(e, T::error_text)
        })
        .map(TrackJson)
    }
}
