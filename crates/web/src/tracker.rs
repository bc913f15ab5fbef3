//! The browser tracker, `GET /tracker.js` (see docs/tracker.md).
//!
//! The script is compiled into the binary and served as-is. Its validators and its gzip
//! encoding are computed once, on the first request, and reused for the life of the process.
//!
//! Caching: `public, max-age=3600`. The URL carries no version (it is pasted into
//! integrators' pages once), so the script cannot be `immutable`: an hour bounds how long
//! a fixed or changed tracker takes to reach every browser and CDN, and after that the
//! `ETag` makes revalidation a body-less `304`.

use std::sync::OnceLock;

use axum::body::Bytes;
use axum::http::header::{
    ACCEPT_ENCODING, ACCESS_CONTROL_ALLOW_ORIGIN, CACHE_CONTROL, CONTENT_ENCODING, CONTENT_TYPE,
    ETAG, IF_NONE_MATCH, VARY, X_CONTENT_TYPE_OPTIONS,
};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

/// The tracker, exactly as served without content coding. `web/tracker.js` is written by
/// `clients/js/build.mjs` from the tracker's one source in `clients/js/src/` (which also
/// makes the npm package) and committed, so building the server needs no Node.js.
pub const SOURCE: &str = include_str!("../../../web/tracker.js");

/// `Cache-Control` of the script: see the module documentation for the choice.
pub const CACHE_POLICY: &str = "public, max-age=3600";

/// `Content-Type` of the script.
pub const CONTENT_TYPE_JS: &str = "application/javascript; charset=utf-8";

/// One encoding of the script: its body and its strong entity tag.
struct Variant {
    body: Bytes,
    etag: HeaderValue,
}

/// The identity and gzip encodings, built once.
struct Asset {
    identity: Variant,
    gzip: Variant,
}

fn asset() -> &'static Asset {
    static ASSET: OnceLock<Asset> = OnceLock::new();
    ASSET.get_or_init(|| {
        let hash = hex::encode(Sha256::digest(SOURCE.as_bytes()));
        let etag = |tag: String| HeaderValue::from_str(&tag).expect("hex is a valid header");
        Asset {
            identity: Variant {
                body: Bytes::from_static(SOURCE.as_bytes()),
                etag: etag(format!("\"{hash}\"")),
            },
            // A strong validator names one representation, so the gzip one gets its own
            // tag (RFC 9110 §8.8.3), derived from the same hash of the source.
            gzip: Variant {
                body: Bytes::from(gzip(SOURCE.as_bytes())),
                etag: etag(format!("\"{hash}-gzip\"")),
            },
        }
    })
}

fn gzip(data: &[u8]) -> Vec<u8> {
    use flate2::write::GzEncoder;
    use flate2::Compression;
    use std::io::Write;
    let mut encoder = GzEncoder::new(Vec::new(), Compression::best());
    encoder
        .write_all(data)
        .expect("writing to a Vec cannot fail");
    encoder.finish().expect("writing to a Vec cannot fail")
}

/// `GET /tracker.js` (and `HEAD`, which axum answers from the same handler).
///
/// Generic over the state so that it merges into any router.
pub fn router<S: Clone + Send + Sync + 'static>() -> utoipa_axum::router::OpenApiRouter<S> {
    utoipa_axum::router::OpenApiRouter::new().routes(utoipa_axum::routes!(tracker_js))
}

/// The browser tracker script.
///
/// Install with `<script src="…/tracker.js" data-program-id="1" async></script>`. Served
/// with a strong ETag, one hour of caching and gzip when accepted.
#[utoipa::path(
    get,
    path = "/tracker.js",
    tag = "service",
    responses(
        (status = 200, description = "The script", content_type = "application/javascript", body = String),
        (status = 304, description = "Not modified (If-None-Match matched the ETag)"),
    ),
)]
async fn tracker_js(headers: HeaderMap) -> Response {
    respond(&headers)
}

/// The response to a request with these headers: gzip when `Accept-Encoding` admits it,
/// `304 Not Modified` when `If-None-Match` names the chosen representation.
pub fn respond(headers: &HeaderMap) -> Response {
    let asset = asset();
    let use_gzip = accepts_gzip(headers);
    let variant = if use_gzip {
        &asset.gzip
    } else {
        &asset.identity
    };

    let mut response = if if_none_match(headers, &variant.etag) {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let mut r = variant.body.clone().into_response();
        let h = r.headers_mut();
        h.insert(CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE_JS));
        if use_gzip {
            h.insert(CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        }
        r
    };
    let h = response.headers_mut();
    h.insert(ETAG, variant.etag.clone());
    h.insert(CACHE_CONTROL, HeaderValue::from_static(CACHE_POLICY));
    // Sent on every answer, so that no shared cache hands the gzip body to a client that
    // did not ask for it (nor the reverse).
    h.insert(VARY, HeaderValue::from_static("Accept-Encoding"));
    h.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    // Public code: lets pages load it with `crossorigin` (Subresource Integrity) and under
    // `Cross-Origin-Embedder-Policy: require-corp`.
    h.insert(ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    h.insert(
        "cross-origin-resource-policy",
        HeaderValue::from_static("cross-origin"),
    );
    response
}

/// Whether `Accept-Encoding` admits gzip: a `gzip` (or `x-gzip`) coding, else `*`, with a
/// non-zero quality. No header means no content coding.
fn accepts_gzip(headers: &HeaderMap) -> bool {
    let mut gzip = None;
    let mut any = None;
    for value in headers.get_all(ACCEPT_ENCODING) {
        let Ok(value) = value.to_str() else { continue };
        for item in value.split(',') {
            let mut parts = item.split(';');
            let coding = parts.next().unwrap_or("").trim().to_ascii_lowercase();
            let q = parts
                .filter_map(|p| {
                    let (k, v) = p.split_once('=')?;
                    k.trim().eq_ignore_ascii_case("q").then(|| v.trim())
                })
                .next()
                .map_or(1.0, |v| v.parse::<f32>().unwrap_or(0.0));
            match coding.as_str() {
                "gzip" | "x-gzip" => gzip = Some(q > 0.0),
                "*" => any = Some(q > 0.0),
                _ => {}
            }
        }
    }
    gzip.or(any).unwrap_or(false)
}

/// `If-None-Match` against `etag` with the weak comparison that RFC 9110 §13.1.2 asks for
/// (a `W/` prefix is ignored); `*` matches.
pub(super) fn if_none_match(headers: &HeaderMap, etag: &HeaderValue) -> bool {
    let etag = etag.as_bytes();
    headers
        .get_all(IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .any(|tag| tag == "*" || tag.strip_prefix("W/").unwrap_or(tag).as_bytes() == etag)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::Request;
    use axum::Router;
    use http_body_util::BodyExt;
    use std::io::Read;
    use tower::ServiceExt;

    async fn get(headers: &[(&str, &str)]) -> (StatusCode, HeaderMap, Vec<u8>) {
        let mut req = Request::get("/tracker.js");
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let app: Router = router().split_for_parts().0;
        let res = app.oneshot(req.body(Body::empty()).unwrap()).await.unwrap();
        let (parts, body) = res.into_parts();
        let body = body.collect().await.unwrap().to_bytes().to_vec();
        (parts.status, parts.headers, body)
    }

    fn header<'a>(h: &'a HeaderMap, name: &str) -> &'a str {
        h.get(name).and_then(|v| v.to_str().ok()).unwrap_or("")
    }

    #[tokio::test]
    async fn serves_the_script_with_type_cache_policy_and_strong_etag() {
        let (status, h, body) = get(&[]).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body, SOURCE.as_bytes());
        assert_eq!(header(&h, "content-type"), CONTENT_TYPE_JS);
        assert_eq!(header(&h, "cache-control"), "public, max-age=3600");
        assert_eq!(header(&h, "vary"), "Accept-Encoding");
        assert!(h.get("content-encoding").is_none());
        let expected = format!("\"{}\"", hex::encode(Sha256::digest(SOURCE.as_bytes())));
        assert_eq!(header(&h, "etag"), expected);
    }

    #[tokio::test]
    async fn if_none_match_gives_304_without_body() {
        let (_, h, _) = get(&[]).await;
        let etag = header(&h, "etag").to_string();
        for inm in [
            etag.clone(),
            format!("W/{etag}"),
            format!("\"other\", {etag}"),
            "*".to_string(),
        ] {
            let (status, h2, body) = get(&[("if-none-match", &inm)]).await;
            assert_eq!(status, StatusCode::NOT_MODIFIED, "{inm}");
            assert!(body.is_empty());
            assert_eq!(header(&h2, "etag"), etag);
            assert_eq!(header(&h2, "cache-control"), CACHE_POLICY);
        }
        let (status, _, body) = get(&[("if-none-match", "\"stale\"")]).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body, SOURCE.as_bytes());
    }

    #[tokio::test]
    async fn gzip_when_accepted() {
        let (status, h, body) = get(&[("accept-encoding", "br, gzip;q=0.8")]).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(header(&h, "content-encoding"), "gzip");
        assert_eq!(header(&h, "vary"), "Accept-Encoding");
        assert_eq!(header(&h, "content-type"), CONTENT_TYPE_JS);
        assert!(body.len() < 3072, "gzipped tracker is {} bytes", body.len());
        let mut text = String::new();
        flate2::read::GzDecoder::new(&body[..])
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, SOURCE);

        // The gzip representation revalidates with its own tag.
        let etag = header(&h, "etag").to_string();
        assert_ne!(etag, header(&get(&[]).await.1, "etag"));
        let (status, _, _) = get(&[("accept-encoding", "gzip"), ("if-none-match", &etag)]).await;
        assert_eq!(status, StatusCode::NOT_MODIFIED);
    }

    #[tokio::test]
    async fn no_gzip_when_refused_or_not_offered() {
        for ae in ["identity", "gzip;q=0", "br", "*;q=0", "deflate, gzip;q=0.0"] {
            let (_, h, body) = get(&[("accept-encoding", ae)]).await;
            assert!(h.get("content-encoding").is_none(), "{ae}");
            assert_eq!(body, SOURCE.as_bytes(), "{ae}");
        }
        let (_, h, _) = get(&[("accept-encoding", "*")]).await;
        assert_eq!(header(&h, "content-encoding"), "gzip");
    }
}
