//! The OpenAPI document: generated from the code, reviewed through a committed snapshot
//! (`docs/openapi.json`), and served at `/openapi.json` and `/docs`.

use crate::common::*;

const SNAPSHOT: &str = "docs/openapi.json";

#[test]
fn served_document_matches_the_committed_snapshot() {
    let doc = reftrack::http::openapi_document().to_pretty_json().unwrap() + "\n";
    if std::env::var_os("UPDATE_OPENAPI_SNAPSHOT").is_some() {
        std::fs::write(SNAPSHOT, &doc).unwrap();
    }
    let committed = std::fs::read_to_string(SNAPSHOT).unwrap_or_default();
    assert!(
        committed == doc,
        "the API changed: review the difference and refresh {SNAPSHOT} with \
         `UPDATE_OPENAPI_SNAPSHOT=1 cargo test --test api openapi`"
    );
}

/// The routes given the long time limit exist, so a renamed route cannot silently lose it.
#[test]
fn long_requests_name_routes_of_the_api() {
    let doc = serde_json::to_value(reftrack::http::openapi_document()).unwrap();
    for (method, path) in reftrack::http::outage::LONG_REQUESTS {
        let op = &doc["paths"][path][method.to_ascii_lowercase()];
        assert!(op.is_object(), "{method} {path} is not a route");
    }
}

#[test]
fn every_operation_documents_its_errors_and_auth() {
    let doc = serde_json::to_value(reftrack::http::openapi_document()).unwrap();
    let mut ids = std::collections::BTreeSet::new();
    for item in doc["paths"].as_object().unwrap().values() {
        for op in item.as_object().unwrap().values() {
            if let Some(id) = op["operationId"].as_str() {
                assert!(ids.insert(id.to_string()), "operationId {id} is not unique");
            }
        }
    }
    assert_eq!(doc["openapi"], "3.1.0");
    for scheme in ["api_key", "session", "admin_token"] {
        assert_eq!(
            doc["components"]["securitySchemes"][scheme]["scheme"], "bearer",
            "{scheme}"
        );
    }
    let paths = doc["paths"].as_object().unwrap();
    for (path, item) in paths {
        for (method, op) in item.as_object().unwrap() {
            let responses = op["responses"].as_object().unwrap();
            // A redirect link answers a browser: a 302, or an HTML page.
            let page = op["tags"][0] == "redirects";
            let success = if page { '3' } else { '2' };
            assert!(
                responses.keys().any(|s| s.starts_with(success)),
                "{method} {path}: no success"
            );
            for (status, r) in responses {
                if page && (status.starts_with('4') || status.starts_with('5')) {
                    assert!(
                        r["content"]["text/html"].is_object(),
                        "{method} {path} {status}"
                    );
                } else if status.starts_with('4') || status.starts_with('5') {
                    let schema = &r["content"]["application/json"]["schema"]["$ref"];
                    // A duplicate sale's 409 is the error body plus the earlier sale.
                    // A sign-in's 401 may also say that a two-factor code is required.
                    let body = if path.ends_with("/sale") && status == "409" {
                        "#/components/schemas/DuplicateSaleBody"
                    } else if path.ends_with("/auth/login") && status == "401" {
                        "#/components/schemas/TwoFactorRequiredBody"
                    } else {
                        "#/components/schemas/ErrorBody"
                    };
                    assert_eq!(schema, body, "{method} {path} {status}");
                }
            }
            let needs = |tag: &str| op["tags"][0] == tag;
            if needs("dashboard") {
                assert_eq!(
                    op["security"][0]["session"],
                    serde_json::json!([]),
                    "{path}"
                );
                assert!(
                    responses.contains_key("401")
                        && responses.contains_key("403")
                        && responses.contains_key("404"),
                    "{path}"
                );
            }
            if needs("management") {
                assert_eq!(
                    op["security"][0]["admin_token"],
                    serde_json::json!([]),
                    "{path}"
                );
                assert!(responses.contains_key("401"), "{path}");
            }
        }
    }
    // Every route of the service is described, the legacy alias as deprecated.
    for path in [
        "/api/v1/track/click",
        "/api/v1/track/lead",
        "/api/v1/track/sale",
        "/api/v1/track/refund",
        "/api/tracking/performance/{program_id}",
        "/api/tracking/status/{program_id}",
        "/api/tracking/events/{program_id}",
        "/api/auth/login",
        "/api/auth/logout",
        "/api/webhooks/stripe/{program_id}",
        "/healthz",
        "/readyz",
        "/tracker.js",
        "/api/admin/programs",
        "/api/admin/links/{id}",
        "/api/admin/workspaces/{id}/members/{user_id}",
    ] {
        assert!(paths.contains_key(path), "{path} is not documented");
    }
    for w in ["click", "lead", "sale", "refund"] {
        let op = &paths[&format!("/api/tracking/{w}")]["post"];
        assert_eq!(op["deprecated"], true);
        assert_eq!(op["operationId"], format!("legacy_{w}"));
    }
    assert_eq!(
        paths["/api/v1/track/sale"]["post"]["security"][0]["api_key"],
        serde_json::json!([])
    );
}

on_both_backends!(openapi_json_and_docs_are_served);
async fn openapi_json_and_docs_are_served(app: TestApp) {
    let r = app
        .send("GET", "/openapi.json", None, &[])
        .await
        .expect(200);
    assert_eq!(r.headers["content-type"], "application/json");
    assert_eq!(
        r.body,
        serde_json::to_value(reftrack::http::openapi_document()).unwrap()
    );
    let page = app.send("GET", "/docs", None, &[]).await.expect(200);
    assert!(page.headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    let html = page.body.as_str().unwrap();
    assert!(html.contains("<code>/api/v1/track/sale</code>"));
    assert!(html.contains("Duplicate transaction_id"));
    assert!(html.contains("deprecated"));
    // How to authenticate, and each operation's token linked to it.
    assert!(html.contains("<code>Authorization: Bearer &lt;token&gt;</code>"));
    assert!(html.contains("<dt id=\"auth-api-key\">") && html.contains("rtk_"));
    assert!(html.contains("Auth: <a href=\"#auth-api-key\">api_key</a>"));
    // The messages sent to webhook endpoints, with their headers.
    assert!(html.contains("<code>sale.created</code>") && html.contains("webhook-signature"));
    assert!(
        !html.contains("http://") && !html.contains("https://cdn"),
        "no external assets"
    );
}
