//! The stylesheet and script of the product's pages, `GET /assets/app.css` and
//! `GET /assets/app.js`, compiled into the binary.
//!
//! Pages link them as `…?v=<hash>`, the first 12 hex digits of the content's SHA-256, so
//! a new build changes the URL: the files may be cached for a day, and after that the
//! strong `ETag` makes revalidation a body-less 304.

use std::sync::OnceLock;

use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, ETAG, X_CONTENT_TYPE_OPTIONS};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use sha2::{Digest, Sha256};

use crate::tracker::if_none_match;

/// The stylesheet.
const CSS: &str = include_str!("../../../../web/app.css");
/// The script.
const JS: &str = include_str!("../../../../web/app.js");
/// `Cache-Control` of both.
const CACHE_POLICY: &str = "public, max-age=86400";

/// One file: its body, type, strong entity tag and versioned URL.
struct Asset {
    body: &'static str,
    content_type: &'static str,
    etag: HeaderValue,
    href: String,
}

impl Asset {
    fn new(path: &str, body: &'static str, content_type: &'static str) -> Asset {
        let hash = hex::encode(Sha256::digest(body.as_bytes()));
        Asset {
            body,
            content_type,
            etag: HeaderValue::from_str(&format!("\"{hash}\"")).expect("hex is a valid header"),
            href: format!("{path}?v={}", &hash[..12]),
        }
    }

    fn respond(&self, headers: &HeaderMap) -> Response {
        let mut r = if if_none_match(headers, &self.etag) {
            StatusCode::NOT_MODIFIED.into_response()
        } else {
            let mut r = self.body.into_response();
            r.headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static(self.content_type));
            r
        };
        let h = r.headers_mut();
        h.insert(ETAG, self.etag.clone());
        h.insert(CACHE_CONTROL, HeaderValue::from_static(CACHE_POLICY));
        h.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
        r
    }
}

fn css() -> &'static Asset {
    static CSS_ASSET: OnceLock<Asset> = OnceLock::new();
    CSS_ASSET.get_or_init(|| Asset::new("/assets/app.css", CSS, "text/css; charset=utf-8"))
}

fn js() -> &'static Asset {
    static JS_ASSET: OnceLock<Asset> = OnceLock::new();
    JS_ASSET.get_or_init(|| {
        Asset::new(
            "/assets/app.js",
            JS,
            "application/javascript; charset=utf-8",
        )
    })
}

/// The stylesheet's URL, versioned by its content.
pub fn css_href() -> &'static str {
    &css().href
}

/// The script's URL, versioned by its content.
pub fn js_href() -> &'static str {
    &js().href
}

/// `GET /assets/app.css` and `GET /assets/app.js`.
pub fn router<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route(
            "/assets/app.css",
            get(|headers: HeaderMap| async move { css().respond(&headers) }),
        )
        .route(
            "/assets/app.js",
            get(|headers: HeaderMap| async move { js().respond(&headers) }),
        )
}
