//! What every page shares: the site a page belongs to ([`Site`]), the frame around it
//! ([`Chrome`]), rendering, the HTML error pages, form fields with their errors, and the
//! headers of every page answer.

mod errors;
mod forms;

pub use errors::{error_page, not_found, page_headers, PageError, PageResult, NOT_YOURS};
pub use forms::{
    place_error, place_errors, problems_or, show_refused, Choice, Field, Posted, ProgramId, Query,
    Refusal,
};

use askama::Template;
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};

use super::assets;

/// The Content-Security-Policy of every page: nothing from other hosts, no inline script
/// or style, forms only to this site.
pub const CSP: &str = "default-src 'self'; img-src 'self' data:; style-src 'self'; \
    script-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// Which set of pages a page belongs to: the partner portal or the owner's dashboard.
/// Its name, home and sign-out address frame every page, error pages included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Site {
    /// Shown beside the product's name in the header ("Partners").
    pub brand: &'static str,
    /// Ends every page title.
    pub title: &'static str,
    /// The site's first page.
    pub home: &'static str,
    /// The words of the link to it on error pages.
    pub home_label: &'static str,
    /// Where the sign-out form posts.
    pub logout: &'static str,
    /// The footer's line.
    pub footer: &'static str,
}

/// The frame of a page: its title, the navigation of a signed-in visitor, a notice.
pub struct Chrome {
    /// The site of the page.
    pub site: Site,
    /// The page's own title (the site's name is added).
    pub title: String,
    /// The navigation of a signed-in visitor; none on the pages of signed-out ones.
    pub nav: Option<Nav>,
    /// A one-line confirmation shown above the page (after a change).
    pub notice: Option<String>,
    /// The stylesheet's URL, versioned by its content.
    pub css: &'static str,
    /// The script's URL, versioned by its content.
    pub js: &'static str,
}

/// The navigation of a signed-in visitor.
pub struct Nav {
    /// Who is signed in, as the header shows it.
    pub who: String,
    pub items: Vec<NavItem>,
}

/// A link of a navigation bar.
pub struct NavItem {
    pub href: String,
    pub label: String,
    /// Marks the link of the page shown (`aria-current`).
    pub current: bool,
}

impl NavItem {
    /// A link, current when `href` is `current`.
    pub fn new(href: String, label: impl Into<String>, current: &str) -> NavItem {
        NavItem {
            current: href == current,
            href,
            label: label.into(),
        }
    }
}

impl Chrome {
    /// The frame of a page of `site` for signed-out visitors.
    pub fn public(site: Site, title: impl Into<String>) -> Chrome {
        Chrome {
            site,
            title: title.into(),
            nav: None,
            notice: None,
            css: assets::css_href(),
            js: assets::js_href(),
        }
    }

    /// The frame of a page of `site` for `who`, signed in, with its navigation.
    pub fn signed_in(
        site: Site,
        title: impl Into<String>,
        who: impl Into<String>,
        items: Vec<NavItem>,
    ) -> Chrome {
        Chrome {
            nav: Some(Nav {
                who: who.into(),
                items,
            }),
            ..Chrome::public(site, title)
        }
    }

    /// The same frame with a notice.
    pub fn with_notice(mut self, notice: Option<&str>) -> Chrome {
        self.notice = notice.map(str::to_string);
        self
    }
}

/// A rendered page with `status`; a template that fails to render is a 500 page.
pub fn render(status: StatusCode, page: &impl Template) -> Response {
    match page.render() {
        Ok(html) => (status, Html(html)).into_response(),
        Err(e) => {
            tracing::error!(error = %e, "page did not render");
            PageError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Something went wrong on our side. Please try again in a moment.",
            )
            .into_response()
        }
    }
}

/// A page with 200.
pub fn ok(page: &impl Template) -> Response {
    render(StatusCode::OK, page)
}

/// The commission statuses a list filters on, with their words (the empty value is
/// every status).
pub const COMMISSION_STATUSES: [(&str, &str); 6] = [
    ("", "All"),
    ("pending", "Pending"),
    ("approved", "Approved"),
    ("paid", "Paid"),
    ("reversed", "Reversed"),
    ("rejected", "Rejected"),
];

/// A commission's kind in words.
pub fn kind_label(kind: reftrack_domain::status::CommissionKind) -> &'static str {
    use reftrack_domain::status::CommissionKind;
    match kind {
        CommissionKind::Sale => "Sale",
        CommissionKind::Lead => "Lead",
        CommissionKind::Bonus => "Bonus",
        CommissionKind::Bounty => "Bounty",
        CommissionKind::Clawback => "Refund taken back",
    }
}

/// What a commission is for, in words: its description, else its kind's.
pub fn commission_what(c: &reftrack_store::CommissionRow) -> String {
    c.description
        .clone()
        .unwrap_or_else(|| kind_label(c.kind).to_string())
}

/// What a partner shares for its link `short_link` in a program whose site is at
/// `origins` (the first): an address on that site, or, without one, the `aff` parameter
/// to add to any page of the site that carries the tracker.
pub fn share_text(origins: &[String], short_link: &str) -> String {
    let aff: String = url::form_urlencoded::byte_serialize(short_link.as_bytes()).collect();
    match origins.first() {
        Some(origin) => format!("{}/?aff={aff}", origin.trim_end_matches('/')),
        None => format!("?aff={aff}"),
    }
}

/// An instant as a page shows it in `<time datetime=…>`: the day or the minute, in UTC;
/// the script puts them in the viewer's time zone.
pub struct Moment {
    /// `YYYY-MM-DD`, UTC.
    pub day: String,
    /// `YYYY-MM-DD HH:MM UTC`.
    pub minute: String,
    /// ISO 8601 with milliseconds, UTC.
    pub iso: String,
}

impl Moment {
    /// The moment of `ms` since the epoch.
    pub fn of(ms: i64) -> Moment {
        let iso = reftrack_domain::time::iso(ms);
        Moment {
            day: reftrack_domain::time::day_of(ms),
            minute: format!("{} {} UTC", &iso[..10], &iso[11..16]),
            iso,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moments_read_in_utc() {
        let m = Moment::of(1_767_323_700_123);
        assert_eq!(m.day, "2026-01-02");
        assert_eq!(m.minute, "2026-01-02 03:15 UTC");
        assert_eq!(m.iso, "2026-01-02T03:15:00.123Z");
    }
}
