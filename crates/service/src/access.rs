//! Who calls the management API, and whether it may reach a record. The rule is
//! [`reftrack_domain::access::decide`]; this module reads what it needs.

use serde::Serialize;
use utoipa::ToSchema;

use crate::two_factor::{Account, WORKSPACE_REQUIRES};
use crate::{App, Error, Result};
use reftrack_domain::access::{decide, workspaces_allowing, Access, Decision, Seat};
use reftrack_domain::audit::{Actor, Origin};
use reftrack_domain::status::MembershipStatus;
use reftrack_store::{MembershipView, Program, Record};

/// The caller of a management use case: who it is, and where it called from (what the
/// audit log records of each change it makes).
#[derive(Debug, Clone)]
pub struct Caller {
    pub who: Who,
    pub origin: Origin,
}

/// Who calls a management use case, and so what it may reach.
#[derive(Debug, Clone)]
pub enum Who {
    /// The operator's admin token, the CLI, or a job of Reftrack's own: everything.
    Operator,
    /// A signed-in dashboard user, with its memberships and whether it signs in with a
    /// second factor (a workspace that requires one refuses it otherwise).
    Member {
        user_id: i64,
        memberships: Vec<MembershipView>,
        two_factor: bool,
    },
}

/// The signed-in user and its memberships.
#[derive(Debug, Serialize, ToSchema)]
pub struct Me {
    pub user: MeUser,
    pub memberships: Vec<MembershipView>,
    /// Whether the user signs in with a second factor.
    pub two_factor: bool,
}

/// Who is signed in.
#[derive(Debug, Serialize, ToSchema)]
pub struct MeUser {
    pub id: i64,
    pub email: String,
    pub name: Option<String>,
}

impl Caller {
    /// The operator outside any request: the command line.
    pub fn operator() -> Caller {
        Caller {
            who: Who::Operator,
            origin: Origin::without_request(Actor::operator()),
        }
    }

    /// Reftrack itself (a job): the operator's reach, recorded as `system`.
    pub fn system() -> Caller {
        Caller {
            who: Who::Operator,
            origin: Origin::without_request(Actor::system()),
        }
    }

    /// The same caller, calling through an HTTP request from `ip` with `request_id`.
    pub fn through(mut self, ip: Option<String>, request_id: Option<String>) -> Caller {
        self.origin.ip = ip;
        self.origin.request_id = request_id;
        self
    }

    /// The memberships of a dashboard user; none for the operator.
    pub fn memberships(&self) -> &[MembershipView] {
        match &self.who {
            Who::Operator => &[],
            Who::Member { memberships, .. } => memberships,
        }
    }

    fn seats(memberships: &[MembershipView]) -> Vec<Seat> {
        Self::seats_where(memberships, |_| true)
    }

    fn seats_where(
        memberships: &[MembershipView],
        keep: impl Fn(&MembershipView) -> bool,
    ) -> Vec<Seat> {
        memberships
            .iter()
            .filter(|m| keep(m))
            .map(|m| Seat {
                workspace_id: m.workspace_id,
                role: m.role,
                status: m.status,
            })
            .collect()
    }

    /// The user that bounds a list: `None` for the operator, who sees everything.
    pub fn member(&self) -> Option<i64> {
        match &self.who {
            Who::Operator => None,
            Who::Member { user_id, .. } => Some(*user_id),
        }
    }

    /// Refuses a dashboard user a call only the operator may make.
    pub fn operator_only(&self, what: &str) -> Result<()> {
        match &self.who {
            Who::Operator => Ok(()),
            Who::Member { .. } => Err(Error::Forbidden(format!(
                "Only the operator (admin token) may {what}"
            ))),
        }
    }

    /// Refuses (403 [`WORKSPACE_REQUIRES`]) a user without two-factor an active
    /// membership of a workspace that requires it: the lists across workspaces would show
    /// that workspace's records.
    pub fn two_factor_complete(&self) -> Result<()> {
        match &self.who {
            Who::Member {
                memberships,
                two_factor: false,
                ..
            } if memberships
                .iter()
                .any(|m| m.require_two_factor && m.status == MembershipStatus::Active) =>
            {
                Err(Error::Forbidden(WORKSPACE_REQUIRES.into()))
            }
            _ => Ok(()),
        }
    }

    /// The workspaces where the caller may change records, for a user; `None` for the
    /// operator.
    pub fn changeable_workspaces(&self) -> Option<Vec<i64>> {
        match &self.who {
            Who::Operator => None,
            Who::Member { memberships, .. } => Some(workspaces_allowing(
                &Self::seats(memberships),
                Access::Change,
            )),
        }
    }
}

impl App {
    /// The caller a dashboard session of the user `user_id`, signing in with `email`,
    /// stands for (outside any request until [`Caller::through`] names one).
    pub async fn member_caller(&self, user_id: i64, email: &str) -> Result<Caller> {
        Ok(Caller {
            who: Who::Member {
                user_id,
                memberships: self.store.memberships_of(user_id).await?,
                two_factor: self.two_factor_on(Account::User(user_id)).await?,
            },
            origin: Origin::without_request(Actor::user(user_id, email)),
        })
    }

    /// Lets the call go on when `caller` may have `access` to `record`: 404 when the
    /// record is of none of its workspaces (or does not exist), 403 when its membership
    /// there is suspended or its role does not reach. The operator is always let through;
    /// the use case finds out itself whether the record exists. A user without
    /// two-factor is refused (403 [`WORKSPACE_REQUIRES`]) what only its memberships of
    /// workspaces that require two-factor would allow.
    pub async fn allow(&self, caller: &Caller, record: Record, access: Access) -> Result<()> {
        let Who::Member {
            memberships,
            two_factor,
            ..
        } = &caller.who
        else {
            return Ok(());
        };
        let workspaces = self.store.workspaces_of(record).await?;
        match decide(&Caller::seats(memberships), &workspaces, access) {
            Decision::Allowed if !two_factor => {
                let unlocked = Caller::seats_where(memberships, |m| !m.require_two_factor);
                match decide(&unlocked, &workspaces, access) {
                    Decision::Allowed => Ok(()),
                    _ => Err(Error::Forbidden(WORKSPACE_REQUIRES.into())),
                }
            }
            Decision::Allowed => Ok(()),
            Decision::Hidden => Err(Error::NotFound(record.not_found())),
            Decision::Refused(why) => Err(Error::Forbidden(why)),
            Decision::Shared => Err(Error::Forbidden(format!(
                "This {} is also in programs of a workspace you do not manage: only it (in \
                 its portal) or the operator may change its sign-in, email and payout details",
                record.kind().to_ascii_lowercase()
            ))),
        }
    }

    /// Whether `caller` may change a partner's sign-in, contact email and payout details
    /// ([`Access::ChangeEverywhere`]), for pages that offer those changes.
    pub async fn may_change_everywhere(&self, caller: &Caller, record: Record) -> Result<bool> {
        match self.allow(caller, record, Access::ChangeEverywhere).await {
            Ok(()) => Ok(true),
            Err(Error::Forbidden(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The program `caller` may read: as [`Self::allow`], then 404 when it does not exist.
    pub(super) async fn readable_program(
        &self,
        caller: &Caller,
        program_id: i64,
    ) -> Result<Program> {
        self.allow(caller, Record::Program(program_id), Access::Read)
            .await?;
        self.program(program_id).await
    }

    /// The signed-in user and its memberships.
    pub async fn me(&self, user_id: i64, email: String, name: Option<String>) -> Result<Me> {
        Ok(Me {
            user: MeUser {
                id: user_id,
                email,
                name,
            },
            memberships: self.store.memberships_of(user_id).await?,
            two_factor: self.two_factor_on(Account::User(user_id)).await?,
        })
    }
}
