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

/// A site of pages, by the name of its session cookie.
pub struct Site {
    pub cookie: &'static str,
}

/// The partner portal.
pub const PORTAL: Site = Site {
    cookie: "rt_partner",
};
/// The owner's dashboard.
pub const DASHBOARD: Site = Site {
    cookie: "rt_session",
};

impl Site {
    /// A page request: `cookie` is the session cookie's value, `form` an urlencoded body
    /// sent with `origin` (none: no `Origin` header).
    pub async fn page(
        &self,
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
            req = req.header("cookie", format!("other=1; {}={c}", self.cookie));
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

    /// A GET of a page.
    pub async fn get(&self, app: &TestApp, path: &str, cookie: Option<&str>) -> Reply {
        self.page(app, "GET", path, cookie, None, None).await
    }

    /// A form sent from this site.
    pub async fn post(&self, app: &TestApp, path: &str, cookie: Option<&str>, form: &str) -> Reply {
        self.page(app, "POST", path, cookie, Some(form), Some(ORIGIN))
            .await
    }

    /// The session token a response's `Set-Cookie` carries (empty when it clears it).
    pub fn session(&self, r: &Reply) -> String {
        set_cookie(r, self.cookie)
    }
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
