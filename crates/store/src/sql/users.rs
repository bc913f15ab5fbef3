//! Dashboard users, memberships and the first run: their statements, outside the group
//! committer, and [`UserAdmin`] on the pools.

use async_trait::async_trait;
use sqlx::Connection;

use super::audit::insert_entries;
use super::engine::{stmt, Engine};
use super::management::like_pattern;
use super::programs::{create_program, create_workspace, set_setting};
use super::{exists, keyset, SqlStore};
use crate::audit::AuditOf;
use crate::error::{StoreError, StoreResult};
use crate::model::{
    FirstRunRecords, MemberRow, Membership, NewOwner, NewProgram, User, UserPatch,
    PUBLIC_URL_SETTING,
};
use crate::payout_model::Page;
use crate::UserAdmin;
use reftrack_domain::status::{MembershipStatus, Role};

#[async_trait]
impl<DB: Engine> UserAdmin for SqlStore<DB> {
    async fn create_user(
        &self,
        email: &str,
        password_hash: &str,
        name: Option<&str>,
        at: i64,
    ) -> StoreResult<User> {
        let conn = &mut *self.write.acquire().await?;
        create_user::<DB>(conn, email, password_hash, name, at).await
    }

    async fn has_users(&self) -> StoreResult<bool> {
        has_users::<DB>(&mut *self.read.acquire().await?).await
    }

    async fn update_user(&self, id: i64, patch: &UserPatch) -> StoreResult<User> {
        update_user::<DB>(&mut *self.write.acquire().await?, id, patch).await
    }

    async fn list_users(&self, q: Option<&str>, page: Page) -> StoreResult<Vec<User>> {
        list_users::<DB>(&mut *self.read.acquire().await?, q, page).await
    }

    async fn first_run(
        &self,
        owner: &NewOwner<'_>,
        p: &NewProgram,
        public_url: Option<&str>,
        at: i64,
    ) -> StoreResult<FirstRunRecords> {
        first_run::<DB>(&mut *self.write.acquire().await?, owner, p, public_url, at).await
    }

    async fn add_member(
        &self,
        workspace_id: i64,
        user_id: i64,
        role: Role,
        status: MembershipStatus,
        at: i64,
        audit: AuditOf<'_, Membership>,
    ) -> StoreResult<Membership> {
        let mut conn = self.write.acquire().await?;
        let mut tx = conn.begin_with(DB::BEGIN_WRITE).await?;
        let added = add_member::<DB>(&mut tx, workspace_id, user_id, role, status, at).await?;
        insert_entries::<DB>(&mut tx, &audit(None, &added)).await?;
        tx.commit().await?;
        Ok(added)
    }

    async fn update_member(
        &self,
        workspace_id: i64,
        user_id: i64,
        role: Option<Role>,
        status: Option<MembershipStatus>,
        audit: AuditOf<'_, Membership>,
    ) -> StoreResult<Membership> {
        let mut conn = self.write.acquire().await?;
        let mut tx = conn.begin_with(DB::BEGIN_WRITE).await?;
        let sql = format!(
            "SELECT {MEMBERSHIP_COLUMNS} FROM memberships WHERE workspace_id = $1 \
             AND user_id = $2 {}",
            DB::ROW_LOCK
        );
        let old: Membership = stmt::<DB>(&sql)
            .bind(workspace_id)
            .bind(user_id)
            .record_optional(&mut *tx)
            .await?
            .ok_or(StoreError::NotFound("membership"))?;
        let new = update_member::<DB>(&mut tx, workspace_id, user_id, role, status).await?;
        insert_entries::<DB>(&mut tx, &audit(Some(&old), &new)).await?;
        tx.commit().await?;
        Ok(new)
    }

    async fn remove_member(
        &self,
        workspace_id: i64,
        user_id: i64,
        audit: AuditOf<'_, Membership>,
    ) -> StoreResult<Membership> {
        let mut conn = self.write.acquire().await?;
        let mut tx = conn.begin_with(DB::BEGIN_WRITE).await?;
        let sql = format!(
            "DELETE FROM memberships WHERE workspace_id = $1 AND user_id = $2 \
             RETURNING {MEMBERSHIP_COLUMNS}"
        );
        let removed: Membership = stmt::<DB>(&sql)
            .bind(workspace_id)
            .bind(user_id)
            .record_optional(&mut *tx)
            .await?
            .ok_or(StoreError::NotFound("membership"))?;
        insert_entries::<DB>(&mut tx, &audit(None, &removed)).await?;
        tx.commit().await?;
        Ok(removed)
    }
}

/// Creates a dashboard user; `Conflict("email")`.
pub(super) async fn create_user<DB: Engine>(
    conn: &mut DB::Connection,
    email: &str,
    password_hash: &str,
    name: Option<&str>,
    at: i64,
) -> StoreResult<User> {
    let id: i64 = stmt::<DB>(
        "INSERT INTO users (email, password_hash, name, created_at) VALUES ($1, $2, $3, $4) \
         RETURNING id",
    )
    .bind(email)
    .bind(password_hash)
    .bind(name)
    .bind(at)
    .scalar(&mut *conn)
    .await
    .map_err(|e| StoreError::from(e).conflict_on("email"))?;
    Ok(User {
        id,
        email: email.to_string(),
        name: name.map(str::to_string),
        created_at: at,
    })
}

/// The columns of a [`User`].
const USER_COLUMNS: &str = "id, email, name, created_at";

/// Changes a user's name and password in one transaction; a new password deletes the
/// user's sessions.
pub(super) async fn update_user<DB: Engine>(
    conn: &mut DB::Connection,
    id: i64,
    patch: &UserPatch,
) -> StoreResult<User> {
    let mut tx = conn.begin_with(DB::BEGIN_WRITE).await?;
    let sql = format!(
        "UPDATE users SET name = CASE WHEN $1 THEN $2 ELSE name END, \
         password_hash = COALESCE($3, password_hash) WHERE id = $4 RETURNING {USER_COLUMNS}"
    );
    let row = stmt::<DB>(&sql)
        .bind(patch.name.is_some())
        .bind(patch.name.clone().flatten())
        .bind(patch.password_hash.as_deref())
        .bind(id)
        .fetch_optional(&mut tx)
        .await?
        .ok_or(StoreError::NotFound("user"))?;
    let user = row.record()?;
    if patch.password_hash.is_some() {
        stmt::<DB>("DELETE FROM sessions WHERE user_id = $1")
            .bind(id)
            .execute(&mut tx)
            .await?;
    }
    tx.commit().await?;
    Ok(user)
}

/// One page of users, newest first, of those whose email or name contains `q`.
pub(super) async fn list_users<DB: Engine>(
    conn: &mut DB::Connection,
    q: Option<&str>,
    page: Page,
) -> StoreResult<Vec<User>> {
    let sql = format!(
        "SELECT {USER_COLUMNS} FROM users \
         WHERE ($1 IS NULL OR LOWER(email) LIKE $1 ESCAPE '\\' OR LOWER(name) LIKE $1 ESCAPE '\\') \
         AND {keyset}",
        keyset = keyset("id", 2),
    );
    Ok(stmt::<DB>(&sql)
        .bind(q.map(|q| like_pattern(&q.to_lowercase())))
        .page(page)
        .records(&mut *conn)
        .await?)
}

/// Whether any dashboard user exists.
pub(super) async fn has_users<DB: Engine>(conn: &mut DB::Connection) -> StoreResult<bool> {
    Ok(stmt::<DB>("SELECT 1 FROM users LIMIT 1")
        .has_row(&mut *conn)
        .await?)
}

/// Settings key claimed by the first run, so that it runs once even when two requests
/// race on two processes.
const FIRST_RUN_SETTING: &str = "first_run_at";

/// The first workspace, its owner, its first program and the server's confirmed
/// address, in one transaction.
pub(super) async fn first_run<DB: Engine>(
    conn: &mut DB::Connection,
    owner: &NewOwner<'_>,
    p: &NewProgram,
    public_url: Option<&str>,
    at: i64,
) -> StoreResult<FirstRunRecords> {
    let mut tx = conn.begin_with(DB::BEGIN_WRITE).await?;
    // The claim conflicts with (or, on PostgreSQL, waits for) any other first run.
    stmt::<DB>("INSERT INTO settings (key, value) VALUES ($1, $2)")
        .bind(FIRST_RUN_SETTING)
        .bind(at.to_string())
        .execute(&mut tx)
        .await
        .map_err(|e| StoreError::from(e).conflict_on("first run"))?;
    if has_users::<DB>(&mut tx).await? {
        return Err(StoreError::Conflict("first run"));
    }
    let workspace = create_workspace::<DB>(&mut tx, owner.workspace_name, at).await?;
    let user = create_user::<DB>(&mut tx, owner.email, owner.password_hash, owner.name, at).await?;
    add_member::<DB>(
        &mut tx,
        workspace.id,
        user.id,
        Role::Owner,
        MembershipStatus::Active,
        at,
    )
    .await?;
    let program = NewProgram {
        workspace_id: workspace.id,
        ..p.clone()
    };
    let program = create_program::<DB>(&mut tx, &program, at).await?;
    if let Some(url) = public_url {
        set_setting::<DB>(&mut tx, PUBLIC_URL_SETTING, url).await?;
    }
    tx.commit().await?;
    Ok(FirstRunRecords {
        workspace,
        user,
        program,
    })
}

/// Every member of a workspace with its user's email and name, by user id.
pub(super) async fn workspace_members<DB: Engine>(
    conn: &mut DB::Connection,
    workspace_id: i64,
) -> StoreResult<Vec<MemberRow>> {
    Ok(stmt::<DB>(
        "SELECT m.user_id, u.email, u.name, m.role, m.status, m.created_at FROM memberships m \
         JOIN users u ON u.id = m.user_id WHERE m.workspace_id = $1 ORDER BY m.user_id",
    )
    .bind(workspace_id)
    .records(&mut *conn)
    .await?)
}

/// The columns of a [`Membership`].
const MEMBERSHIP_COLUMNS: &str = "workspace_id, user_id, role, status, created_at";

/// Adds a user to a workspace; `NotFound("workspace" | "user")`, `Conflict("membership")`.
pub(super) async fn add_member<DB: Engine>(
    conn: &mut DB::Connection,
    workspace_id: i64,
    user_id: i64,
    role: Role,
    status: MembershipStatus,
    at: i64,
) -> StoreResult<Membership> {
    if !exists::<DB>(
        &mut *conn,
        "SELECT 1 FROM workspaces WHERE id = $1",
        workspace_id,
    )
    .await?
    {
        return Err(StoreError::NotFound("workspace"));
    }
    if !exists::<DB>(&mut *conn, "SELECT 1 FROM users WHERE id = $1", user_id).await? {
        return Err(StoreError::NotFound("user"));
    }
    let sql = format!(
        "INSERT INTO memberships (workspace_id, user_id, role, status, created_at) \
         VALUES ($1, $2, $3, $4, $5) RETURNING {MEMBERSHIP_COLUMNS}"
    );
    stmt::<DB>(&sql)
        .bind(workspace_id)
        .bind(user_id)
        .bind(role.as_str())
        .bind(status.as_str())
        .bind(at)
        .record(&mut *conn)
        .await
        .map_err(|e| StoreError::from(e).conflict_on("membership"))
}

/// Changes a membership; `None` leaves a field as it is. `NotFound("membership")`.
pub(super) async fn update_member<DB: Engine>(
    conn: &mut DB::Connection,
    workspace_id: i64,
    user_id: i64,
    role: Option<Role>,
    status: Option<MembershipStatus>,
) -> StoreResult<Membership> {
    let sql = format!(
        "UPDATE memberships SET role = COALESCE($1, role), status = COALESCE($2, status) \
         WHERE workspace_id = $3 AND user_id = $4 RETURNING {MEMBERSHIP_COLUMNS}"
    );
    stmt::<DB>(&sql)
        .bind(role.map(Role::as_str))
        .bind(status.map(MembershipStatus::as_str))
        .bind(workspace_id)
        .bind(user_id)
        .record_optional(&mut *conn)
        .await?
        .ok_or(StoreError::NotFound("membership"))
}
