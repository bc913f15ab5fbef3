//! Who may do what in the management API: the operator everything; a dashboard user
//! what its memberships of the record's workspaces allow.
//!
//! A record belongs to one workspace (a program and everything in it) or to several (a
//! partner is shared by the programs it is in). A caller with no membership of any of
//! them is told the record does not exist; one whose memberships there are all suspended,
//! or whose role does not reach, is refused.

use super::status::{MembershipStatus, Role};

/// What a call does to the record it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Reads it: every role.
    Read,
    /// Changes it: `owner` and `admin`.
    Change,
    /// Adds or changes members of a workspace: `owner`.
    ManageMembers,
    /// Changes what a shared record holds for every workspace it is in at once (a
    /// partner's sign-in, contact email and payout details): `owner` or `admin` of each
    /// of those workspaces, so that one workspace cannot take over what another relies on.
    ChangeEverywhere,
}

/// One of the caller's memberships, as the rule needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seat {
    pub workspace_id: i64,
    pub role: Role,
    pub status: MembershipStatus,
}

/// The answer of [`decide`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Go ahead.
    Allowed,
    /// Answer as if the record did not exist.
    Hidden,
    /// Refuse, saying why.
    Refused(String),
    /// Refuse [`Access::ChangeEverywhere`]: the record is also of a workspace where the
    /// caller may not change it.
    Shared,
}

impl Role {
    /// Whether the role allows `access`.
    pub fn allows(self, access: Access) -> bool {
        match access {
            Access::Read => true,
            Access::Change | Access::ChangeEverywhere => matches!(self, Role::Owner | Role::Admin),
            Access::ManageMembers => self == Role::Owner,
        }
    }
}

/// Whether a caller holding `seats` may have `access` to a record of `workspaces`.
pub fn decide(seats: &[Seat], workspaces: &[i64], access: Access) -> Decision {
    let mine: Vec<&Seat> = seats
        .iter()
        .filter(|s| workspaces.contains(&s.workspace_id))
        .collect();
    if mine.is_empty() {
        return Decision::Hidden;
    }
    let active: Vec<&&Seat> = mine
        .iter()
        .filter(|s| s.status == MembershipStatus::Active)
        .collect();
    if active.is_empty() {
        return Decision::Refused("Your membership of this workspace is suspended".into());
    }
    let reaches = |w: i64| {
        active
            .iter()
            .any(|s| s.workspace_id == w && s.role.allows(access))
    };
    if access == Access::ChangeEverywhere && workspaces.iter().any(|&w| reaches(w)) {
        if workspaces.iter().all(|&w| reaches(w)) {
            return Decision::Allowed;
        }
        return Decision::Shared;
    }
    if active.iter().any(|s| s.role.allows(access)) {
        return Decision::Allowed;
    }
    let needed = match access {
        Access::Read => "a member",
        Access::Change | Access::ChangeEverywhere => "an owner or admin",
        Access::ManageMembers => "an owner",
    };
    let role = active.iter().map(|s| s.role.as_str()).next().unwrap_or("");
    Decision::Refused(format!(
        "Your role ({role}) may not do this: it needs {needed} of the workspace"
    ))
}

/// The workspaces in which `seats` grant `access`, for lists scoped to the caller.
pub fn workspaces_allowing(seats: &[Seat], access: Access) -> Vec<i64> {
    seats
        .iter()
        .filter(|s| s.status == MembershipStatus::Active && s.role.allows(access))
        .map(|s| s.workspace_id)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seat(workspace_id: i64, role: Role, status: MembershipStatus) -> Seat {
        Seat {
            workspace_id,
            role,
            status,
        }
    }

    #[test]
    fn the_role_matrix() {
        use Access::*;
        use MembershipStatus::Active;
        for (role, read, change, members) in [
            (Role::Owner, true, true, true),
            (Role::Admin, true, true, false),
            (Role::Member, true, false, false),
            (Role::Viewer, true, false, false),
        ] {
            let seats = [seat(1, role, Active)];
            for (access, allowed) in [(Read, read), (Change, change), (ManageMembers, members)] {
                let d = decide(&seats, &[1], access);
                assert_eq!(d == Decision::Allowed, allowed, "{role:?} {access:?}");
                if !allowed {
                    assert!(matches!(d, Decision::Refused(_)));
                }
            }
        }
    }

    #[test]
    fn another_workspace_is_hidden_and_suspension_refuses() {
        let seats = [seat(1, Role::Owner, MembershipStatus::Active)];
        assert_eq!(decide(&seats, &[2], Access::Read), Decision::Hidden);
        assert_eq!(decide(&seats, &[], Access::Read), Decision::Hidden);
        let suspended = [seat(1, Role::Owner, MembershipStatus::Suspended)];
        assert!(matches!(
            decide(&suspended, &[1], Access::Read),
            Decision::Refused(t) if t.contains("suspended")
        ));
    }

    #[test]
    fn a_shared_record_takes_the_best_seat() {
        let seats = [
            seat(1, Role::Viewer, MembershipStatus::Active),
            seat(2, Role::Admin, MembershipStatus::Active),
            seat(3, Role::Owner, MembershipStatus::Suspended),
        ];
        assert_eq!(decide(&seats, &[1, 2], Access::Change), Decision::Allowed);
        assert!(matches!(
            decide(&seats, &[1, 3], Access::Change),
            Decision::Refused(_)
        ));
        assert_eq!(workspaces_allowing(&seats, Access::Read), vec![1, 2]);
        assert_eq!(workspaces_allowing(&seats, Access::Change), vec![2]);
    }

    #[test]
    fn changing_a_shared_record_everywhere_takes_every_workspace() {
        use MembershipStatus::{Active, Suspended};
        let seats = [
            seat(1, Role::Owner, Active),
            seat(2, Role::Admin, Active),
            seat(3, Role::Viewer, Active),
            seat(4, Role::Owner, Suspended),
        ];
        let everywhere = |w: &[i64]| decide(&seats, w, Access::ChangeEverywhere);
        assert_eq!(everywhere(&[1]), Decision::Allowed);
        assert_eq!(everywhere(&[1, 2]), Decision::Allowed);
        for shared in [&[1, 3][..], &[1, 4], &[2, 9]] {
            assert_eq!(everywhere(shared), Decision::Shared, "{shared:?}");
        }
        // Where no seat may change it at all, the usual answers.
        assert_eq!(everywhere(&[9]), Decision::Hidden);
        assert!(matches!(everywhere(&[3]), Decision::Refused(t) if t.contains("viewer")));
        // Plain changes still take the best seat.
        assert_eq!(decide(&seats, &[1, 3], Access::Change), Decision::Allowed);
    }
}
