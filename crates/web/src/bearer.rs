//! The bearer token of a request's `Authorization` header.

use axum::http::{header::AUTHORIZATION, HeaderMap};

/// What an `Authorization` header holds.
#[derive(Debug, PartialEq, Eq)]
pub enum Bearer<'a> {
    /// No header at all.
    Absent,
    /// A header that is not `Bearer <non-empty token>`.
    Malformed,
    /// The trimmed token.
    Token(&'a str),
}

/// Reads the bearer token of a request .
pub fn bearer(headers: &HeaderMap) -> Bearer<'_> {
    let Some(value) = headers.get(AUTHORIZATION) else {
        return Bearer::Absent;
    };
    let Ok(value) = value.to_str() else {
        return Bearer::Malformed;
    };
    match value.strip_prefix("Bearer ") {
        Some(token) if !token.trim().is_empty() => Bearer::Token(token.trim()),
        _ => Bearer::Malformed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn bearer_rules() {
        let mut h = HeaderMap::new();
        assert_eq!(bearer(&h), Bearer::Absent);
        h.insert(AUTHORIZATION, HeaderValue::from_static("Basic abc"));
        assert_eq!(bearer(&h), Bearer::Malformed);
        h.insert(AUTHORIZATION, HeaderValue::from_static("Bearer    "));
        assert_eq!(bearer(&h), Bearer::Malformed);
        h.insert(AUTHORIZATION, HeaderValue::from_static("Bearer  tok "));
        assert_eq!(bearer(&h), Bearer::Token("tok"));
    }
}
