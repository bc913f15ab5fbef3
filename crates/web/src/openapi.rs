//! The OpenAPI 3.1 description of every endpoint, generated from the handlers' own
//! annotations (utoipa), served at `/openapi.json`, and rendered as a reference page at
//! `/docs` by the server itself (no external assets).

use std::fmt::Write;
use std::sync::Arc;

use axum::http::header::CONTENT_TYPE;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use utoipa::openapi::path::Operation;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::openapi::{Content, Deprecated, OpenApi, Ref, RefOr, ResponseBuilder};
use utoipa::Modify;

/// The document's fixed parts: title, description, tags and security schemes.
#[derive(utoipa::OpenApi)]
#[openapi(
    info(
        title = "Reftrack",
        description = "Affiliate tracking: clicks, leads, sales, refunds and commissions, with program dashboards. Errors are always `{\"error\": \"…\"}`.",
        license(name = "MIT"),
    ),
    tags(
        (name = "tracking", description = "Tracking API: clicks and leads from browsers, leads, sales and refunds from your backend"),
        (name = "tracking (legacy)", description = "Deprecated alias of the tracking API under /api/tracking/, for older trackers"),
        (name = "dashboard", description = "Program reports for dashboard users (session token)"),
        (name = "auth", description = "Dashboard sessions"),
        (name = "management", description = "Set programs up (admin token)"),
        (name = "payouts", description = "Commissions, balances and payouts: paying partners (admin token)"),
        (name = "partners", description = "Partner accounts and the partner API (partner session token)"),
        (name = "webhooks", description = "Payment-processor webhooks"),
        (name = "outbound webhooks", description = "Endpoints a program's events are sent to, signed by the Standard Webhooks scheme, and their delivery log (admin token)"),
        (name = "service", description = "Health, readiness and the tracker script"),
        (name = "redirects", description = "Redirect links: a partner's short link that records the click and sends the visitor on (a page, not JSON)"),
    ),
    modifiers(&SecuritySchemes),
)]
struct ApiDoc;

struct SecuritySchemes;

impl Modify for SecuritySchemes {
    fn modify(&self, openapi: &mut OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        for (name, what) in [
            (
                "api_key",
                "Program API key (`rtk_…`), from program creation or rotation",
            ),
            (
                "session",
                "Dashboard session token (`rts_…`) from POST /api/auth/login",
            ),
            (
                "partner_session",
                "Partner session token (`rtp_…`) from POST /api/partner/auth/login or accept-invite",
            ),
            (
                "admin_token",
                "Management token (`rta_…`), printed at first start or REFTRACK_ADMIN_TOKEN",
            ),
        ] {
            let mut http = Http::new(HttpAuthScheme::Bearer);
            http.description = Some(what.to_string());
            components.add_security_scheme(name, SecurityScheme::Http(http));
        }
    }
}

/// The base document the routers add their paths to.
pub fn base() -> OpenApi {
    <ApiDoc as utoipa::OpenApi>::openapi()
}

/// Errors that come from shared machinery rather than from one handler, added to every
/// operation they apply to, as its annotations tell: an id in the path can be no id (400),
/// a JSON request body can be too large or not JSON (413, 415; the webhooks read raw
/// bytes and declare their own), an
/// admin-token operation can lack the token (401), and everything but the service
/// endpoints can find the database unavailable (503). Rate limits (429) are declared by
/// the handlers they apply to.
fn add_common_errors(op: &mut Operation) {
    let mut add = |status: &str, description: &str| {
        if !op.responses.responses.contains_key(status) {
            let response = ResponseBuilder::new()
                .description(description)
                .content(
                    "application/json",
                    Content::new(Some(Ref::from_schema_name("ErrorBody"))),
                )
                .build();
            op.responses
                .responses
                .insert(status.to_string(), RefOr::T(response));
        }
    };
    let tagged = |tag: &str| {
        op.tags
            .as_ref()
            .is_some_and(|tags| tags.iter().any(|t| t == tag))
    };
    let (webhook, service) = (tagged("webhooks"), tagged("service"));
    let json_body = op
        .request_body
        .as_ref()
        .is_some_and(|b| matches!(b, RefOr::T(b) if b.content.contains_key("application/json")));
    let admin = op.security.as_ref().is_some_and(|s| {
        serde_json::to_string(s)
            .unwrap_or_default()
            .contains("admin_token")
    });
    let id_in_path = op.parameters.as_ref().is_some_and(|ps| {
        ps.iter().any(|p| {
            matches!(p, RefOr::T(p) if matches!(p.parameter_in, utoipa::openapi::path::ParameterIn::Path))
                && serde_json::to_value(p).is_ok_and(|p| p["schema"]["type"] == "integer")
        })
    });
    if id_in_path {
        add("400", "Invalid path parameter (not a positive integer id)");
    }
    if json_body && !webhook {
        add("413", "Body over 64 KiB");
        add("415", "Body is not JSON");
    }
    if admin {
        add("401", "Missing or invalid admin token or dashboard session");
        add(
            "403",
            "A dashboard session whose role or membership does not allow this",
        );
    }
    if !service {
        add("503", "Database unavailable");
    }
}

/// Final touches once every path is in: the common errors of every operation, and the
/// messages sent to webhook endpoints.
pub fn finish(mut doc: OpenApi) -> OpenApi {
    super::webhook_messages::add_to(&mut doc);
    for item in doc.paths.paths.values_mut() {
        for op in [
            &mut item.get,
            &mut item.post,
            &mut item.put,
            &mut item.patch,
            &mut item.delete,
        ]
        .into_iter()
        .flatten()
        {
            add_common_errors(op);
        }
    }
    doc
}

/// Marks every operation of `doc` as the deprecated legacy alias: its own tag and
/// operation ids, "(deprecated alias)" in its summary.
pub fn deprecate(doc: &mut OpenApi) {
    for item in doc.paths.paths.values_mut() {
        for op in [&mut item.get, &mut item.post].into_iter().flatten() {
            op.deprecated = Some(Deprecated::True);
            op.tags = Some(vec!["tracking (legacy)".into()]);
            op.operation_id = op.operation_id.as_ref().map(|id| format!("legacy_{id}"));
            op.summary = op
                .summary
                .as_ref()
                .map(|s| format!("{s} (deprecated alias)"));
        }
    }
}

/// `/openapi.json` and `/docs` for a finished document.
pub fn router<S: Clone + Send + Sync + 'static>(doc: &OpenApi) -> Router<S> {
    let json: Arc<str> = doc
        .to_pretty_json()
        .expect("the document serializes")
        .into();
    let page: Arc<str> = render(doc).into();
    Router::new()
        .route(
            "/openapi.json",
            get(move || {
                let json = json.clone();
                async move { ([(CONTENT_TYPE, "application/json")], json.to_string()).into_response() }
            }),
        )
        .route(
            "/docs",
            get(move || {
                let page = page.clone();
                async move { Html(page.to_string()).into_response() as Response }
            }),
        )
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Renders the document as one self-contained HTML page: every operation with its
/// parameters, request body, responses and security, then every schema.
pub fn render(doc: &OpenApi) -> String {
    let value = serde_json::to_value(doc).expect("the document serializes");
    let mut out = String::new();
    let title = value["info"]["title"].as_str().unwrap_or("API");
    let _ = write!(
        out,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t} API reference</title>\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><style>{STYLE}</style></head><body>\
         <h1>{t} API reference</h1><p>{d}</p><p>Machine-readable: <a href=\"/openapi.json\">/openapi.json</a> (OpenAPI {v}).</p>",
        t = escape(title),
        d = prose(value["info"]["description"].as_str().unwrap_or("")),
        v = escape(value["openapi"].as_str().unwrap_or("3.1.0")),
    );
    let empty = serde_json::Map::new();
    render_authentication(
        &mut out,
        value["components"]["securitySchemes"]
            .as_object()
            .unwrap_or(&empty),
    );
    let paths = value["paths"].as_object().unwrap_or(&empty);
    let tags: Vec<&serde_json::Value> = value["tags"]
        .as_array()
        .map(|t| t.iter().collect())
        .unwrap_or_default();
    out.push_str("<nav><ul><li><a href=\"#authentication\">authentication</a></li>");
    for tag in &tags {
        let name = tag["name"].as_str().unwrap_or("");
        let _ = write!(
            out,
            "<li><a href=\"#tag-{id}\">{n}</a></li>",
            id = slug(name),
            n = escape(name)
        );
    }
    out.push_str(
        "<li><a href=\"#webhook-messages\">webhook messages</a></li>\
         <li><a href=\"#schemas\">schemas</a></li></ul></nav>",
    );
    for tag in &tags {
        let name = tag["name"].as_str().unwrap_or("");
        let _ = write!(
            out,
            "<h2 id=\"tag-{id}\">{n}</h2><p>{d}</p>",
            id = slug(name),
            n = escape(name),
            d = prose(tag["description"].as_str().unwrap_or(""))
        );
        for (path, item) in paths {
            for (method, op) in item.as_object().unwrap_or(&empty) {
                let in_tag = op["tags"]
                    .as_array()
                    .is_some_and(|t| t.iter().any(|x| x == name));
                if !in_tag {
                    continue;
                }
                render_operation(&mut out, method, path, op);
            }
        }
    }
    out.push_str(
        "<h2 id=\"webhook-messages\">Webhook messages</h2><p>What Reftrack sends to a \
         program's webhook endpoints, one entry per event type.</p>",
    );
    for (name, item) in value["webhooks"].as_object().unwrap_or(&empty) {
        for (method, op) in item.as_object().unwrap_or(&empty) {
            render_operation(&mut out, method, name, op);
        }
    }
    out.push_str("<h2 id=\"schemas\">Schemas</h2>");
    if let Some(schemas) = value["components"]["schemas"].as_object() {
        for (name, schema) in schemas {
            let _ = write!(
                out,
                "<section class=\"schema\" id=\"schema-{n}\"><h3>{n}</h3>{d}<pre>{s}</pre></section>",
                n = escape(name),
                d = schema["description"].as_str().map(|d| format!("<p>{}</p>", prose(d))).unwrap_or_default(),
                s = escape(&serde_json::to_string_pretty(schema).unwrap_or_default()),
            );
        }
    }
    out.push_str("</body></html>");
    out
}

/// The section that says how a call authenticates: one entry per security scheme, which
/// each operation's "Auth" line links to.
fn render_authentication(out: &mut String, schemes: &serde_json::Map<String, serde_json::Value>) {
    out.push_str(
        "<h2 id=\"authentication\">Authentication</h2><p>A call that needs credentials \
         takes them in the <code>Authorization</code> header as \
         <code>Authorization: Bearer &lt;token&gt;</code>; an operation's <em>Auth</em> \
         line names the token it takes (<em>none</em>: no header).</p><dl>",
    );
    for (name, scheme) in schemes {
        let _ = write!(
            out,
            "<dt id=\"auth-{id}\"><code>{n}</code></dt><dd>{d}</dd>",
            id = slug(name),
            n = escape(name),
            d = prose(scheme["description"].as_str().unwrap_or("")),
        );
    }
    out.push_str("</dl>");
}

/// Escapes prose and shows its `backticked` parts as code.
fn prose(s: &str) -> String {
    escape(s)
        .split('`')
        .enumerate()
        .map(|(i, part)| {
            if i % 2 == 1 {
                format!("<code>{part}</code>")
            } else {
                part.to_string()
            }
        })
        .collect()
}

fn slug(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

fn schema_name(v: &serde_json::Value) -> String {
    if let Some(r) = v["$ref"].as_str() {
        let name = r.rsplit('/').next().unwrap_or(r);
        return format!("<a href=\"#schema-{n}\">{n}</a>", n = escape(name));
    }
    if let Some(t) = v["type"].as_str() {
        return escape(t);
    }
    if let Some(types) = v["type"].as_array() {
        return escape(
            &types
                .iter()
                .filter_map(|t| t.as_str())
                .collect::<Vec<_>>()
                .join(" | "),
        );
    }
    "object".into()
}

fn render_operation(out: &mut String, method: &str, path: &str, op: &serde_json::Value) {
    let deprecated = op["deprecated"].as_bool().unwrap_or(false);
    let _ = write!(
        out,
        "<section class=\"op{dep}\"><h3><span class=\"m {m}\">{M}</span> <code>{p}</code>{depnote}</h3><p><strong>{s}</strong></p><p>{d}</p>",
        dep = if deprecated { " deprecated" } else { "" },
        m = escape(method),
        M = escape(&method.to_uppercase()),
        p = escape(path),
        depnote = if deprecated { " <em>deprecated</em>" } else { "" },
        s = prose(op["summary"].as_str().unwrap_or("")),
        d = prose(op["description"].as_str().unwrap_or("")),
    );
    if let Some(sec) = op["security"].as_array() {
        let names: Vec<String> = sec
            .iter()
            .map(|req| {
                let keys: Vec<&String> = req
                    .as_object()
                    .map(|o| o.keys().collect())
                    .unwrap_or_default();
                if keys.is_empty() {
                    "none".to_string()
                } else {
                    keys.iter()
                        .map(|k| format!("<a href=\"#auth-{}\">{}</a>", slug(k), escape(k)))
                        .collect::<Vec<_>>()
                        .join(" + ")
                }
            })
            .collect();
        let _ = write!(out, "<p>Auth: {}</p>", names.join(" or "));
    }
    if let Some(params) = op["parameters"].as_array() {
        out.push_str("<table><tr><th>Parameter</th><th>In</th><th>Type</th><th>Required</th><th>Description</th></tr>");
        for p in params {
            let _ = write!(
                out,
                "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(p["name"].as_str().unwrap_or("")),
                escape(p["in"].as_str().unwrap_or("")),
                schema_name(&p["schema"]),
                if p["required"].as_bool().unwrap_or(false) {
                    "yes"
                } else {
                    "no"
                },
                prose(p["description"].as_str().unwrap_or("")),
            );
        }
        out.push_str("</table>");
    }
    if let Some(content) = op["requestBody"]["content"].as_object() {
        for (ct, media) in content {
            let _ = write!(
                out,
                "<p>Body ({}): {}</p>",
                escape(ct),
                schema_name(&media["schema"])
            );
        }
    }
    if let Some(responses) = op["responses"].as_object() {
        out.push_str("<table><tr><th>Status</th><th>Description</th><th>Body</th></tr>");
        for (status, r) in responses {
            let body = r["content"]
                .as_object()
                .and_then(|c| c.values().next())
                .map(|m| schema_name(&m["schema"]))
                .unwrap_or_default();
            let _ = write!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(status),
                prose(r["description"].as_str().unwrap_or("")),
                body
            );
        }
        out.push_str("</table>");
    }
    out.push_str("</section>");
}

const STYLE: &str = "body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1a1a1a}\
h2{border-bottom:1px solid #ddd;padding-bottom:.3rem;margin-top:2.5rem}nav ul{display:flex;flex-wrap:wrap;gap:1rem;list-style:none;padding:0}\
.op{border:1px solid #e3e3e3;border-radius:6px;padding:.2rem 1rem;margin:1rem 0}.deprecated{opacity:.7}\
.m{display:inline-block;min-width:4rem;font-size:.8rem;padding:.1rem .4rem;border-radius:4px;color:#fff;background:#555;text-align:center}\
.post{background:#2b7a3d}.get{background:#1f5fa8}.patch{background:#a86b1f}.put{background:#7a2b6e}\
table{border-collapse:collapse;width:100%;margin:.5rem 0}td,th{border:1px solid #e3e3e3;padding:.25rem .5rem;text-align:left;vertical-align:top}\
pre{background:#f6f6f6;padding:.6rem;overflow:auto;font-size:.85rem}code{font-size:.9rem}";
