//! Requests of the HTML pages (the partner portal and the owner's dashboard) as a
//! browser on this site sends them: a host, a session cookie, urlencoded forms with an
//! `Origin`.

use axum::body::Body;
use axum::http::Request;

use super::{Reply, TestApp};

/// The host every page request names.
pub const HOST: &str = "pages.test";
/// This site's origin, as a browser sends it with a form.
pub const ORIGIN: &str = "http://pages.test";

/// A page request: `cookie` is a `name=value` pair, `form` an urlencoded body sent with
/// `origin` (none: no `Origin` header).
pub async fn page(
    app: &TestApp,
    method: &str,
    path: &str,
    cookie: Option<&str>,
    form: Option<&str>,
    origin: Option<&str>,
) -> Reply {
    let mut req = Request::builder()
        .method(method)
        .uri(path)
        .header("host", HOST);
    if let Some(c) = cookie {
        req = req.header("cookie", format!("other=1; {c}"));
    }
    if let Some(o) = origin {
        req = req.header("origin", o);
    }
    let body = match form {
        Some(f) => {
            req = req.header("content-type", "application/x-www-form-urlencoded");
            Body::from(f.to_string())
        }
        None => Body::empty(),
    };
    app.raw(req.body(body).unwrap()).await
}

/// The HTML of a page answer.
pub fn html(r: &Reply) -> &str {
    r.body
        .as_str()
        .unwrap_or_else(|| panic!("not HTML: {}", r.body))
}

/// Where a redirect goes.
pub fn location(r: &Reply) -> &str {
    r.headers["location"].to_str().unwrap()
}

/// The value a response's `Set-Cookie` gives the cookie `name` (empty when it clears it).
pub fn set_cookie(r: &Reply, name: &str) -> String {
    let set = r.headers["set-cookie"].to_str().unwrap();
    let value = set
        .strip_prefix(&format!("{name}="))
        .unwrap_or_else(|| panic!("no {name} in {set}"));
    value.split(';').next().unwrap().to_string()
}
