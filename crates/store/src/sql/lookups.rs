//! The lookups of the tracking API, on the read pool: a link by its short link, and
//! whether any program admits an origin ([`TrackingLookups`]).

use async_trait::async_trait;

use super::engine::{stmt, Engine};
use super::{named, parse_origins, SqlStore};
use crate::error::StoreResult;
use crate::model::{origin_allowed, LinkTarget};
use crate::TrackingLookups;

#[async_trait]
impl<DB: Engine> TrackingLookups for SqlStore<DB> {
    async fn link_target(&self, short_link: &str) -> StoreResult<Option<LinkTarget>> {
        link_target::<DB>(&mut *self.read.acquire().await?, short_link).await
    }

    async fn any_program_allows_origin(&self, origin: &str) -> StoreResult<bool> {
        any_program_allows_origin::<DB>(&mut *self.read.acquire().await?, origin).await
    }
}

/// A referral link by its `short_link`, with what a click needs of its program and
/// partner.
async fn link_target<DB: Engine>(
    conn: &mut DB::Connection,
    short_link: &str,
) -> StoreResult<Option<LinkTarget>> {
    let row = stmt::<DB>(
        "SELECT l.id, l.status, l.program_id, l.partner_id, pa.code, p.cookie_window_days, \
         p.allowed_origins, COALESCE(l.destination_url, p.destination_url) AS destination_url \
         FROM referral_links l \
         JOIN programs p ON p.id = l.program_id \
         LEFT JOIN partners pa ON pa.id = l.partner_id \
         WHERE l.short_link = $1",
    )
    .bind(short_link)
    .fetch_optional(&mut *conn)
    .await?;
    let Some(r) = row else { return Ok(None) };
    Ok(Some(LinkTarget {
        link_id: r.try_get("id")?,
        link_status: named(&r, "status")?,
        program_id: r.try_get("program_id")?,
        partner_id: r.try_get("partner_id")?,
        partner_code: r.try_get("code")?,
        cookie_window_days: r.try_get("cookie_window_days")?,
        allowed_origins: parse_origins(&r.try_get::<String>("allowed_origins")?),
        destination_url: r.try_get("destination_url")?,
    }))
}

/// Whether any program admits `origin`.
async fn any_program_allows_origin<DB: Engine>(
    conn: &mut DB::Connection,
    origin: &str,
) -> StoreResult<bool> {
    let lists: Vec<String> = stmt::<DB>("SELECT allowed_origins FROM programs")
        .scalar_all(&mut *conn)
        .await?;
    Ok(lists
        .iter()
        .any(|l| origin_allowed(&parse_origins(l), Some(origin))))
}
