//! Bulk inserts of the benchmark seed (see the parent module): multi-row INSERTs on a
//! connection of their own, in large transactions, with the counters added at the end by
//! the group committer's own statements.

use std::collections::HashMap;

use sqlx::Connection;

use super::{Chunk, NewSeedPartner, SeedPartner};
use reftrack_domain::figures::Deltas;
use reftrack_domain::fraud;
use reftrack_domain::self_referral::email_key;
use reftrack_store::sql::engine::{stmt, Engine, Stmt};

/// Rows per multi-row INSERT: 22 columns stay below SQLite's 32,766 bound parameters.
const ROWS: usize = 1_000;

/// What an engine runs around the seed.
pub trait SeedEngine: Engine {
    /// Run on the seeding connection first: durability relaxed for this connection only
    /// (a crash mid-seed loses the seed, which is thrown away anyway).
    const SEED_SETUP: &'static [&'static str];
    /// Run last, to leave the database as a server expects it.
    const SEED_FINISH: &'static [&'static str];
}

/// The seeding connection.
pub struct Seeder<DB: SeedEngine> {
    conn: DB::Connection,
}

impl<DB: SeedEngine> Seeder<DB> {
    /// Connects and runs the engine's [`SeedEngine::SEED_SETUP`].
    pub async fn connect(url: &str) -> anyhow::Result<Self> {
        let mut conn = DB::Connection::connect(url).await?;
        for sql in DB::SEED_SETUP {
            stmt::<DB>(sql).execute(&mut conn).await?;
        }
        Ok(Seeder { conn })
    }

    /// An approved partner-program record created at `at`; returns its id.
    pub async fn insert_partner_program(
        &mut self,
        partner_id: i64,
        program_id: i64,
        at: i64,
    ) -> anyhow::Result<i64> {
        Ok(stmt::<DB>(
            "INSERT INTO partner_programs (partner_id, program_id, status, group_id, \
             created_at) VALUES ($1, $2, 'approved', (SELECT id FROM partner_groups \
             WHERE program_id = $2 AND is_default), $3) RETURNING id",
        )
        .bind(partner_id)
        .bind(program_id)
        .bind(at)
        .scalar(&mut self.conn)
        .await?)
    }

    /// Partners of `program_id` in one transaction, each with the payout method `method`
    /// and its payout email, one link (its code as short link) and an approved membership,
    /// all created at `at`. Returns their ids in the order of `partners`.
    pub async fn insert_partners(
        &mut self,
        program_id: i64,
        partners: &[NewSeedPartner],
        method: &str,
        at: i64,
    ) -> anyhow::Result<Vec<SeedPartner>> {
        let mut tx = self.conn.begin().await?;
        let mut ids: HashMap<String, i64> = HashMap::with_capacity(partners.len());
        for rows in partners.chunks(ROWS) {
            let sql = format!(
                "{} RETURNING id, code",
                insert::<DB>(
                    "partners (name, code, email, payout_method, payout_email, created_at)",
                    rows.len(),
                    6,
                )
            );
            let mut q: Stmt<'_, DB> = stmt::<DB>(&sql);
            for r in rows {
                q = q
                    .bind(&r.name)
                    .bind(&r.code)
                    .bind(None::<String>)
                    .bind(method)
                    .bind(&r.payout_email)
                    .bind(at);
            }
            for row in q.fetch_all(&mut *tx).await? {
                ids.insert(row.try_get_at(1)?, row.try_get_at(0)?);
            }
        }
        let partner_ids = partners
            .iter()
            .map(|p| ids.get(&p.code).copied())
            .collect::<Option<Vec<i64>>>()
            .ok_or_else(|| anyhow::anyhow!("a seeded partner was not returned"))?;
        // Links and memberships, each keyed by its partner.
        let mut links: HashMap<i64, i64> = HashMap::with_capacity(partners.len());
        let mut memberships: HashMap<i64, i64> = HashMap::with_capacity(partners.len());
        for (rows, codes) in partner_ids.chunks(ROWS).zip(partners.chunks(ROWS)) {
            let sql = format!(
                "{} RETURNING id, partner_id",
                insert::<DB>(
                    "referral_links (program_id, partner_id, short_link, status, created_at)",
                    rows.len(),
                    5,
                )
            );
            let mut q: Stmt<'_, DB> = stmt::<DB>(&sql);
            for (id, p) in rows.iter().zip(codes) {
                q = q
                    .bind(program_id)
                    .bind(*id)
                    .bind(&p.code)
                    .bind("active")
                    .bind(at);
            }
            for row in q.fetch_all(&mut *tx).await? {
                links.insert(row.try_get_at(1)?, row.try_get_at(0)?);
            }
            let sql = format!(
                "{} RETURNING id, partner_id",
                insert::<DB>(
                    "partner_programs (partner_id, program_id, status, created_at)",
                    rows.len(),
                    4,
                )
            );
            let mut q: Stmt<'_, DB> = stmt::<DB>(&sql);
            for id in rows {
                q = q.bind(*id).bind(program_id).bind("approved").bind(at);
            }
            for row in q.fetch_all(&mut *tx).await? {
                memberships.insert(row.try_get_at(1)?, row.try_get_at(0)?);
            }
        }
        tx.commit().await?;
        partner_ids
            .into_iter()
            .map(|partner_id| {
                Ok(SeedPartner {
                    partner_id,
                    link_id: *links
                        .get(&partner_id)
                        .ok_or_else(|| anyhow::anyhow!("a seeded link was not returned"))?,
                    partner_program_id: *memberships
                        .get(&partner_id)
                        .ok_or_else(|| anyhow::anyhow!("a seeded membership was not returned"))?,
                })
            })
            .collect()
    }

    /// Moves a program's creation back to `at`, so that `period=all` covers the seed.
    pub async fn backdate_program(&mut self, program_id: i64, at: i64) -> anyhow::Result<()> {
        stmt::<DB>("UPDATE programs SET created_at = $1, updated_at = $1 WHERE id = $2")
            .bind(at)
            .bind(program_id)
            .execute(&mut self.conn)
            .await?;
        Ok(())
    }

    /// The next free customer and sale ids (the seed assigns them itself so that events
    /// can refer to them without a round trip).
    pub async fn next_ids(&mut self) -> anyhow::Result<(i64, i64)> {
        let c: i64 = stmt::<DB>("SELECT CAST(COALESCE(MAX(id), 0) + 1 AS BIGINT) FROM customers")
            .scalar(&mut self.conn)
            .await?;
        let s: i64 = stmt::<DB>(
            "SELECT CAST(COALESCE(MAX(id), 0) + 1 AS BIGINT) FROM affiliate_sale_events",
        )
        .scalar(&mut self.conn)
        .await?;
        Ok((c, s))
    }

    /// Inserts one chunk in one transaction.
    pub async fn insert_chunk(&mut self, c: &Chunk) -> anyhow::Result<()> {
        let mut tx = self.conn.begin().await?;
        for rows in c.customers.chunks(ROWS) {
            let sql = insert::<DB>(
                "customers (id, program_id, click_id, customer_key, email, email_key, \
                 email_disposable, customer_status, partner_id, link_id, signup_date, \
                 first_purchase_date, created_at, updated_at)",
                rows.len(),
                14,
            );
            let mut q: Stmt<'_, DB> = stmt::<DB>(&sql);
            for r in rows {
                q = q
                    .bind(r.id)
                    .bind(r.program_id)
                    .bind(&r.click_id)
                    .bind(&r.customer_key)
                    .bind(&r.email)
                    .bind(r.email.as_deref().map(email_key))
                    .bind(r.email.as_deref().map(fraud::is_disposable))
                    .bind(r.status)
                    .bind(r.partner_id)
                    .bind(r.link_id)
                    .bind(r.signup_date)
                    .bind(r.first_purchase_date)
                    .bind(r.created_at)
                    .bind(r.updated_at);
            }
            q.execute(&mut *tx).await?;
        }
        for rows in c.clicks.chunks(ROWS) {
            let sql = insert::<DB>(
                "affiliate_click_events (program_id, customer_id, link_id, partner_id, \
                 click_id, session_id, page_url, page_title, referrer_url, screen_resolution, \
                 viewport_size, language, timezone, geo_country, geo_region, geo_city, device_type, \
                 device_os, browser_name, is_test, click_timestamp, created_at, ip)",
                rows.len(),
                23,
            );
            let kept_since = reftrack_domain::time::now_ms() - fraud::IP_RETENTION_MS;
            let mut q: Stmt<'_, DB> = stmt::<DB>(&sql);
            for r in rows {
                let cust = &c.customers[r.customer];
                q = q
                    .bind(r.program_id)
                    .bind(cust.id)
                    .bind(r.link_id)
                    .bind(r.partner_id)
                    .bind(&cust.click_id)
                    .bind(&r.session_id)
                    .bind(r.page_url)
                    .bind(r.page_title)
                    .bind(r.referrer_url)
                    .bind(r.screen_resolution)
                    .bind(r.viewport_size)
                    .bind(r.language)
                    .bind(r.timezone)
                    .bind(r.geo_country)
                    .bind(r.geo_region)
                    .bind(r.geo_city)
                    .bind(r.device_type)
                    .bind(r.device_os)
                    .bind(r.browser_name)
                    .bind(false)
                    .bind(r.at)
                    .bind(r.at)
                    // Each customer's clicks from an address of its own, as a real
                    // program's are, while the purge would keep it: the fraud rules' IP
                    // lookups find what they read.
                    .bind(
                        (r.at >= kept_since)
                            .then(|| format!("198.51.{}.{}", (cust.id >> 8) & 255, cust.id & 255)),
                    );
            }
            q.execute(&mut *tx).await?;
        }
        for rows in c.leads.chunks(ROWS) {
            let sql = insert::<DB>(
                "affiliate_lead_events (program_id, customer_id, click_id, customer_key, \
                 email, session_id, page_url, event_name, is_test, lead_timestamp, created_at)",
                rows.len(),
                11,
            );
            let mut q: Stmt<'_, DB> = stmt::<DB>(&sql);
            for r in rows {
                let cust = &c.customers[r.customer];
                q = q
                    .bind(cust.program_id)
                    .bind(cust.id)
                    .bind(&cust.click_id)
                    .bind(&cust.customer_key)
                    .bind(&cust.email)
                    .bind(None::<String>)
                    .bind(r.page_url)
                    .bind("signup")
                    .bind(false)
                    .bind(r.at)
                    .bind(r.at);
            }
            q.execute(&mut *tx).await?;
        }
        for rows in c.sales.chunks(ROWS) {
            let sql = insert::<DB>(
                "affiliate_sale_events (id, program_id, customer_id, partner_id, \
                 click_id, customer_key, processor_event_id, amount_cents, currency, sale_type, \
                 payment_status, is_recurring, is_test, sale_date, created_at)",
                rows.len(),
                15,
            );
            let mut q: Stmt<'_, DB> = stmt::<DB>(&sql);
            for r in rows {
                q = q
                    .bind(r.id)
                    .bind(r.program_id)
                    .bind(r.customer_id)
                    .bind(r.partner_id)
                    .bind(&r.click_id)
                    .bind(&r.customer_key)
                    .bind(&r.transaction_id)
                    .bind(r.amount_cents)
                    .bind("usd")
                    .bind("payment")
                    .bind("paid")
                    .bind(false)
                    .bind(false)
                    .bind(r.at)
                    .bind(r.at);
            }
            q.execute(&mut *tx).await?;
            let sql = insert::<DB>(
                "commissions (program_id, sale_id, partner_id, partner_program_id, \
                 amount_cents, currency, status, approved_at, created_at, updated_at)",
                rows.len(),
                10,
            );
            let mut q: Stmt<'_, DB> = stmt::<DB>(&sql);
            for r in rows {
                // Approved as the server's minute job records it: at the end of the hold.
                let status = if r.approved_at.is_some() {
                    "approved"
                } else {
                    "pending"
                };
                q = q
                    .bind(r.program_id)
                    .bind(r.id)
                    .bind(r.partner_id)
                    .bind(r.partner_program_id)
                    .bind(r.commission_cents)
                    .bind("usd")
                    .bind(status)
                    .bind(r.approved_at)
                    .bind(r.at)
                    .bind(r.approved_at.unwrap_or(r.at));
            }
            q.execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Adds the seed's counters with the group committer's own code.
    pub async fn apply_deltas(&mut self, d: &Deltas) -> anyhow::Result<()> {
        let mut tx = self.conn.begin().await?;
        reftrack_store::sql::counters::apply::<DB>(&mut tx, d).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Runs the engine's [`SeedEngine::SEED_FINISH`].
    pub async fn finish(&mut self) -> anyhow::Result<()> {
        for sql in DB::SEED_FINISH {
            stmt::<DB>(sql).execute(&mut self.conn).await?;
        }
        Ok(())
    }
}

/// `INSERT INTO {into} VALUES …` of `rows` rows of `width` parameters.
fn insert<DB: SeedEngine>(into: &str, rows: usize, width: usize) -> String {
    format!("INSERT INTO {into} VALUES {}", DB::values(rows, width, 1))
}

impl SeedEngine for sqlx::Sqlite {
    const SEED_SETUP: &'static [&'static str] = &[
        "PRAGMA journal_mode = WAL",
        "PRAGMA synchronous = OFF",
        "PRAGMA foreign_keys = ON",
        "PRAGMA cache_size = -262144",
    ];
    // The WAL folded into the database.
    const SEED_FINISH: &'static [&'static str] = &["PRAGMA wal_checkpoint(TRUNCATE)"];
}

impl SeedEngine for sqlx::Postgres {
    const SEED_SETUP: &'static [&'static str] = &["SET synchronous_commit = off"];
    // Sequences past the ids the seed assigned, statistics fresh as autovacuum would make
    // them.
    const SEED_FINISH: &'static [&'static str] = &[
        "SELECT setval(pg_get_serial_sequence('customers', 'id'), \
         (SELECT COALESCE(MAX(id), 0) + 1 FROM customers), false)",
        "SELECT setval(pg_get_serial_sequence('affiliate_sale_events', 'id'), \
         (SELECT COALESCE(MAX(id), 0) + 1 FROM affiliate_sale_events), false)",
        "VACUUM ANALYZE",
    ];
}
