//! Request extractors that answer bad input with `{"error": …}` and a 4xx status.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::header::CONTENT_TYPE;
use axum::http::request::Parts;
use axum::http::StatusCode;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

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
    Bytes::from_request(req, state)
        .await
        .map_err(|e: BytesRejection| {
            if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                Error::PayloadTooLarge
            } else {
                Error::bad_request("Could not read the request body")
            }
        })
}

fn parse_error(e: serde_json::Error) -> Error {
    use serde_json::error::Category;
    match e.classify() {
        Category::Data => Error::bad_request(format!("Invalid request body: {e}")),
        _ => Error::bad_request(format!("Malformed JSON: {e}")),
    }
}

/// A JSON object body, read field by field so that each wrong field gets the exact
/// error text the specification gives it.
pub struct JsonObject(pub Map<String, Value>);

impl<S: Send + Sync> FromRequest<S> for JsonObject {
    type Rejection = Error;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = json_bytes(req, state).await?;
        match serde_json::from_slice::<Value>(&bytes).map_err(parse_error)? {
            Value::Object(map) => Ok(JsonObject(map)),
            _ => Err(Error::bad_request("Request body must be a JSON object")),
        }
    }
}

/// A JSON body deserialized into `T`; type errors name the field.
pub struct JsonBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = Error;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = json_bytes(req, state).await?;
        serde_json::from_slice(&bytes)
            .map(JsonBody)
            .map_err(parse_error)
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

/// Longest identifier accepted (`transaction_id`, `customer_key`, `click_id`, ...).
pub const MAX_ID_LEN: usize = 255;
/// Longest free text stored (URLs, titles); longer values are cut, not refused.
pub const MAX_TEXT_LEN: usize = 2048;

/// A field holds a value of another JSON type than the one asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WrongType;

/// Typed access to the fields of a JSON object.
pub struct Fields<'a>(pub &'a Map<String, Value>);

impl<'a> Fields<'a> {
    /// A string field: `Ok(None)` when absent or null, `Err` when of another type.
    pub fn str(&self, key: &str) -> Result<Option<&'a str>, WrongType> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.as_str())),
            Some(_) => Err(WrongType),
        }
    }

    /// An identifier: a non-empty string of at most [`MAX_ID_LEN`] bytes, trimmed.
    /// Any other shape is an error with `msg`.
    pub fn id(&self, key: &str, msg: &str) -> Result<Option<String>, Error> {
        match self.str(key) {
            Ok(None) => Ok(None),
            Ok(Some(s)) if s.trim().is_empty() => Ok(None),
            Ok(Some(s)) if s.trim().len() <= MAX_ID_LEN => Ok(Some(s.trim().to_string())),
            Ok(Some(_)) => Err(Error::bad_request(format!(
                "{key} must be at most {MAX_ID_LEN} characters"
            ))),
            Err(WrongType) => Err(Error::bad_request(msg)),
        }
    }

    /// Free text, cut at [`MAX_TEXT_LEN`] bytes on a character boundary; a value of
    /// another type is a 400 naming the field.
    pub fn text(&self, key: &str) -> Result<Option<String>, Error> {
        match self.str(key) {
            Ok(s) => Ok(s
                .filter(|s| !s.is_empty())
                .map(|s| truncate(s, MAX_TEXT_LEN))),
            Err(WrongType) => Err(Error::bad_request(format!("{key} must be a string"))),
        }
    }

    /// A boolean field; absent or null is `None`.
    pub fn bool(&self, key: &str) -> Result<Option<bool>, Error> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(Error::bad_request(format!("{key} must be a boolean"))),
        }
    }

    /// An integer field (a JSON number without fraction that fits in i64).
    pub fn int(&self, key: &str) -> Result<Option<i64>, WrongType> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => n.as_i64().map(Some).ok_or(WrongType),
            Some(_) => Err(WrongType),
        }
    }
}

/// Cuts `s` to at most `max` bytes without splitting a character.
pub fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

/// The `additional_data` object of a tracking request.
#[derive(Debug, Default)]
pub struct AdditionalData {
    pub test_mode: bool,
    pub program_id: Option<i64>,
    pub event_name: Option<String>,
}

impl AdditionalData {
    /// Reads `additional_data` from a request body.
    pub fn from_body(body: &Map<String, Value>) -> Result<Self, Error> {
        let map = match body.get("additional_data") {
            None | Some(Value::Null) => return Ok(Self::default()),
            Some(Value::Object(map)) => map,
            Some(_) => return Err(Error::bad_request("additional_data must be an object")),
        };
        let f = Fields(map);
        let test_mode = f
            .bool("test_mode")
            .map_err(|_| Error::bad_request("additional_data.test_mode must be a boolean"))?
            .unwrap_or(false);
        let program_id = match f.int("program_id") {
            Ok(None) => None,
            Ok(Some(id)) if id > 0 => Some(id),
            _ => {
                return Err(Error::bad_request(
                    "additional_data.program_id must be a positive integer",
                ))
            }
        };
        let event_name = f
            .text("event_name")
            .map_err(|_| Error::bad_request("additional_data.event_name must be a string"))?
            .map(|s| truncate(&s, MAX_ID_LEN));
        Ok(AdditionalData {
            test_mode,
            program_id,
            event_name,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn additional_data_shapes() {
        let a = AdditionalData::from_body(&obj(
            json!({"additional_data": {"test_mode": true, "program_id": 3}}),
        ))
        .unwrap();
        assert!(a.test_mode);
        assert_eq!(a.program_id, Some(3));
        assert!(AdditionalData::from_body(&obj(json!({"additional_data": 5}))).is_err());
        assert!(
            AdditionalData::from_body(&obj(json!({"additional_data": {"test_mode": "yes"}})))
                .is_err()
        );
        assert!(
            AdditionalData::from_body(&obj(json!({"additional_data": {"program_id": "3"}})))
                .is_err()
        );
        assert!(
            AdditionalData::from_body(&obj(json!({"additional_data": {"program_id": -1}})))
                .is_err()
        );
        assert!(
            AdditionalData::from_body(&obj(json!({"additional_data": {"program_id": 1.5}})))
                .is_err()
        );
        let none = AdditionalData::from_body(&obj(json!({"additional_data": null}))).unwrap();
        assert!(!none.test_mode && none.program_id.is_none());
    }

    #[test]
    fn truncation_keeps_characters_whole() {
        assert_eq!(truncate("héllo", 2), "h");
        assert_eq!(truncate("héllo", 3), "hé");
        assert_eq!(truncate("abc", 10), "abc");
    }

    #[test]
    fn ids_are_trimmed_and_bounded() {
        let m = obj(json!({"a": "  x ", "b": 5, "c": "", "d": "y".repeat(300)}));
        let f = Fields(&m);
        assert_eq!(f.id("a", "bad").unwrap().as_deref(), Some("x"));
        assert_eq!(f.id("b", "bad").unwrap_err().to_string(), "bad");
        assert_eq!(f.id("c", "bad").unwrap(), None);
        assert!(f.id("d", "bad").is_err());
    }
}
