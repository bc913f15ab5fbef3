//! Partners, their records in programs, and referral links: their statements, outside
//! the group committer, and [`PartnerAdmin`] on the pools (with the links' coupons, whose
//! statements are `coupons`').

use async_trait::async_trait;

use super::coupons;
use super::engine::{stmt, Engine, Rec};
use super::{exists, named, named_opt, SqlStore};
use crate::audit::AuditOf;
use crate::error::{StoreError, StoreResult};
use crate::model::{Coupon, Link, LinkPatch, NewCoupon, Partner, PartnerPatch, PartnerProgram};
use crate::payout_model::Page;
use crate::PartnerAdmin;
use reftrack_domain::self_referral::email_key;
use reftrack_domain::status::{CouponStatus, LinkStatus, PartnerStatus};

#[async_trait]
impl<DB: Engine> PartnerAdmin for SqlStore<DB> {
    async fn create_partner(
        &self,
        name: &str,
        code: &str,
        email: Option<&str>,
        workspace_id: Option<i64>,
        at: i64,
    ) -> StoreResult<Partner> {
        let conn = &mut *self.write.acquire().await?;
        create_partner::<DB>(conn, name, code, email, workspace_id, at).await
    }

    async fn partner_program(
        &self,
        program_id: i64,
        partner_id: i64,
    ) -> StoreResult<PartnerProgram> {
        partner_program::<DB>(&mut *self.read.acquire().await?, program_id, partner_id).await
    }

    async fn update_partner(
        &self,
        id: i64,
        patch: &PartnerPatch,
        audit: AuditOf<'_, Partner>,
    ) -> StoreResult<Partner> {
        let mut conn = self.write.acquire().await?;
        let mut tx = sqlx::Connection::begin_with(&mut *conn, DB::BEGIN_WRITE).await?;
        let sql = format!(
            "SELECT {PARTNER_COLUMNS} FROM partners WHERE id = $1 {}",
            DB::ROW_LOCK
        );
        let old = match stmt::<DB>(&sql).bind(id).fetch_optional(&mut *tx).await? {
            Some(row) => partner_from_row(&row)?,
            None => return Err(StoreError::NotFound("partner")),
        };
        let new = update_partner::<DB>(&mut tx, id, patch).await?;
        super::audit::insert_entries::<DB>(&mut tx, &audit(Some(&old), &new)).await?;
        tx.commit().await?;
        Ok(new)
    }

    async fn create_link(
        &self,
        program_id: i64,
        partner_id: Option<i64>,
        short_link: &str,
        status: LinkStatus,
        destination_url: Option<&str>,
        at: i64,
    ) -> StoreResult<Link> {
        let conn = &mut *self.write.acquire().await?;
        create_link::<DB>(
            conn,
            program_id,
            partner_id,
            short_link,
            status,
            destination_url,
            at,
        )
        .await
    }

    async fn link(&self, id: i64) -> StoreResult<Link> {
        link::<DB>(&mut *self.read.acquire().await?, id).await
    }

    async fn update_link(&self, id: i64, patch: &LinkPatch) -> StoreResult<Link> {
        update_link::<DB>(&mut *self.write.acquire().await?, id, patch).await
    }

    async fn create_coupon(&self, c: &NewCoupon, at: i64) -> StoreResult<Coupon> {
        coupons::create::<DB>(&mut *self.write.acquire().await?, c, at).await
    }

    async fn link_coupons(
        &self,
        link_id: i64,
        status: Option<CouponStatus>,
        page: Page,
    ) -> StoreResult<Vec<Coupon>> {
        coupons::of_link::<DB>(&mut *self.read.acquire().await?, link_id, status, page).await
    }

    async fn coupon(&self, link_id: i64, coupon_id: i64) -> StoreResult<Coupon> {
        coupons::one::<DB>(&mut *self.read.acquire().await?, link_id, coupon_id).await
    }

    async fn archive_coupon(
        &self,
        link_id: i64,
        coupon_id: i64,
        at: i64,
    ) -> StoreResult<Option<Coupon>> {
        coupons::archive::<DB>(&mut *self.write.acquire().await?, link_id, coupon_id, at).await
    }
}

/// The columns of a [`Partner`], for [`partner_from_row`].
pub(super) const PARTNER_COLUMNS: &str =
    "id, name, code, email, payout_method, payout_email, created_at, \
     payout_details_changed_at, payout_details_changed_by";

pub(super) fn partner_from_row<DB: Engine>(r: &Rec<DB>) -> StoreResult<Partner> {
    Ok(Partner {
        id: r.try_get("id")?,
        name: r.try_get("name")?,
        code: r.try_get("code")?,
        email: r.try_get("email")?,
        payout_method: named_opt(r, "payout_method")?,
        payout_email: r.try_get("payout_email")?,
        created_at: r.try_get("created_at")?,
        payout_details_changed_at: r.try_get("payout_details_changed_at")?,
        payout_details_changed_by: r.try_get("payout_details_changed_by")?,
    })
}

/// Creates a partner; `Conflict("partner code")`.
pub(super) async fn create_partner<DB: Engine>(
    conn: &mut DB::Connection,
    name: &str,
    code: &str,
    email: Option<&str>,
    workspace_id: Option<i64>,
    at: i64,
) -> StoreResult<Partner> {
    let sql = format!(
        "INSERT INTO partners (name, code, email, email_key, workspace_id, created_at) \
         VALUES ($1, $2, $3, $6, $4, $5) RETURNING {PARTNER_COLUMNS}"
    );
    let row = stmt::<DB>(&sql)
        .bind(name)
        .bind(code)
        .bind(email)
        .bind(workspace_id)
        .bind(at)
        .bind(email.map(email_key))
        .fetch_one(&mut *conn)
        .await
        .map_err(|e| StoreError::from(e).conflict_on("partner code"))?;
    partner_from_row(&row)
}

/// Changes the fields of a partner that `patch` sets, noting who changed its payout
/// details and when if they change; `NotFound("partner")`.
pub(super) async fn update_partner<DB: Engine>(
    conn: &mut DB::Connection,
    id: i64,
    patch: &PartnerPatch,
) -> StoreResult<Partner> {
    // The right-hand sides read the row as it was before this update.
    let changes = "(($4 AND payout_method IS DISTINCT FROM $5) \
         OR ($6 AND payout_email IS DISTINCT FROM $7))";
    let sql = format!(
        "UPDATE partners SET name = COALESCE($1, name), \
         email = CASE WHEN $2 THEN $3 ELSE email END, \
         email_key = CASE WHEN $2 THEN $9 ELSE email_key END, \
         payout_method = CASE WHEN $4 THEN $5 ELSE payout_method END, \
         payout_email = CASE WHEN $6 THEN $7 ELSE payout_email END, \
         payout_details_changed_at = CASE WHEN {changes} THEN $10 \
         ELSE payout_details_changed_at END, \
         payout_details_changed_by = CASE WHEN {changes} THEN $11 \
         ELSE payout_details_changed_by END \
         WHERE id = $8 RETURNING {PARTNER_COLUMNS}"
    );
    let row = stmt::<DB>(&sql)
        .bind(&patch.name)
        .bind(patch.email.is_some())
        .bind(patch.email.clone().flatten())
        .bind(patch.payout_method.is_some())
        .bind(patch.payout_method.flatten().map(|m| m.as_str()))
        .bind(patch.payout_email.is_some())
        .bind(patch.payout_email.clone().flatten())
        .bind(id)
        .bind(patch.email.clone().flatten().as_deref().map(email_key))
        .bind(patch.at)
        .bind(patch.changed_by)
        .fetch_optional(&mut *conn)
        .await?;
    match row {
        Some(row) => partner_from_row(&row),
        None => Err(StoreError::NotFound("partner")),
    }
}

/// The columns of a [`PartnerProgram`].
pub(super) const PARTNER_PROGRAM_COLUMNS: &str =
    "id, partner_id, program_id, status, group_id, total_clicks, \
    total_leads, total_sales, total_revenue_cents, total_commission_cents, created_at";

/// A partner's record in a program; `NotFound("partner")`.
pub(super) async fn partner_program<DB: Engine>(
    conn: &mut DB::Connection,
    program_id: i64,
    partner_id: i64,
) -> StoreResult<PartnerProgram> {
    let sql = format!(
        "SELECT {PARTNER_PROGRAM_COLUMNS} FROM partner_programs \
         WHERE program_id = $1 AND partner_id = $2"
    );
    stmt::<DB>(&sql)
        .bind(program_id)
        .bind(partner_id)
        .record_optional(&mut *conn)
        .await?
        .ok_or(StoreError::NotFound("partner"))
}

/// Moves a partner's standing in a program, guarded by the standing it had.
pub(super) async fn set_partner_status<DB: Engine>(
    conn: &mut DB::Connection,
    program_id: i64,
    partner_id: i64,
    from: PartnerStatus,
    to: PartnerStatus,
) -> StoreResult<Option<PartnerProgram>> {
    let sql = format!(
        "UPDATE partner_programs SET status = $1 \
         WHERE program_id = $2 AND partner_id = $3 AND status = $4 \
         RETURNING {PARTNER_PROGRAM_COLUMNS}"
    );
    Ok(stmt::<DB>(&sql)
        .bind(to.as_str())
        .bind(program_id)
        .bind(partner_id)
        .bind(from.as_str())
        .record_optional(&mut *conn)
        .await?)
}

/// The columns of a [`Link`], for [`link_from_row`].
pub(super) const LINK_COLUMNS: &str =
    "id, program_id, partner_id, short_link, status, destination_url, clicks, last_clicked, \
    created_at, (SELECT string_agg(k.code, ',' ORDER BY k.id) FROM coupons k \
    WHERE k.link_id = referral_links.id AND k.archived_at IS NULL) AS coupon_codes";

pub(super) fn link_from_row<DB: Engine>(r: &Rec<DB>) -> StoreResult<Link> {
    Ok(Link {
        id: r.try_get("id")?,
        program_id: r.try_get("program_id")?,
        partner_id: r.try_get("partner_id")?,
        short_link: r.try_get("short_link")?,
        status: named(r, "status")?,
        destination_url: r.try_get("destination_url")?,
        // Codes hold no commas (see the coupon code rule).
        coupon_codes: r
            .try_get::<Option<String>>("coupon_codes")?
            .map(|codes| codes.split(',').map(str::to_string).collect())
            .unwrap_or_default(),
        clicks: r.try_get("clicks")?,
        last_clicked: r.try_get("last_clicked")?,
        created_at: r.try_get("created_at")?,
    })
}

/// Creates a referral link; `NotFound("program" | "partner")`, `Conflict("short_link")`.
pub(super) async fn create_link<DB: Engine>(
    conn: &mut DB::Connection,
    program_id: i64,
    partner_id: Option<i64>,
    short_link: &str,
    status: LinkStatus,
    destination_url: Option<&str>,
    at: i64,
) -> StoreResult<Link> {
    if !exists::<DB>(
        &mut *conn,
        "SELECT 1 FROM programs WHERE id = $1",
        program_id,
    )
    .await?
    {
        return Err(StoreError::NotFound("program"));
    }
    if let Some(partner_id) = partner_id {
        if !exists::<DB>(
            &mut *conn,
            "SELECT 1 FROM partners WHERE id = $1",
            partner_id,
        )
        .await?
        {
            return Err(StoreError::NotFound("partner"));
        }
    }
    let id: i64 = stmt::<DB>(
        "INSERT INTO referral_links (program_id, partner_id, short_link, status, \
         destination_url, created_at) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
    )
    .bind(program_id)
    .bind(partner_id)
    .bind(short_link)
    .bind(status.as_str())
    .bind(destination_url)
    .bind(at)
    .scalar(&mut *conn)
    .await
    .map_err(|e| StoreError::from(e).conflict_on("short_link"))?;
    link::<DB>(conn, id).await
}

/// One link; `NotFound("link")`.
pub(super) async fn link<DB: Engine>(conn: &mut DB::Connection, id: i64) -> StoreResult<Link> {
    let sql = format!("SELECT {LINK_COLUMNS} FROM referral_links WHERE id = $1");
    match stmt::<DB>(&sql).bind(id).fetch_optional(&mut *conn).await? {
        Some(row) => link_from_row(&row),
        None => Err(StoreError::NotFound("link")),
    }
}

/// Changes the fields of a link that `patch` sets; `NotFound("link")`.
pub(super) async fn update_link<DB: Engine>(
    conn: &mut DB::Connection,
    id: i64,
    patch: &LinkPatch,
) -> StoreResult<Link> {
    let changed = stmt::<DB>(
        "UPDATE referral_links SET status = COALESCE($1, status), \
         destination_url = CASE WHEN $2 THEN $3 ELSE destination_url END WHERE id = $4",
    )
    .bind(patch.status.map(LinkStatus::as_str))
    .bind(patch.destination_url.is_some())
    .bind(patch.destination_url.clone().flatten())
    .bind(id)
    .execute(&mut *conn)
    .await?;
    if changed == 0 {
        return Err(StoreError::NotFound("link"));
    }
    link::<DB>(conn, id).await
}
