//! Redirect links: `GET /r/{short_link}` records the visit as a click, through the same
//! use case as the click API ([`App::track_click`]), and says where to send the visitor.

use crate::tracking::{ClickCommand, ClickOutcome};
use crate::{App, Error, Result};
use reftrack_domain::redirect::{self, RecordedClick};
use reftrack_domain::status::LinkStatus;
use reftrack_store::{ClickDetails, Link};

/// A visit of a redirect link.
#[derive(Debug)]
pub struct Visit {
    /// The link's short name, from the path.
    pub short_link: String,
    /// The request's own query string, passed on to the destination.
    pub query: Option<String>,
    /// What the click listing stores of the visit; `None` when the visit counts no
    /// click (a `HEAD`, a crawler or link-preview fetcher, a client over its rate limit).
    pub click: Option<ClickDetails>,
}

/// Where a visitor goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    /// The destination with the request's query, `aff` and, when a click was recorded,
    /// `rt_click` and `rt_window`.
    pub location: String,
    /// The click recorded, if any.
    pub click_id: Option<String>,
    /// Whether that click was committed when the visitor was sent on (else it was still
    /// queued when the redirect's wait ran out).
    pub committed: bool,
}

/// The address to share `link` at on the server at `public_url` (`<public_url>/r/<short
/// link>`), when following it leads somewhere, as [`App::follow_link`] decides: the link
/// is active and has a destination, its own or its program's (`program_destination`).
/// `None` otherwise; a link without a partner is not shared.
pub fn redirect_url(
    public_url: &str,
    link: &Link,
    program_destination: Option<&str>,
) -> Option<String> {
    let leads_somewhere = link.destination_url.is_some() || program_destination.is_some();
    if !leads_somewhere || link.status != LinkStatus::Active || link.partner_id.is_none() {
        return None;
    }
    redirect::link_url(public_url, &link.short_link)
}

impl App {
    /// Follows a redirect link: `None` for an unknown or inactive link, one without a
    /// partner, or one with no destination (its own or its program's). A visit that
    /// counts records its click as the click API would; should recording fail for the
    /// database, the visitor is still sent on, without a click.
    pub async fn follow_link(&self, v: Visit) -> Result<Option<Redirect>> {
        let Some(target) = self.link_target(&v.short_link).await? else {
            return Ok(None);
        };
        let (Some(code), Some(destination), LinkStatus::Active) = (
            target.partner_code.as_deref(),
            target.destination_url.as_deref(),
            target.link_status,
        ) else {
            return Ok(None);
        };
        let mut click_id = None;
        let mut committed = false;
        if let Some(mut details) = v.click {
            // The click's page is where the visitor lands.
            details.page_url = redirect::location(destination, v.query.as_deref(), code, None);
            let command = ClickCommand {
                aff: Ok(v.short_link.clone()),
                origin: None,
                details,
                existing_click_id: None,
                test_mode: false,
                program_id: None,
                redirect: true,
            };
            match self.track_click(command).await {
                Ok(ClickOutcome::Tracked {
                    click_id: id,
                    committed: done,
                    ..
                }) => {
                    click_id = Some(id);
                    committed = done;
                }
                // The link changed since it was looked up.
                Ok(_) | Err(Error::Invalid(_)) => return Ok(None),
                Err(e) => tracing::warn!(error = %e, "redirect sent on without its click"),
            }
        }
        let click = click_id.as_deref().map(|id| RecordedClick {
            click_id: id,
            cookie_window_days: target.cookie_window_days,
        });
        let location = redirect::location(destination, v.query.as_deref(), code, click)
            .ok_or_else(|| {
                Error::Internal(
                    "Internal server error",
                    anyhow::anyhow!("stored destination {destination:?} is not a URL"),
                )
            })?;
        Ok(Some(Redirect {
            location,
            click_id,
            committed,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(destination: Option<&str>, status: LinkStatus, partner_id: Option<i64>) -> Link {
        Link {
            id: 1,
            program_id: 1,
            partner_id,
            short_link: "alice".into(),
            status,
            destination_url: destination.map(str::to_string),
            coupon_codes: Vec::new(),
            clicks: 0,
            last_clicked: None,
            created_at: 0,
        }
    }

    #[test]
    fn a_link_is_shared_by_its_redirect_address_only_where_following_it_leads_somewhere() {
        let base = "https://go.example";
        let own = link(Some("https://shop.example/a"), LinkStatus::Active, Some(1));
        let plain = link(None, LinkStatus::Active, Some(1));
        let shared = Some("https://go.example/r/alice".to_string());
        assert_eq!(redirect_url(base, &own, None), shared);
        assert_eq!(
            redirect_url(base, &plain, Some("https://shop.example/")),
            shared
        );
        assert_eq!(redirect_url(base, &plain, None), None);
        let inactive = link(
            Some("https://shop.example/a"),
            LinkStatus::Inactive,
            Some(1),
        );
        assert_eq!(
            redirect_url(base, &inactive, Some("https://shop.example/")),
            None
        );
        let unassigned = link(Some("https://shop.example/a"), LinkStatus::Active, None);
        assert_eq!(redirect_url(base, &unassigned, None), None);
    }
}
