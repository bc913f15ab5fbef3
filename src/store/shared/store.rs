// The store struct and its `Store` implementation. Included by `sqlite.rs` and
// `postgres.rs`; see `store/mod.rs`.

/// A store on one database: a read pool, a write pool, the group committer and the
/// caches of the per-request lookups (see `store/cache.rs`).
pub struct SqlStore {
    read: Pool<Db>,
    write: Pool<Db>,
    committer: Committer,
    writers: std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>,
    links: super::cache::ReadCache<String, LinkTarget>,
    programs: super::cache::ReadCache<String, Program>,
}

impl SqlStore {
    /// Connects, applies pending migrations and starts the writers.
    pub async fn open(url: &str) -> anyhow::Result<Self> {
        let (read, write) = connect(url).await?;
        MIGRATOR.run(&write).await?;
        let (committer, handles) = Committer::start(write.clone(), WRITERS, wal_file(url));
        Ok(SqlStore {
            read,
            write,
            committer,
            writers: std::sync::Mutex::new(handles),
            links: super::cache::ReadCache::new(4096, super::cache::TTL),
            programs: super::cache::ReadCache::new(256, super::cache::TTL),
        })
    }

    /// Drops the cached lookups; called after every change to programs or links (a
    /// link's lookup carries its program's cookie window and origins).
    fn changed<T>(&self, result: Result<T>) -> Result<T> {
        self.links.clear();
        self.programs.clear();
        result
    }
}

type DbRow = <Db as sqlx::Database>::Row;

#[async_trait]
impl Store for SqlStore {
    fn backend(&self) -> Backend {
        BACKEND
    }

    async fn ping(&self) -> Result<()> {
        sqlx::query("SELECT 1").execute(&self.read).await?;
        Ok(())
    }

    async fn close(&self) {
        self.committer.close();
        let handles = std::mem::take(&mut *self.writers.lock().expect("writers lock"));
        for h in handles {
            let _ = h.await;
        }
        self.write.close().await;
        self.read.close().await;
    }

    async fn setting(&self, key: &str) -> Result<Option<String>> {
        Ok(
            sqlx::query_scalar("SELECT value FROM settings WHERE key = $1")
                .bind(key)
                .fetch_optional(&self.read)
                .await?,
        )
    }

    async fn set_setting(&self, key: &str, value: &str) -> Result<()> {
        sqlx::query(
            "INSERT INTO settings (key, value) VALUES ($1, $2) \
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        )
        .bind(key)
        .bind(value)
        .execute(&self.write)
        .await?;
        Ok(())
    }

    async fn create_workspace(&self, name: &str) -> Result<Workspace> {
        admin::create_workspace(&self.write, name).await
    }
    async fn create_program(&self, p: NewProgram) -> Result<Program> {
        admin::create_program(&self.write, p).await
    }
    async fn program(&self, id: i64) -> Result<Program> {
        admin::program(&self.write, id).await
    }
    async fn program_by_token(&self, token_hash: &str) -> Result<Option<Program>> {
        if let Some(p) = self.programs.get(token_hash) {
            return Ok(Some(p));
        }
        let generation = self.programs.generation();
        let found = admin::program_by_token(&self.read, token_hash).await?;
        if let Some(p) = &found {
            self.programs
                .insert(generation, token_hash.to_string(), p.clone());
        }
        Ok(found)
    }
    async fn update_program(&self, id: i64, patch: ProgramPatch) -> Result<Program> {
        self.changed(admin::update_program(&self.write, id, patch).await)
    }
    async fn set_program_token(&self, id: i64, hash: &str, prefix: &str) -> Result<Program> {
        self.changed(admin::set_program_token(&self.write, id, hash, prefix).await)
    }
    async fn set_payment_account(&self, id: i64, account: PaymentAccount) -> Result<Program> {
        self.changed(admin::set_payment_account(&self.write, id, account).await)
    }
    async fn create_partner(&self, name: &str, code: &str, email: Option<&str>) -> Result<Partner> {
        admin::create_partner(&self.write, name, code, email).await
    }
    async fn add_program_partner(
        &self,
        program_id: i64,
        partner_id: i64,
        status: &str,
    ) -> Result<PartnerProgram> {
        let status = status.to_string();
        self.committer
            .submit(move |conn, deltas| {
                Box::pin(admin::add_program_partner(
                    conn, deltas, program_id, partner_id, status,
                ))
            })
            .await
    }
    async fn create_link(
        &self,
        program_id: i64,
        partner_id: Option<i64>,
        short_link: &str,
        status: &str,
    ) -> Result<Link> {
        self.changed(
            admin::create_link(&self.write, program_id, partner_id, short_link, status).await,
        )
    }
    async fn link(&self, id: i64) -> Result<Link> {
        admin::link(&self.write, id).await
    }
    async fn set_link_status(&self, id: i64, status: &str) -> Result<Link> {
        self.changed(admin::set_link_status(&self.write, id, status).await)
    }
    async fn create_user(
        &self,
        email: &str,
        password_hash: &str,
        name: Option<&str>,
    ) -> Result<User> {
        admin::create_user(&self.write, email, password_hash, name).await
    }
    async fn add_member(
        &self,
        workspace_id: i64,
        user_id: i64,
        role: &str,
        status: &str,
    ) -> Result<Membership> {
        admin::add_member(&self.write, workspace_id, user_id, role, status).await
    }
    async fn update_member(
        &self,
        workspace_id: i64,
        user_id: i64,
        role: Option<&str>,
        status: Option<&str>,
    ) -> Result<Membership> {
        admin::update_member(&self.write, workspace_id, user_id, role, status).await
    }

    async fn link_target(&self, short_link: &str) -> Result<Option<LinkTarget>> {
        if let Some(t) = self.links.get(short_link) {
            return Ok(Some(t));
        }
        let generation = self.links.generation();
        let found = track::link_target(&self.read, short_link).await?;
        if let Some(t) = &found {
            self.links
                .insert(generation, short_link.to_string(), t.clone());
        }
        Ok(found)
    }
    async fn any_program_allows_origin(&self, origin: &str) -> Result<bool> {
        let lists: Vec<String> = sqlx::query_scalar("SELECT allowed_origins FROM programs")
            .fetch_all(&self.read)
            .await?;
        Ok(lists
            .iter()
            .any(|l| origin_allowed(&parse_origins(l), Some(origin))))
    }

    async fn record_click(&self, click: NewClick) -> Result<String> {
        self.committer.submit_click(click).await
    }
    async fn record_test_click(&self, click: NewTestClick) -> Result<i64> {
        self.committer
            .submit(move |conn, _| Box::pin(track::test_click(conn, click)))
            .await
    }
    async fn record_lead(&self, lead: NewLead) -> Result<()> {
        self.committer
            .submit(move |conn, deltas| Box::pin(track::lead(conn, deltas, lead)))
            .await
    }
    async fn record_test_lead(&self, lead: NewTestLead) -> Result<i64> {
        self.committer
            .submit(move |conn, _| Box::pin(track::test_lead(conn, lead)))
            .await
    }
    async fn record_sale(&self, sale: NewSale) -> Result<SaleOutcome> {
        self.committer.submit_sale(sale).await
    }
    async fn record_refund(&self, refund: NewRefund) -> Result<RefundOutcome> {
        self.committer
            .submit(move |conn, deltas| Box::pin(track::refund(conn, deltas, refund)))
            .await
    }

    async fn user_credentials(&self, email: &str) -> Result<Option<crate::store::Credentials>> {
        dashboard::user_credentials(&self.read, email).await
    }
    async fn create_session(
        &self,
        user_id: i64,
        token_hash: &str,
        now: i64,
        expires_at: i64,
    ) -> Result<()> {
        dashboard::create_session(&self.write, user_id, token_hash, now, expires_at).await
    }
    async fn session_user(
        &self,
        token_hash: &str,
        now: i64,
    ) -> Result<Option<crate::store::SessionUser>> {
        dashboard::session_user(&self.read, token_hash, now).await
    }
    async fn delete_session(&self, token_hash: &str) -> Result<bool> {
        dashboard::delete_session(&self.write, token_hash).await
    }
    async fn program_access(
        &self,
        program_id: i64,
        user_id: i64,
    ) -> Result<Option<crate::store::DashboardProgram>> {
        dashboard::program_access(&self.read, program_id, user_id).await
    }
    async fn daily_rollups(
        &self,
        program_id: i64,
        from_day: &str,
        to_day: &str,
    ) -> Result<Vec<crate::store::DailyRollup>> {
        dashboard::daily_rollups(&self.read, program_id, from_day, to_day).await
    }
    async fn setup_status(&self, program_id: i64) -> Result<crate::store::SetupStatus> {
        dashboard::setup_status(&self.read, program_id).await
    }
    async fn count_events(
        &self,
        program_id: i64,
        filter: &crate::store::EventFilter,
    ) -> Result<i64> {
        dashboard::count_events(&self.read, program_id, filter).await
    }
    async fn list_events(
        &self,
        program_id: i64,
        filter: &crate::store::EventFilter,
        limit: i64,
        offset: i64,
    ) -> Result<Vec<crate::store::ListedEvent>> {
        dashboard::list_events(&self.read, program_id, filter, limit, offset).await
    }

    async fn record_stripe_event(
        &self,
        program: crate::store::SaleProgram,
        event: crate::domain::stripe::Event,
    ) -> Result<String> {
        let at = crate::domain::time::now_ms();
        let done = self
            .committer
            .submit(move |conn, deltas| {
                Box::pin(webhooks::stripe_event(conn, deltas, program, event, at))
            })
            .await;
        // `account.updated` changes the program's payment account.
        self.changed(done)
    }

    async fn integrity(&self) -> Result<crate::store::integrity::Integrity> {
        verify::integrity(&self.read).await
    }
}

/// Decodes the stored JSON list of allowed origins.
fn parse_origins(stored: &str) -> Vec<String> {
    serde_json::from_str(stored).unwrap_or_default()
}
