//! The statements both databases run as written, generic over the [`Engine`] they run on,
//! and [`SqlStore`], the [`Store`] on them. Each part of the interface has its file,
//! holding its statements and its implementation on the pools: `programs` (settings,
//! workspaces, programs), `partner_links` (partners, links; with `coupons`), `users`
//! (users, memberships, the first run), `lookups` (of the tracking API), `reports` (the
//! dashboard's sessions and reads), `management` (the management lists), `partners`
//! (partner accounts), `payouts` and `webhooks`. Besides: `verify` (the integrity
//! snapshot), `tx` (the statements of the tracking flows), `write` (the group committer's
//! connection), `counters` (the counter and rollup updates of a batch), `rows` (the rows
//! of the engines' set-based statements), `batch` (what those statements share: the rows
//! of new clicks and plain sales, the flow of plain sales) and `migrations`. What differs
//! between the databases (connections, the set-based statements of the committer, a few
//! statement forms) is the engine's, in `store::sqlite` and `store::postgres`.

pub(crate) mod audit;
pub mod batch;
mod bounties;
pub mod counters;
mod coupons;
pub mod engine;
mod fraud;
pub mod groups;
mod lookups;
mod management;
pub mod migrations;
mod partner_links;
mod partners;
mod payouts;
mod programs;
mod rates;
mod reports;
pub mod rows;
pub mod rules;
pub use rules::{APPROVED_PARTNER_RECORD, NO_SELF_REFERRAL};
mod two_factor;
mod tx;
mod users;
mod verify;
pub mod webhooks;
pub mod write;

use async_trait::async_trait;
use sqlx::Pool;

/// The upper bound of a keyset page without a cursor, as
/// `id < COALESCE($n, NO_CURSOR)`: a range the planner can seek by an index, where
/// `($n IS NULL OR id < $n)` makes every later page scan the rows before it.
pub(super) const NO_CURSOR: &str = "9223372036854775807";

/// The end of a keyset page's query, highest `key` first: the rows below the cursor
/// `$n`, at most `$n+1` of them. [`Stmt::page`](engine::Stmt::page) binds the two.
pub(super) fn keyset(key: &str, n: usize) -> String {
    format!(
        "{key} < COALESCE(${n}, {NO_CURSOR}) ORDER BY {key} DESC LIMIT ${}",
        n + 1
    )
}

/// The placeholders `$first, $first+1, …` of `n` values, for an `IN (…)` list.
pub(super) fn params(first: usize, n: usize) -> String {
    (first..first + n)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

pub use engine::Engine;
use engine::{stmt, Rec};

use super::committer::{CommitStats, Committer};
use super::error::{StoreError, StoreResult};
use super::write::Write;
use super::{integrity, Backend, PoolUse, Store};
use reftrack_domain::status::{CommissionFlag, UnknownValue};

/// A store on a database of engine `DB`: the read pool, the write pool (the same pool on
/// PostgreSQL) and the group committer writing through it.
pub struct SqlStore<DB: Engine> {
    pub(super) read: Pool<DB>,
    pub(super) write: Pool<DB>,
    pub(super) committer: Committer,
}

#[async_trait]
impl<DB: Engine> Store for SqlStore<DB> {
    fn backend(&self) -> Backend {
        DB::BACKEND
    }

    async fn ping(&self) -> StoreResult<()> {
        stmt::<DB>("SELECT 1")
            .execute(&mut *self.read.acquire().await?)
            .await?;
        Ok(())
    }

    async fn close(&self) {
        self.committer.close().await;
        self.write.close().await;
        self.read.close().await;
    }

    async fn submit(&self, write: Write) {
        self.committer.submit(write).await;
    }

    fn commit_stats(&self) -> &CommitStats {
        self.committer.stats()
    }

    fn pool_use(&self) -> Vec<PoolUse> {
        let (read, write) = DB::POOL_NAMES;
        std::iter::once((read, &self.read))
            .chain(write.map(|name| (name, &self.write)))
            .map(|(pool, p)| {
                let open = p.size();
                PoolUse {
                    pool,
                    open,
                    in_use: open.saturating_sub(p.num_idle() as u32),
                    max: p.options().get_max_connections(),
                }
            })
            .collect()
    }

    async fn integrity(&self) -> StoreResult<integrity::Integrity> {
        verify::integrity::<DB>(&self.read).await
    }
}

/// Whether the row with `id` exists in the table `sql` selects from.
async fn exists<DB: Engine>(conn: &mut DB::Connection, sql: &str, id: i64) -> StoreResult<bool> {
    Ok(stmt::<DB>(sql).bind(id).has_row(&mut *conn).await?)
}

/// Decodes the stored JSON list of a program's allowed origins.
fn parse_origins(stored: &str) -> Vec<String> {
    serde_json::from_str(stored).unwrap_or_default()
}

/// Reads a text column holding one name of a closed set (a status, a role).
fn named<DB: Engine, T>(row: &Rec<DB>, column: &str) -> StoreResult<T>
where
    T: TryFrom<String, Error = UnknownValue>,
{
    let stored: String = row.try_get(column)?;
    T::try_from(stored).map_err(|e| unreadable(column, e))
}

/// Reads the text column at `index` holding one name of a closed set.
fn named_at<DB: Engine, T>(row: &Rec<DB>, index: usize) -> StoreResult<T>
where
    T: TryFrom<String, Error = UnknownValue>,
{
    let stored: String = row.try_get_at(index)?;
    T::try_from(stored).map_err(|e| unreadable("status", e))
}

/// Reads a nullable text column holding one name of a closed set.
fn named_opt<DB: Engine, T>(row: &Rec<DB>, column: &str) -> StoreResult<Option<T>>
where
    T: TryFrom<String, Error = UnknownValue>,
{
    let stored: Option<String> = row.try_get(column)?;
    stored
        .map(T::try_from)
        .transpose()
        .map_err(|e| unreadable(column, e))
}

/// Commission flags as stored: their names, comma-separated; null when there are none.
fn flags_text(flags: &[CommissionFlag]) -> Option<String> {
    (!flags.is_empty()).then(|| {
        flags
            .iter()
            .map(|f| f.as_str())
            .collect::<Vec<_>>()
            .join(",")
    })
}

/// Reads the commission flags of [`flags_text`] from `column`.
fn flags<DB: Engine>(row: &Rec<DB>, column: &str) -> StoreResult<Vec<CommissionFlag>> {
    let stored: Option<String> = row.try_get(column)?;
    stored
        .iter()
        .flat_map(|s| s.split(','))
        .filter(|f| !f.is_empty())
        .map(|f| f.parse().map_err(|e| unreadable(column, e)))
        .collect()
}

/// A stored name outside its set: the data, not the request, is wrong.
fn unreadable(column: &str, e: UnknownValue) -> StoreError {
    StoreError::Other(anyhow::anyhow!("column {column} holds a value not {e}"))
}
