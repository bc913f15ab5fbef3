//! Workspaces, programs (settings, API token, payment account) and partners.

use super::*;

impl App {
    /// Creates a workspace.
    pub async fn create_workspace(&self, caller: &Caller, b: WorkspaceBody) -> Result<Workspace> {
        caller.operator_only("create workspaces")?;
        let name = name("name", &b.name, 200)?;
        Ok(self.store.create_workspace(&name, self.now_ms()).await?)
    }

    /// Creates a program with a new API token; the view carries the token (shown once:
    /// only its hash is kept).
    pub async fn create_program(&self, caller: &Caller, b: ProgramBody) -> Result<ProgramView> {
        self.allow(caller, Record::Workspace(b.workspace_id), Access::Change)
            .await?;
        let (program, token) = new_program(b)?;
        let at = self.now_ms();
        let origin = &caller.origin;
        let audit = |_: Option<&Program>, p: &Program| {
            let entry = Entry::new(
                at,
                origin,
                Action::ProgramCreated,
                Scope::Program(p.id),
                Target::program(p.id),
            );
            vec![entry.with_details(crate::audit::program_created(p))]
        };
        let program = self.store.create_program(&program, at, &audit).await?;
        Ok(program_view(&program, Some(&token)))
    }

    /// One program.
    pub async fn program(&self, id: i64) -> Result<Program> {
        Ok(self.store.program(id).await?)
    }

    /// One program as the management API shows it.
    pub async fn program_view(&self, caller: &Caller, id: i64) -> Result<ProgramView> {
        self.allow(caller, Record::Program(id), Access::Read)
            .await?;
        Ok(program_view(&self.program(id).await?, None))
    }

    /// Changes a program.
    pub async fn update_program(
        &self,
        caller: &Caller,
        id: i64,
        b: ProgramPatchBody,
    ) -> Result<ProgramView> {
        self.allow(caller, Record::Program(id), Access::Change)
            .await?;
        // The change names only the rules it changes; the store keeps them whole.
        let fraud_rules = match b.fraud_rules.as_ref().map(fraud_rules_patch).transpose()? {
            Some(change) => Some(self.store.program(id).await?.fraud_rules.merge(&change)),
            None => None,
        };
        let patch = ProgramPatch {
            name: b.name.map(|n| name("name", &n, 200)).transpose()?,
            cookie_window_days: b.cookie_window_days.map(window_days).transpose()?,
            currency: b.currency.map(|c| currency(&c)).transpose()?,
            commission: b.commission.as_ref().map(commission).transpose()?,
            recurring_commission_months: b
                .recurring_commission_months
                .map(recurring_months)
                .transpose()?,
            allowed_origins: b.allowed_origins.map(|o| origins(&o)).transpose()?,
            stripe_webhook_secret: b.stripe_webhook_secret.map(webhook_secret).transpose()?,
            commission_hold_days: b.commission_hold_days.map(hold_days).transpose()?,
            min_payout_cents: b.min_payout_cents.map(min_payout).transpose()?,
            applications_open: b.applications_open,
            partner_links_allowed: b.partner_links_allowed,
            destination_url: b
                .destination_url
                .map(|d| d.as_deref().map(destination_url).transpose())
                .transpose()?,
            fraud_rules,
        };
        let at = self.now_ms();
        let origin = &caller.origin;
        let audit = |old: Option<&Program>, new: &Program| {
            let changes =
                old.map_or_else(Changes::new, |old| crate::audit::program_changes(old, new));
            if changes.is_empty() {
                return vec![];
            }
            let entry = Entry::new(
                at,
                origin,
                Action::ProgramUpdated,
                Scope::Program(id),
                Target::program(id),
            );
            vec![entry.with_details(changes.into_value())]
        };
        let done = self.store.update_program(id, &patch, at, &audit).await;
        self.changed();
        Ok(program_view(&done?, None))
    }

    /// Replaces a program's API token; the view carries the new token. With
    /// `keep_old_for_hours` (1 to 168) the replaced token keeps working that long, so
    /// servers can move to the new one without refused calls; without it (or 0), it
    /// stops at once. Either way an older previous token stops.
    pub async fn rotate_program_token(
        &self,
        caller: &Caller,
        id: i64,
        b: RotateTokenBody,
    ) -> Result<ProgramView> {
        self.allow(caller, Record::Program(id), Access::Change)
            .await?;
        let hours = match b.keep_old_for_hours {
            None | Some(0) => None,
            Some(h @ 1..=MAX_KEEP_OLD_TOKEN_HOURS) => Some(h),
            Some(_) => {
                return Err(Error::invalid(format!(
                    "keep_old_for_hours must be an integer from 0 to {MAX_KEEP_OLD_TOKEN_HOURS}"
                )))
            }
        };
        let token = secrets::generate_token(API_TOKEN_PREFIX);
        let at = self.now_ms();
        let done = self
            .store
            .set_program_token(
                id,
                &secrets::hash_token(&token),
                &secrets::token_prefix(&token),
                hours.map(|h| at + h * 3_600_000),
                at,
                &|_, _| {
                    let entry = Entry::new(
                        at,
                        &caller.origin,
                        Action::ProgramTokenRotated,
                        Scope::Program(id),
                        Target::program(id),
                    );
                    let details = serde_json::json!({ "keep_old_for_hours": hours.unwrap_or(0) });
                    vec![entry.with_details(details)]
                },
            )
            .await;
        self.changed();
        Ok(program_view(&done?, Some(&token)))
    }

    /// Sets a program's payment-account fields (what the status endpoint reports), as the
    /// operator or an owner or admin of its workspace states them.
    pub async fn set_payment_account(
        &self,
        caller: &Caller,
        id: i64,
        b: PaymentAccountBody,
    ) -> Result<ProgramView> {
        self.allow(caller, Record::Program(id), Access::Change)
            .await?;
        let connection_date = match b.connection_date.as_deref() {
            None => None,
            Some(d) => Some(
                chrono::DateTime::parse_from_rfc3339(d)
                    .map_err(|_| Error::invalid("connection_date must be an ISO 8601 timestamp"))?
                    .timestamp_millis(),
            ),
        };
        let account = PaymentAccount {
            status: name("status", &b.status, 64)?,
            account_id: b
                .account_id
                .map(|a| name("account_id", &a, 255))
                .transpose()?,
            charges_enabled: b.charges_enabled,
            payouts_enabled: b.payouts_enabled,
            details_submitted: b.details_submitted,
            connection_date,
        };
        let at = self.now_ms();
        let origin = &caller.origin;
        let audit = |old: Option<&Program>, new: &Program| {
            let changes = old.map_or_else(Changes::new, |old| {
                crate::audit::payment_account_changes(&old.payment, &new.payment)
            });
            if changes.is_empty() {
                return vec![];
            }
            let entry = Entry::new(
                at,
                origin,
                Action::ProgramPaymentAccountSet,
                Scope::Program(id),
                Target::program(id),
            );
            vec![entry.with_details(changes.into_value())]
        };
        let done = self
            .store
            .set_payment_account(id, &account, at, &audit)
            .await;
        self.changed();
        Ok(program_view(&done?, None))
    }

    /// Creates a partner.
    pub async fn create_partner(&self, caller: &Caller, b: PartnerBody) -> Result<Partner> {
        let workspace_id = match (b.workspace_id, caller.changeable_workspaces()) {
            (Some(id), _) => Some(id),
            (None, None) => None,
            (None, Some(mine)) if mine.len() == 1 => Some(mine[0]),
            (None, Some(mine)) if mine.is_empty() => {
                return Err(Error::Forbidden(
                    "Your role may not do this: it needs an owner or admin of a workspace".into(),
                ))
            }
            (None, Some(_)) => {
                return Err(Error::invalid(
                    "workspace_id is required: you may change more than one workspace",
                ))
            }
        };
        if let Some(id) = workspace_id {
            let record = Record::Workspace(id);
            self.allow(caller, record, Access::Change).await?;
            if self.store.workspaces_of(record).await?.is_empty() {
                return Err(Error::NotFound(record.not_found()));
            }
        }
        let code = partner_code(&b.code)?;
        let email = b.email.map(|e| email("email", &e)).transpose()?;
        let name = name("name", &b.name, 200)?;
        Ok(self
            .store
            .create_partner(&name, code, email.as_deref(), workspace_id, self.now_ms())
            .await?)
    }

    /// Changes a partner's name, email or payout details.
    pub async fn update_partner(
        &self,
        caller: &Caller,
        id: i64,
        b: PartnerPatchBody,
    ) -> Result<Partner> {
        self.allow(caller, Record::Partner(id), Access::Change)
            .await?;
        let patch = partner_patch(b, caller.origin.actor.kind.as_str(), self.now_ms())?;
        let account = self.store.partner_account(id).await?;
        if patch.changes_account(&account.partner) {
            self.allow(caller, Record::Partner(id), Access::ChangeEverywhere)
                .await?;
        }
        // The partner's payout details reach every workspace it is in: each lists the
        // change.
        let workspaces = self.store.workspaces_of(Record::Partner(id)).await?;
        let at = patch.at;
        let origin = &caller.origin;
        let audit = |old: Option<&Partner>, new: &Partner| {
            crate::audit::payout_details_changed(&workspaces, at, origin, old, new)
        };
        let changed = self.store.update_partner(id, &patch, &audit).await?;
        self.notify_payout_details_change(&account, &changed);
        Ok(changed)
    }
}
