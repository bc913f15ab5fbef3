//! The statements of coupon codes: created on a link, listed, archived.

use super::engine::{stmt, Engine, Rec};
use super::keyset;
use crate::error::{StoreError, StoreResult};
use crate::model::{Coupon, NewCoupon};
use crate::payout_model::Page;
use reftrack_domain::status::CouponStatus;

/// The columns of a [`Coupon`], for [`coupon_from_row`].
const COUPON_COLUMNS: &str =
    "id, program_id, link_id, code, stripe_promotion_code, created_at, archived_at";

fn coupon_from_row<DB: Engine>(r: &Rec<DB>) -> StoreResult<Coupon> {
    let archived_at: Option<i64> = r.try_get("archived_at")?;
    Ok(Coupon {
        id: r.try_get("id")?,
        program_id: r.try_get("program_id")?,
        link_id: r.try_get("link_id")?,
        code: r.try_get("code")?,
        stripe_promotion_code: r.try_get("stripe_promotion_code")?,
        status: if archived_at.is_some() {
            CouponStatus::Archived
        } else {
            CouponStatus::Active
        },
        created_at: r.try_get("created_at")?,
        archived_at,
    })
}

/// Whether an active coupon of `program_id` has `value` in `column`.
async fn taken<DB: Engine>(
    conn: &mut DB::Connection,
    program_id: i64,
    column: &str,
    value: &str,
) -> StoreResult<bool> {
    let sql = format!(
        "SELECT 1 FROM coupons WHERE program_id = $1 AND {column} = $2 AND archived_at IS NULL"
    );
    Ok(stmt::<DB>(&sql)
        .bind(program_id)
        .bind(value)
        .has_row(&mut *conn)
        .await?)
}

/// Creates a coupon on its link, in the link's program; `NotFound("link")`,
/// `Conflict("coupon code" | "stripe_promotion_code")`.
pub(super) async fn create<DB: Engine>(
    conn: &mut DB::Connection,
    c: &NewCoupon,
    at: i64,
) -> StoreResult<Coupon> {
    let program_id: i64 = stmt::<DB>("SELECT program_id FROM referral_links WHERE id = $1")
        .bind(c.link_id)
        .scalar_optional(&mut *conn)
        .await?
        .ok_or(StoreError::NotFound("link"))?;
    // Named before the insert, whose unique indexes would not say which value was taken;
    // a coupon made between the check and the insert is still refused by them.
    if taken::<DB>(conn, program_id, "code_key", &c.code_key).await? {
        return Err(StoreError::Conflict("coupon code"));
    }
    if let Some(promo) = &c.stripe_promotion_code {
        if taken::<DB>(conn, program_id, "stripe_promotion_code", promo).await? {
            return Err(StoreError::Conflict("stripe_promotion_code"));
        }
    }
    let sql = format!(
        "INSERT INTO coupons (program_id, link_id, code, code_key, stripe_promotion_code, \
         created_at) VALUES ($1, $2, $3, $4, $5, $6) RETURNING {COUPON_COLUMNS}"
    );
    let row = stmt::<DB>(&sql)
        .bind(program_id)
        .bind(c.link_id)
        .bind(&c.code)
        .bind(&c.code_key)
        .bind(&c.stripe_promotion_code)
        .bind(at)
        .fetch_one(&mut *conn)
        .await
        .map_err(|e| StoreError::from(e).conflict_on("coupon code"))?;
    coupon_from_row(&row)
}

/// One page of a link's coupons, newest first.
pub(super) async fn of_link<DB: Engine>(
    conn: &mut DB::Connection,
    link_id: i64,
    status: Option<CouponStatus>,
    page: Page,
) -> StoreResult<Vec<Coupon>> {
    let sql = format!(
        "SELECT {COUPON_COLUMNS} FROM coupons WHERE link_id = $1 \
         AND ($2 IS NULL OR ($2 = 'archived') = (archived_at IS NOT NULL)) \
         AND {keyset}",
        keyset = keyset("id", 3),
    );
    stmt::<DB>(&sql)
        .bind(link_id)
        .bind(status.map(CouponStatus::as_str))
        .page(page)
        .read_all(&mut *conn, coupon_from_row)
        .await
}

/// One coupon of a link; `NotFound("coupon")`.
pub(super) async fn one<DB: Engine>(
    conn: &mut DB::Connection,
    link_id: i64,
    coupon_id: i64,
) -> StoreResult<Coupon> {
    let sql = format!("SELECT {COUPON_COLUMNS} FROM coupons WHERE id = $1 AND link_id = $2");
    match stmt::<DB>(&sql)
        .bind(coupon_id)
        .bind(link_id)
        .fetch_optional(&mut *conn)
        .await?
    {
        Some(row) => coupon_from_row(&row),
        None => Err(StoreError::NotFound("coupon")),
    }
}

/// Archives an active coupon; `None` when it was archived already.
pub(super) async fn archive<DB: Engine>(
    conn: &mut DB::Connection,
    link_id: i64,
    coupon_id: i64,
    at: i64,
) -> StoreResult<Option<Coupon>> {
    let sql = format!(
        "UPDATE coupons SET archived_at = $1 WHERE id = $2 AND link_id = $3 \
         AND archived_at IS NULL RETURNING {COUPON_COLUMNS}"
    );
    let row = stmt::<DB>(&sql)
        .bind(at)
        .bind(coupon_id)
        .bind(link_id)
        .fetch_optional(&mut *conn)
        .await?;
    match row {
        Some(row) => Ok(Some(coupon_from_row(&row)?)),
        None => one::<DB>(conn, link_id, coupon_id).await.map(|_| None),
    }
}
