//! Bulk inserts of the benchmark seed (see `crate::seed`): multi-row INSERTs on a
//! connection of their own, in large transactions, with the counters added at the end by
//! the group committer's own [`super::counters::apply`].

use sqlx::postgres::Postgres;
use sqlx::{Connection, PgConnection, QueryBuilder};

use crate::domain::figures::Deltas;
use crate::seed::Chunk;

/// Rows per multi-row INSERT: 22 columns stay below PostgreSQL's 65,535 bound parameters.
const ROWS: usize = 1_000;

/// The seeding connection.
pub struct Seeder {
    conn: PgConnection,
}

impl Seeder {
    /// Connects with durability relaxed for this connection only: a crash mid-seed loses
    /// the seed, which is thrown away anyway.
    pub async fn connect(url: &str) -> anyhow::Result<Self> {
        let mut conn = PgConnection::connect(url).await?;
        sqlx::query("SET synchronous_commit = off")
            .execute(&mut conn)
            .await?;
        Ok(Seeder { conn })
    }

    /// An approved partner-program record created at `at`; returns its id.
    pub async fn insert_partner_program(
        &mut self,
        partner_id: i64,
        program_id: i64,
        at: i64,
    ) -> anyhow::Result<i64> {
        Ok(sqlx::query_scalar(
            "INSERT INTO partner_programs (partner_id, program_id, status, created_at) \
             VALUES ($1, $2, 'approved', $3) RETURNING id",
        )
        .bind(partner_id)
        .bind(program_id)
        .bind(at)
        .fetch_one(&mut self.conn)
        .await?)
    }

    /// Moves a program's creation back to `at`, so that `period=all` covers the seed.
    pub async fn backdate_program(&mut self, program_id: i64, at: i64) -> anyhow::Result<()> {
        sqlx::query("UPDATE programs SET created_at = $1, updated_at = $1 WHERE id = $2")
            .bind(at)
            .bind(program_id)
            .execute(&mut self.conn)
            .await?;
        Ok(())
    }

    /// The next free customer and sale ids (the seed assigns them itself so that events
    /// can refer to them without a round trip).
    pub async fn next_ids(&mut self) -> anyhow::Result<(i64, i64)> {
        let c: i64 =
            sqlx::query_scalar("SELECT CAST(COALESCE(MAX(id), 0) + 1 AS BIGINT) FROM customers")
                .fetch_one(&mut self.conn)
                .await?;
        let s: i64 = sqlx::query_scalar(
            "SELECT CAST(COALESCE(MAX(id), 0) + 1 AS BIGINT) FROM affiliate_sale_events",
        )
        .fetch_one(&mut self.conn)
        .await?;
        Ok((c, s))
    }

    /// Inserts one chunk in one transaction.
    pub async fn insert_chunk(&mut self, c: &Chunk) -> anyhow::Result<()> {
        let mut tx = self.conn.begin().await?;
        for rows in c.customers.chunks(ROWS) {
            let mut q = QueryBuilder::<Postgres>::new(
                "INSERT INTO customers (id, program_id, click_id, customer_key, email, \
                 customer_status, partner_id, link_id, signup_date, first_purchase_date, \
                 created_at, updated_at) ",
            );
            q.push_values(rows, |mut b, r| {
                b.push_bind(r.id)
                    .push_bind(r.program_id)
                    .push_bind(&r.click_id)
                    .push_bind(&r.customer_key)
                    .push_bind(&r.email)
                    .push_bind(r.status)
                    .push_bind(r.partner_id)
                    .push_bind(r.link_id)
                    .push_bind(r.signup_date)
                    .push_bind(r.first_purchase_date)
                    .push_bind(r.created_at)
                    .push_bind(r.updated_at);
            });
            q.build().execute(&mut *tx).await?;
        }
        for rows in c.clicks.chunks(ROWS) {
            let mut q = QueryBuilder::<Postgres>::new(
                "INSERT INTO affiliate_click_events (program_id, customer_id, link_id, partner_id, \
                 click_id, session_id, page_url, page_title, referrer_url, screen_resolution, \
                 viewport_size, language, timezone, geo_country, geo_region, geo_city, device_type, \
                 device_os, browser_name, is_test, click_timestamp, created_at) ",
            );
            q.push_values(rows, |mut b, r| {
                let cust = &c.customers[r.customer];
                b.push_bind(r.program_id)
                    .push_bind(cust.id)
                    .push_bind(r.link_id)
                    .push_bind(r.partner_id)
                    .push_bind(&cust.click_id)
                    .push_bind(&r.session_id)
                    .push_bind(r.page_url)
                    .push_bind(r.page_title)
                    .push_bind(r.referrer_url)
                    .push_bind(r.screen_resolution)
                    .push_bind(r.viewport_size)
                    .push_bind(r.language)
                    .push_bind(r.timezone)
                    .push_bind(r.geo_country)
                    .push_bind(r.geo_region)
                    .push_bind(r.geo_city)
                    .push_bind(r.device_type)
                    .push_bind(r.device_os)
                    .push_bind(r.browser_name)
                    .push_bind(false)
                    .push_bind(r.at)
                    .push_bind(r.at);
            });
            q.build().execute(&mut *tx).await?;
        }
        for rows in c.leads.chunks(ROWS) {
            let mut q = QueryBuilder::<Postgres>::new(
                "INSERT INTO affiliate_lead_events (program_id, customer_id, click_id, customer_key, \
                 email, session_id, page_url, event_name, is_test, lead_timestamp, created_at) ",
            );
            q.push_values(rows, |mut b, r| {
                let cust = &c.customers[r.customer];
                b.push_bind(cust.program_id)
                    .push_bind(cust.id)
                    .push_bind(&cust.click_id)
                    .push_bind(&cust.customer_key)
                    .push_bind(&cust.email)
                    .push_bind(None::<String>)
                    .push_bind(r.page_url)
                    .push_bind("signup")
                    .push_bind(false)
                    .push_bind(r.at)
                    .push_bind(r.at);
            });
            q.build().execute(&mut *tx).await?;
        }
        for rows in c.sales.chunks(ROWS) {
            let mut q = QueryBuilder::<Postgres>::new(
                "INSERT INTO affiliate_sale_events (id, program_id, customer_id, partner_id, \
                 click_id, customer_key, processor_event_id, amount_cents, currency, sale_type, \
                 payment_status, is_recurring, is_test, sale_date, created_at) ",
            );
            q.push_values(rows, |mut b, r| {
                let cust = &c.customers[r.customer];
                b.push_bind(r.id)
                    .push_bind(cust.program_id)
                    .push_bind(cust.id)
                    .push_bind(cust.partner_id)
                    .push_bind(&cust.click_id)
                    .push_bind(&cust.customer_key)
                    .push_bind(&r.transaction_id)
                    .push_bind(r.amount_cents)
                    .push_bind("usd")
                    .push_bind("payment")
                    .push_bind("paid")
                    .push_bind(false)
                    .push_bind(false)
                    .push_bind(r.at)
                    .push_bind(r.at);
            });
            q.build().execute(&mut *tx).await?;
            let mut q = QueryBuilder::<Postgres>::new(
                "INSERT INTO commissions (program_id, sale_id, partner_id, partner_program_id, \
                 amount_cents, currency, status, created_at, updated_at) ",
            );
            q.push_values(rows, |mut b, r| {
                let cust = &c.customers[r.customer];
                b.push_bind(cust.program_id)
                    .push_bind(r.id)
                    .push_bind(cust.partner_id)
                    .push_bind(r.partner_program_id)
                    .push_bind(r.commission_cents)
                    .push_bind("usd")
                    .push_bind("pending")
                    .push_bind(r.at)
                    .push_bind(r.at);
            });
            q.build().execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Adds the seed's counters with the group committer's own code.
    pub async fn apply_deltas(&mut self, d: &Deltas) -> anyhow::Result<()> {
        let mut tx = self.conn.begin().await?;
        super::counters::apply(&mut tx, d).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Leaves the database as a server expects it: sequences past the ids the seed
    /// assigned, statistics fresh as autovacuum would make them.
    pub async fn finish(&mut self) -> anyhow::Result<()> {
        for sql in [
            "SELECT setval(pg_get_serial_sequence('customers', 'id'), \
             (SELECT COALESCE(MAX(id), 0) + 1 FROM customers), false)",
            "SELECT setval(pg_get_serial_sequence('affiliate_sale_events', 'id'), \
             (SELECT COALESCE(MAX(id), 0) + 1 FROM affiliate_sale_events), false)",
            "VACUUM ANALYZE",
        ] {
            sqlx::query(sql).execute(&mut self.conn).await?;
        }
        Ok(())
    }
}
