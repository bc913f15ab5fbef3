//! The audit log's entries: who changed what, and how. An entry is built by the use case
//! that makes the change and written in the same transaction as the change; nothing in
//! Reftrack edits or deletes one afterwards.
//!
//! - [`Action`]: what was done, by its stored name (`program.updated`, …).
//! - [`Actor`]: who did it (a dashboard user, the operator, a partner, or Reftrack itself).
//! - [`Origin`]: the actor with the request it came through (client IP, request id).
//! - [`Target`]: the record changed.
//! - [`Changes`]: the details of a change of settings, old and new value of each field
//!   that changed; a secret is only said to have changed.
//! - [`Entry`]: all of it, with the workspace or program the entry belongs to.

use std::fmt;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::status::UnknownValue;

/// Declares the actions with their stored names, `ALL`, `as_str` and `FromStr`.
macro_rules! actions {
    ($($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)?) => {
        /// What an audit entry records.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Action {
            $($(#[$vmeta])* $variant),+
        }

        impl Action {
            /// Every action, in order.
            pub const ALL: &'static [Action] = &[$(Action::$variant),+];
            /// Every action's name, in the order of [`Action::ALL`].
            pub const NAMES: &'static [&'static str] = &[$($text),+];

            /// The stored name.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Action::$variant => $text),+
                }
            }
        }

        impl std::str::FromStr for Action {
            type Err = UnknownValue;

            fn from_str(s: &str) -> Result<Self, UnknownValue> {
                match s {
                    $($text => Ok(Action::$variant),)+
                    _ => Err(UnknownValue(Action::NAMES)),
                }
            }
        }
    };
}

actions! {
    /// A program was created.
    ProgramCreated = "program.created",
    /// A program's settings changed (details: each changed setting's old and new value).
    ProgramUpdated = "program.updated",
    /// A program's API token was replaced.
    ProgramTokenRotated = "program.token_rotated",
    /// A program's payment-account fields were set.
    ProgramPaymentAccountSet = "program.payment_account_set",
    /// A partner's standing in a program moved (details: old and new status).
    PartnerStatusChanged = "partner.status_changed",
    /// A partner was added to a program by an owner.
    PartnerAdded = "partner.added",
    /// A partner's payout method or payout email changed.
    PartnerPayoutDetailsChanged = "partner.payout_details_changed",
    /// A commission was approved ahead of its hold.
    CommissionApproved = "commission.approved",
    /// A commission was rejected (details: the reason).
    CommissionRejected = "commission.rejected",
    /// An owner gave a partner a bonus (details: partner, amount, description).
    BonusCreated = "bonus.created",
    /// A bounty was created.
    BountyCreated = "bounty.created",
    /// A bounty's name, goal, amount, groups or window changed (details: old and new).
    BountyUpdated = "bounty.updated",
    /// A bounty was archived: it makes no new awards.
    BountyArchived = "bounty.archived",
    /// A payout was created.
    PayoutCreated = "payout.created",
    /// A payout was marked paid.
    PayoutPaid = "payout.paid",
    /// A payout was cancelled.
    PayoutCancelled = "payout.cancelled",
    /// A user was added to a workspace.
    MemberAdded = "member.added",
    /// A member's role changed.
    MemberRoleChanged = "member.role_changed",
    /// A member was suspended or made active again.
    MemberStatusChanged = "member.status_changed",
    /// A user was removed from a workspace (details: the role and status it had).
    MemberRemoved = "member.removed",
    /// A webhook endpoint was created.
    WebhookEndpointCreated = "webhook_endpoint.created",
    /// A webhook endpoint's URL, event types or enabling changed.
    WebhookEndpointUpdated = "webhook_endpoint.updated",
    /// A webhook endpoint was deleted.
    WebhookEndpointDeleted = "webhook_endpoint.deleted",
    /// A partner group was created.
    GroupCreated = "group.created",
    /// A partner group's name, rewards or hold changed (details: old and new values).
    GroupUpdated = "group.updated",
    /// A partner group was deleted.
    GroupDeleted = "group.deleted",
    /// A partner was moved to another group of a program (details: old and new group).
    PartnerGroupChanged = "partner.group_changed",
    /// A user or partner turned two-factor sign-in on.
    TwoFactorEnabled = "two_factor.enabled",
    /// A user or partner turned two-factor sign-in off (or the operator did for a user).
    TwoFactorDisabled = "two_factor.disabled",
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Action {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Who made a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ActorKind {
    /// A signed-in dashboard user.
    User,
    /// The admin token or the command line.
    Operator,
    /// A partner signed in to the portal.
    Partner,
    /// Reftrack itself (a job).
    System,
}

impl ActorKind {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            ActorKind::User => "user",
            ActorKind::Operator => "operator",
            ActorKind::Partner => "partner",
            ActorKind::System => "system",
        }
    }
}

impl std::str::FromStr for ActorKind {
    type Err = UnknownValue;

    fn from_str(s: &str) -> Result<Self, UnknownValue> {
        match s {
            "user" => Ok(ActorKind::User),
            "operator" => Ok(ActorKind::Operator),
            "partner" => Ok(ActorKind::Partner),
            "system" => Ok(ActorKind::System),
            _ => Err(UnknownValue(&["user", "operator", "partner", "system"])),
        }
    }
}

/// Who made a change: its kind, and for a user or partner its id and email.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    pub kind: ActorKind,
    pub id: Option<i64>,
    pub email: Option<String>,
}

impl Actor {
    /// The operator (admin token or command line).
    pub fn operator() -> Actor {
        Actor {
            kind: ActorKind::Operator,
            id: None,
            email: None,
        }
    }

    /// Reftrack itself.
    pub fn system() -> Actor {
        Actor {
            kind: ActorKind::System,
            id: None,
            email: None,
        }
    }

    /// A dashboard user.
    pub fn user(id: i64, email: &str) -> Actor {
        Actor {
            kind: ActorKind::User,
            id: Some(id),
            email: Some(email.to_string()),
        }
    }

    /// A partner signed in to the portal.
    pub fn partner(id: i64, email: Option<&str>) -> Actor {
        Actor {
            kind: ActorKind::Partner,
            id: Some(id),
            email: email.map(str::to_string),
        }
    }
}

/// Where a change came from: the actor, and the request that carried it (none from the
/// command line or a job).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub actor: Actor,
    /// The client's IP address, as the server resolves it (trusted proxies included).
    pub ip: Option<String>,
    /// The request's id (`X-Request-Id`).
    pub request_id: Option<String>,
}

impl Origin {
    /// `actor` outside any request (the command line, a job).
    pub fn without_request(actor: Actor) -> Origin {
        Origin {
            actor,
            ip: None,
            request_id: None,
        }
    }
}

/// The record a change was made to: its type (`program`, `partner`, `commission`,
/// `payout`, `user`, `webhook_endpoint`) and id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    pub kind: &'static str,
    pub id: i64,
}

impl Target {
    pub fn program(id: i64) -> Target {
        Target {
            kind: "program",
            id,
        }
    }
    pub fn partner(id: i64) -> Target {
        Target {
            kind: "partner",
            id,
        }
    }
    pub fn commission(id: i64) -> Target {
        Target {
            kind: "commission",
            id,
        }
    }
    pub fn payout(id: i64) -> Target {
        Target { kind: "payout", id }
    }
    /// A workspace member, by its user id.
    pub fn user(id: i64) -> Target {
        Target { kind: "user", id }
    }
    pub fn group(id: i64) -> Target {
        Target { kind: "group", id }
    }
    pub fn bounty(id: i64) -> Target {
        Target { kind: "bounty", id }
    }
    pub fn webhook_endpoint(id: i64) -> Target {
        Target {
            kind: "webhook_endpoint",
            id,
        }
    }
}

/// Which workspace an entry belongs to: named, or that of a program (the store reads it
/// in the transaction of the change).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// A workspace-wide change.
    Workspace(i64),
    /// A change in a program, listed with the program's workspace.
    Program(i64),
}

/// One audit entry, ready to be written.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// When the change was made (epoch milliseconds).
    pub at: i64,
    pub scope: Scope,
    pub action: Action,
    pub origin: Origin,
    pub target: Target,
    /// What changed, as a JSON object (`{}` when there is nothing more to say). Never a
    /// secret, token or password.
    pub details: Value,
}

impl Entry {
    /// An entry with no details, of a change made at `at`.
    pub fn new(at: i64, origin: &Origin, action: Action, scope: Scope, target: Target) -> Entry {
        Entry {
            at,
            scope,
            action,
            origin: origin.clone(),
            target,
            details: Value::Object(Map::new()),
        }
    }

    /// The same entry with `details`.
    pub fn with_details(mut self, details: Value) -> Entry {
        self.details = details;
        self
    }

    /// The program the entry is about, if any.
    pub fn program_id(&self) -> Option<i64> {
        match self.scope {
            Scope::Program(id) => Some(id),
            Scope::Workspace(_) => None,
        }
    }

    /// The details as stored (JSON text).
    pub fn details_json(&self) -> String {
        self.details.to_string()
    }
}

/// The details of a change of settings: `{"field": {"old": …, "new": …}}` for each field
/// whose value differs, in the order compared. A secret's values are never kept:
/// `{"field": {"changed": true}}`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Changes(Map<String, Value>);

impl Changes {
    pub fn new() -> Changes {
        Changes::default()
    }

    /// Notes `field` when `old` and `new` differ.
    pub fn field<T: Serialize + PartialEq + ?Sized>(
        &mut self,
        field: &str,
        old: &T,
        new: &T,
    ) -> &mut Self {
        if old != new {
            let mut change = Map::new();
            change.insert("old".into(), to_value(old));
            change.insert("new".into(), to_value(new));
            self.0.insert(field.into(), Value::Object(change));
        }
        self
    }

    /// Notes that the secret `field` changed when `old` and `new` differ, without either.
    pub fn secret<T: PartialEq + ?Sized>(&mut self, field: &str, old: &T, new: &T) -> &mut Self {
        if old != new {
            let mut change = Map::new();
            change.insert("changed".into(), Value::Bool(true));
            self.0.insert(field.into(), Value::Object(change));
        }
        self
    }

    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The details: a JSON object.
    pub fn into_value(self) -> Value {
        Value::Object(self.0)
    }
}

fn to_value<T: Serialize + ?Sized>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// The details of a move from one value to another: `{"old": …, "new": …}` under `field`.
pub fn moved<T: Serialize + ?Sized>(field: &str, old: &T, new: &T) -> Value {
    let mut change = Map::new();
    change.insert("old".into(), to_value(old));
    change.insert("new".into(), to_value(new));
    let mut details = Map::new();
    details.insert(field.into(), Value::Object(change));
    Value::Object(details)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn action_names_read_back() {
        for a in Action::ALL {
            assert_eq!(a.as_str().parse::<Action>(), Ok(*a));
        }
        assert_eq!(Action::ALL.len(), Action::NAMES.len());
        assert!("program.deleted".parse::<Action>().is_err());
        assert_eq!(
            serde_json::to_value(Action::ProgramUpdated).unwrap(),
            json!("program.updated")
        );
    }

    #[test]
    fn changes_keep_only_what_differs() {
        let mut c = Changes::new();
        c.field("name", "Old", "New")
            .field("cookie_window_days", &30, &30)
            .field(
                "destination_url",
                &None::<String>,
                &Some("https://x".to_string()),
            );
        assert_eq!(
            c.into_value(),
            json!({
                "name": {"old": "Old", "new": "New"},
                "destination_url": {"old": null, "new": "https://x"}
            })
        );
    }

    #[test]
    fn a_secret_is_only_said_to_change() {
        let mut c = Changes::new();
        c.secret("stripe_webhook_secret", &Some("whsec_a"), &Some("whsec_b"));
        let v = c.into_value();
        assert_eq!(v, json!({"stripe_webhook_secret": {"changed": true}}));
        assert!(!v.to_string().contains("whsec"));
        let mut same = Changes::new();
        same.secret("stripe_webhook_secret", &Some("x"), &Some("x"));
        assert!(same.is_empty());
    }

    #[test]
    fn no_change_is_empty() {
        let mut c = Changes::new();
        c.field("a", &1, &1);
        assert!(c.is_empty());
        assert_eq!(c.into_value(), json!({}));
    }

    #[test]
    fn moved_names_both_ends() {
        assert_eq!(
            moved("status", "pending", "approved"),
            json!({"status": {"old": "pending", "new": "approved"}})
        );
    }

    #[test]
    fn entries_carry_their_program() {
        let origin = Origin::without_request(Actor::operator());
        let e = Entry::new(
            1,
            &origin,
            Action::PayoutPaid,
            Scope::Program(7),
            Target::payout(3),
        );
        assert_eq!(e.program_id(), Some(7));
        assert_eq!(e.details_json(), "{}");
        let w = Entry::new(
            1,
            &origin,
            Action::MemberAdded,
            Scope::Workspace(2),
            Target::user(5),
        );
        assert_eq!(w.program_id(), None);
    }
}
