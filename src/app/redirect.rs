//! Redirect links: `GET /r/{short_link}` records the visit as a click, through the same
//! use case as the click API ([`App::track_click`]), and says where to send the visitor.

use super::track::{ClickCommand, ClickOutcome};
use super::{App, Error, Result};
use crate::domain::redirect::{self, RecordedClick};
use crate::domain::status::LinkStatus;
use crate::store::ClickDetails;

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
            };
            match self.track_click(command).await {
                Ok(ClickOutcome::Tracked { click_id: id, .. }) => click_id = Some(id),
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
        Ok(Some(Redirect { location, click_id }))
    }
}
