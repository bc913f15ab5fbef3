//! Dashboard users and workspace memberships.

use super::*;

impl App {
    /// Creates a dashboard user; the email is normalised, the password hashed.
    pub async fn create_user(&self, caller: &Caller, b: UserBody) -> Result<User> {
        caller.operator_only("create users")?;
        let (email, display) = user_fields(&b)?;
        let hash = hashed_password(b.password).await?;
        Ok(self
            .store
            .create_user(&email, &hash, display.as_deref(), self.now_ms())
            .await?)
    }

    /// Changes a dashboard user's name or password: the operator's alone, for a user who
    /// forgot a password (a new one ends every session the user had).
    pub async fn update_user(&self, caller: &Caller, id: i64, b: UserPatchBody) -> Result<User> {
        caller.operator_only("change users")?;
        let name = b
            .name
            .map(|n| n.as_deref().map(|n| name("name", n, 200)).transpose())
            .transpose()?;
        let password_hash = match b.password {
            Some(p) => {
                check_password("password", &p)?;
                Some(hashed_password(p).await?)
            }
            None => None,
        };
        let patch = UserPatch {
            name,
            password_hash,
        };
        Ok(self.store.update_user(id, &patch).await?)
    }

    /// Adds a user to a workspace.
    pub async fn add_member(
        &self,
        caller: &Caller,
        workspace_id: i64,
        b: MemberBody,
    ) -> Result<Membership> {
        self.allow(
            caller,
            Record::Workspace(workspace_id),
            Access::ManageMembers,
        )
        .await?;
        let role: Role = one_of("role", &b.role)?;
        let status: MembershipStatus = one_of("status", b.status.as_deref().unwrap_or("active"))?;
        let at = self.now_ms();
        let origin = &caller.origin;
        let audit = |_: Option<&Membership>, m: &Membership| {
            let entry = Entry::new(
                at,
                origin,
                Action::MemberAdded,
                Scope::Workspace(m.workspace_id),
                Target::user(m.user_id),
            );
            let details = serde_json::json!({ "role": m.role, "status": m.status });
            vec![entry.with_details(details)]
        };
        Ok(self
            .store
            .add_member(workspace_id, b.user_id, role, status, at, &audit)
            .await?)
    }

    /// Changes a membership's role or status.
    pub async fn update_member(
        &self,
        caller: &Caller,
        workspace_id: i64,
        user_id: i64,
        b: MemberPatchBody,
    ) -> Result<Membership> {
        self.allow(
            caller,
            Record::Workspace(workspace_id),
            Access::ManageMembers,
        )
        .await?;
        let role: Option<Role> = b.role.map(|r| one_of("role", &r)).transpose()?;
        let status: Option<MembershipStatus> =
            b.status.map(|st| one_of("status", &st)).transpose()?;
        // An owner may not leave its workspace without one; the operator, who can always
        // add an owner back, may.
        let stays_owner = role.is_none_or(|r| r == Role::Owner)
            && status.is_none_or(|s| s == MembershipStatus::Active);
        if !stays_owner
            && caller.member().is_some()
            && self.store.active_owners(workspace_id).await? == [user_id]
        {
            return Err(Error::Conflict(
                "This is the workspace's only active owner; make another member owner first".into(),
            ));
        }
        let at = self.now_ms();
        let origin = &caller.origin;
        let audit = |old: Option<&Membership>, new: &Membership| {
            let Some(old) = old else { return vec![] };
            let entry = |action, details| {
                Entry::new(
                    at,
                    origin,
                    action,
                    Scope::Workspace(workspace_id),
                    Target::user(user_id),
                )
                .with_details(details)
            };
            let mut entries = Vec::new();
            if old.role != new.role {
                entries.push(entry(
                    Action::MemberRoleChanged,
                    moved("role", &old.role, &new.role),
                ));
            }
            if old.status != new.status {
                entries.push(entry(
                    Action::MemberStatusChanged,
                    moved("status", &old.status, &new.status),
                ));
            }
            entries
        };
        Ok(self
            .store
            .update_member(workspace_id, user_id, role, status, &audit)
            .await?)
    }

    /// Removes a user from a workspace: it no longer reaches the workspace's records (its
    /// sessions stay, for its other workspaces). As with a change of role, a member may
    /// not remove the workspace's only active owner (409); the operator may.
    pub async fn remove_member(
        &self,
        caller: &Caller,
        workspace_id: i64,
        user_id: i64,
    ) -> Result<()> {
        self.allow(
            caller,
            Record::Workspace(workspace_id),
            Access::ManageMembers,
        )
        .await?;
        if caller.member().is_some() && self.store.active_owners(workspace_id).await? == [user_id] {
            return Err(Error::Conflict(
                "This is the workspace's only active owner; make another member owner first".into(),
            ));
        }
        let at = self.now_ms();
        let origin = &caller.origin;
        let audit = |_: Option<&Membership>, removed: &Membership| {
            let details = serde_json::json!({ "role": removed.role, "status": removed.status });
            vec![Entry::new(
                at,
                origin,
                Action::MemberRemoved,
                Scope::Workspace(workspace_id),
                Target::user(user_id),
            )
            .with_details(details)]
        };
        self.store
            .remove_member(workspace_id, user_id, &audit)
            .await?;
        Ok(())
    }
}

/// A user's sign-in email, normalised (trimmed, lower-case).
pub(crate) fn user_email(value: &str) -> Result<String> {
    let email = value.trim().to_ascii_lowercase();
    if !email.contains('@') || email.chars().count() > 255 {
        return Err(Error::invalid("email must be an email address"));
    }
    Ok(email)
}

/// A new user's normalised email and display name, once its body is valid.
pub(crate) fn user_fields(b: &UserBody) -> Result<(String, Option<String>)> {
    let email = user_email(&b.email)?;
    check_password("password", &b.password)?;
    let display = b
        .name
        .as_deref()
        .map(|n| name("name", n, 200))
        .transpose()?;
    Ok((email, display))
}

impl App {
    /// Every member of a workspace, with its user's email and name.
    pub async fn workspace_members(
        &self,
        caller: &Caller,
        workspace_id: i64,
    ) -> Result<Vec<MemberRow>> {
        let record = Record::Workspace(workspace_id);
        self.allow(caller, record, Access::Read).await?;
        if self.store.workspaces_of(record).await?.is_empty() {
            return Err(Error::NotFound(record.not_found()));
        }
        Ok(self.store.workspace_members(workspace_id).await?)
    }

    /// Adds the user who signs in with `email` to a workspace (as [`Self::add_member`]).
    /// Only whoever may manage the workspace's members learns whether such a user exists.
    pub async fn add_member_by_email(
        &self,
        caller: &Caller,
        workspace_id: i64,
        email: &str,
        role: &str,
    ) -> Result<Membership> {
        self.allow(
            caller,
            Record::Workspace(workspace_id),
            Access::ManageMembers,
        )
        .await?;
        let email = email.trim().to_ascii_lowercase();
        if email.is_empty() {
            return Err(Error::invalid("email must be an email address"));
        }
        let user = self.store.user_credentials(&email).await?.ok_or_else(|| {
            Error::invalid(
                "email is not the email of a user of this server: the operator creates \
                 users (reftrack admin create-user)",
            )
        })?;
        let b = MemberBody {
            user_id: user.user_id,
            role: role.to_string(),
            status: None,
        };
        self.add_member(caller, workspace_id, b)
            .await
            .map_err(|e| match e {
                Error::Conflict(_) => {
                    Error::Conflict("email is already a member of this workspace".into())
                }
                other => other,
            })
    }
}
