//! The audit log: the entries the management use cases write, and its list.
//!
//! # Writing an entry
//!
//! Every change to money, access or settings writes its entry in the transaction of the
//! change, so that the entry exists exactly when the change does:
//!
//! - a flow of the group committer (`self.write(move |tx, deltas| …)`) calls
//!   `tx.record_audit(&[entry])` beside its other statements, with an entry built before
//!   the flow by [`App::entry`] (or inside it, when it needs what the flow reads);
//! - a store method that opens its own transaction takes an
//!   [`AuditOf`](reftrack_store::AuditOf) closure, which builds the entries from the
//!   record as it was and as it is after the change, both read in that transaction.
//!
//! The entry's actor, client IP and request id are the [`Caller`]'s
//! [`Origin`](reftrack_domain::audit::Origin): the web layer builds it from the session
//! or admin token and the request; the CLI is the operator, a job is `system`.

use serde_json::{json, Value};

use crate::access::Caller;
use futures::stream::BoxStream;
use futures::FutureExt;

use crate::pages::{chunks, listed, probe, PageParams};
use crate::{App, Error, Listed, Result};
use reftrack_domain::access::Access;
use reftrack_domain::audit::{Action, Changes, Entry, Origin, Scope, Target};
use reftrack_domain::commission::CommissionRule;
use reftrack_store::{AuditFilter, AuditRow, Partner, PaymentAccount, Program, Record};

/// The filters of the audit log: `action`, `program_id`, and `from` / `to` (ISO 8601
/// timestamps, or dates `YYYY-MM-DD`: `to` a date includes that whole day, UTC).
#[derive(Debug, Default, Clone)]
pub struct AuditParams {
    pub action: Option<String>,
    pub program_id: Option<String>,
    pub from: Option<String>,
    pub to: Option<String>,
}

/// An instant of a filter: an RFC 3339 timestamp, or a date (its midnight UTC; for an
/// end bound, the next midnight).
fn instant(field: &str, value: Option<&str>, end: bool) -> Result<Option<i64>> {
    let Some(v) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(v) {
        return Ok(Some(t.timestamp_millis() + i64::from(end)));
    }
    if let Ok(t) = chrono::NaiveDateTime::parse_from_str(v, "%Y-%m-%dT%H:%M") {
        return Ok(Some(
            t.and_utc().timestamp_millis() + i64::from(end) * 60_000,
        ));
    }
    let day = chrono::NaiveDate::parse_from_str(v, "%Y-%m-%d")
        .ok()
        .filter(|d| d.format("%Y-%m-%d").to_string() == v)
        .ok_or_else(|| {
            Error::invalid(format!(
                "{field} must be an ISO 8601 timestamp (2024-05-01T00:00:00Z) or a date \
                 (YYYY-MM-DD)"
            ))
        })?;
    let day = if end { day.succ_opt() } else { Some(day) };
    Ok(day.map(|d| {
        d.and_hms_opt(0, 0, 0)
            .expect("midnight")
            .and_utc()
            .timestamp_millis()
    }))
}

impl AuditParams {
    /// The filter these parameters name, or the first invalid one's error.
    pub fn filter(&self) -> Result<AuditFilter> {
        let action = match self.action.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(a) => Some(a.parse::<Action>().map_err(|e| {
                Error::invalid(format!("action must be one of: {}", e.0.join(", ")))
            })?),
        };
        let program_id = match self.program_id.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(p) => Some(
                p.parse::<i64>()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| Error::invalid("program_id must be a positive integer"))?,
            ),
        };
        let from_ms = instant("from", self.from.as_deref(), false)?;
        let to_ms = instant("to", self.to.as_deref(), true)?;
        if let (Some(f), Some(t)) = (from_ms, to_ms) {
            if f >= t {
                return Err(Error::invalid("from must be before to"));
            }
        }
        Ok(AuditFilter {
            action,
            program_id,
            from_ms,
            to_ms,
        })
    }
}

impl App {
    /// An entry of a change `caller` makes now.
    pub(crate) fn entry(
        &self,
        caller: &Caller,
        action: Action,
        scope: Scope,
        target: Target,
    ) -> Entry {
        Entry::new(self.now_ms(), &caller.origin, action, scope, target)
    }

    /// One page of a workspace's audit log, newest first: its owners and admins, and the
    /// operator.
    pub async fn audit_log(
        &self,
        caller: &Caller,
        workspace_id: i64,
        params: &AuditParams,
        page: &PageParams,
    ) -> Result<Listed<AuditRow>> {
        let filter = params.filter()?;
        let page = page.page()?;
        self.allow_audit(caller, workspace_id).await?;
        let rows = self
            .store
            .audit_log(workspace_id, &filter, probe(page))
            .await?;
        Ok(listed(rows, page, |r| r.id))
    }

    /// Every entry of a workspace's audit log matching `params`, newest first, in chunks
    /// (see [`Self::export_commissions`]).
    pub async fn export_audit_log(
        &self,
        caller: &Caller,
        workspace_id: i64,
        params: &AuditParams,
    ) -> Result<BoxStream<'static, Result<Vec<AuditRow>>>> {
        let filter = params.filter()?;
        self.allow_audit(caller, workspace_id).await?;
        Ok(chunks(
            self.store.clone(),
            move |store, page| {
                let filter = filter.clone();
                async move { store.audit_log(workspace_id, &filter, page).await }.boxed()
            },
            |r: &AuditRow| r.id,
        ))
    }

    /// Lets the owners and admins of a workspace, and the operator, read its audit log:
    /// 404 for a workspace that does not exist or is not the caller's, 403 for another
    /// role.
    pub async fn allow_audit(&self, caller: &Caller, workspace_id: i64) -> Result<()> {
        let record = Record::Workspace(workspace_id);
        self.allow(caller, record, Access::Change).await?;
        if self.store.workspaces_of(record).await?.is_empty() {
            return Err(Error::NotFound(record.not_found()));
        }
        Ok(())
    }
}

/// The entries of a change of a partner's payout details (method, email), one in each of
/// `workspaces` (those the partner is in); none when they did not change.
pub(crate) fn payout_details_changed(
    workspaces: &[i64],
    at: i64,
    origin: &Origin,
    old: Option<&Partner>,
    new: &Partner,
) -> Vec<Entry> {
    let Some(old) = old else { return vec![] };
    let mut changes = Changes::new();
    changes
        .field("payout_method", &old.payout_method, &new.payout_method)
        .field("payout_email", &old.payout_email, &new.payout_email);
    if changes.is_empty() {
        return vec![];
    }
    let details = changes.into_value();
    workspaces
        .iter()
        .map(|w| {
            Entry::new(
                at,
                origin,
                Action::PartnerPayoutDetailsChanged,
                Scope::Workspace(*w),
                Target::partner(new.id),
            )
            .with_details(details.clone())
        })
        .collect()
}

/// A commission rule as the management API writes it.
fn commission_value(rule: &CommissionRule) -> Value {
    serde_json::to_value(rule.spec()).unwrap_or(Value::Null)
}

/// The details of a change of a program's settings: each changed setting's old and new
/// value; of the Stripe webhook secret only that it changed.
pub fn program_changes(old: &Program, new: &Program) -> Changes {
    let mut c = Changes::new();
    c.field("name", &old.name, &new.name)
        .field(
            "cookie_window_days",
            &old.cookie_window_days,
            &new.cookie_window_days,
        )
        .field("currency", &old.currency, &new.currency)
        .field(
            "commission",
            &commission_value(&old.commission),
            &commission_value(&new.commission),
        )
        .field(
            "recurring_commission_months",
            &old.recurring_commission_months,
            &new.recurring_commission_months,
        )
        .field(
            "allowed_origins",
            &old.allowed_origins,
            &new.allowed_origins,
        )
        .secret(
            "stripe_webhook_secret",
            &old.stripe_webhook_secret,
            &new.stripe_webhook_secret,
        )
        .field(
            "commission_hold_days",
            &old.commission_hold_days,
            &new.commission_hold_days,
        )
        .field(
            "min_payout_cents",
            &old.min_payout_cents,
            &new.min_payout_cents,
        )
        .field(
            "applications_open",
            &old.applications_open,
            &new.applications_open,
        )
        .field(
            "partner_links_allowed",
            &old.partner_links_allowed,
            &new.partner_links_allowed,
        )
        .field(
            "destination_url",
            &old.destination_url,
            &new.destination_url,
        )
        .field("fraud_rules", &old.fraud_rules, &new.fraud_rules);
    c
}

/// The details of a change of a program's payment-account fields.
pub fn payment_account_changes(old: &PaymentAccount, new: &PaymentAccount) -> Changes {
    let mut c = Changes::new();
    c.field("status", &old.status, &new.status)
        .field("account_id", &old.account_id, &new.account_id)
        .field(
            "charges_enabled",
            &old.charges_enabled,
            &new.charges_enabled,
        )
        .field(
            "payouts_enabled",
            &old.payouts_enabled,
            &new.payouts_enabled,
        )
        .field(
            "details_submitted",
            &old.details_submitted,
            &new.details_submitted,
        )
        .field(
            "connection_date",
            &old.connection_date,
            &new.connection_date,
        );
    c
}

/// The details of a new program: its settings as created (never its token or secret).
pub fn program_created(p: &Program) -> Value {
    json!({
        "name": p.name,
        "currency": p.currency,
        "commission": commission_value(&p.commission),
        "cookie_window_days": p.cookie_window_days,
        "commission_hold_days": p.commission_hold_days,
        "min_payout_cents": p.min_payout_cents,
        "stripe_webhook_secret_set": p.stripe_webhook_secret.is_some(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use reftrack_domain::fraud::{self, FraudRules, FraudRulesPatch, Rule};

    #[test]
    fn filters_read_timestamps_and_dates() {
        let f = AuditParams {
            action: Some("payout.paid".into()),
            program_id: Some("7".into()),
            from: Some("2024-05-01".into()),
            to: Some("2024-05-01T12:00:00Z".into()),
        }
        .filter()
        .unwrap();
        assert_eq!(f.action, Some(Action::PayoutPaid));
        assert_eq!(f.program_id, Some(7));
        assert_eq!(f.from_ms, Some(1_714_521_600_000));
        assert_eq!(f.to_ms, Some(1_714_564_800_001));
        let whole_day = AuditParams {
            to: Some("2024-05-01".into()),
            ..Default::default()
        };
        assert_eq!(whole_day.filter().unwrap().to_ms, Some(1_714_608_000_000));
    }

    fn program() -> Program {
        Program {
            id: 7,
            workspace_id: 1,
            name: "Acme".into(),
            api_token_prefix: "rtk_abcd".into(),
            cookie_window_days: 60,
            currency: "usd".into(),
            commission: CommissionRule::Percentage { bps: 2000 },
            recurring_commission_months: None,
            allowed_origins: vec![],
            stripe_webhook_secret: Some("whsec_old".into()),
            payment: PaymentAccount::default(),
            commission_hold_days: 30,
            min_payout_cents: 5000,
            applications_open: false,
            partner_links_allowed: true,
            destination_url: None,
            previous_token: None,
            fraud_rules: FraudRules::default(),
            created_at: 0,
            updated_at: 0,
        }
    }

    #[test]
    fn program_changes_name_each_changed_setting_and_hide_the_secret() {
        let old = program();
        let new = Program {
            commission: CommissionRule::Flat { amount_cents: 500 },
            stripe_webhook_secret: Some("whsec_new".into()),
            allowed_origins: vec!["https://shop.example".into()],
            fraud_rules: FraudRules::default().merge(&FraudRulesPatch(vec![(
                Rule::DuplicateIp,
                fraud::Action::Reject,
            )])),
            updated_at: 5,
            ..program()
        };
        let details = program_changes(&old, &new).into_value();
        assert_eq!(
            details,
            json!({
                "commission": {
                    "old": {"type": "percentage", "percent": 20.0},
                    "new": {"type": "flat", "amount_cents": 500}
                },
                "allowed_origins": {"old": [], "new": ["https://shop.example"]},
                "stripe_webhook_secret": {"changed": true},
                "fraud_rules": {
                    "old": FraudRules::default(),
                    "new": new.fraud_rules,
                },
            })
        );
        assert!(!details.to_string().contains("whsec"));
        assert!(program_changes(&old, &program()).is_empty());
        let created = program_created(&new);
        assert_eq!(created["stripe_webhook_secret_set"], true);
        assert!(!created.to_string().contains("whsec"));
    }

    #[test]
    fn bad_filters_are_refused() {
        for p in [
            AuditParams {
                action: Some("program.deleted".into()),
                ..Default::default()
            },
            AuditParams {
                program_id: Some("x".into()),
                ..Default::default()
            },
            AuditParams {
                from: Some("yesterday".into()),
                ..Default::default()
            },
            AuditParams {
                from: Some("2024-05-02".into()),
                to: Some("2024-05-01".into()),
                ..Default::default()
            },
        ] {
            assert!(matches!(p.filter(), Err(Error::Invalid(_))), "{p:?}");
        }
    }
}
