//! The closed sets of roles and statuses, as enums. Each is stored and sent as its
//! lowercase name; [`std::str::FromStr`] reads one back and names the allowed values
//! when it fails.

use std::fmt;

/// Declares a lowercase-named enum with `as_str`, `ALL`, `FromStr`, `TryFrom<String>`
/// (for rows) and serde, all from one list.
macro_rules! named_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
        #[serde(rename_all = "lowercase")]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $name {
            /// Every value, in order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The stored and serialized name.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }
        }

        impl std::str::FromStr for $name {
            type Err = UnknownValue;

            fn from_str(s: &str) -> Result<Self, UnknownValue> {
                match s {
                    $($text => Ok($name::$variant),)+
                    _ => Err(UnknownValue(&[$($text),+])),
                }
            }
        }

        impl TryFrom<String> for $name {
            type Error = UnknownValue;

            fn try_from(s: String) -> Result<Self, UnknownValue> {
                s.parse()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

/// A value outside its set; holds the allowed names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnknownValue(pub &'static [&'static str]);

impl UnknownValue {
    /// `"<field> must be one of: a, b, c"`.
    pub fn message(&self, field: &str) -> String {
        format!("{field} must be one of: {}", self.0.join(", "))
    }
}

impl fmt::Display for UnknownValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "one of: {}", self.0.join(", "))
    }
}

impl std::error::Error for UnknownValue {}

named_enum! {
    /// A user's role in a workspace.
    Role {
        /// Everything, including members and roles.
        Owner = "owner",
        /// Everything an owner may, in practice.
        Admin = "admin",
        /// Reads and lists tracking data.
        Member = "member",
        /// Reads tracking figures only.
        Viewer = "viewer",
    }
}

named_enum! {
    /// Whether a membership is in force.
    MembershipStatus {
        /// The member may sign in to the workspace's programs.
        Active = "active",
        /// The membership is kept but grants nothing.
        Suspended = "suspended",
    }
}

named_enum! {
    /// A partner's standing in a program.
    PartnerStatus {
        /// Earns commissions.
        Approved = "approved",
        /// Applied, not yet decided.
        Pending = "pending",
        /// Refused.
        Rejected = "rejected",
        /// Removed for abuse: earns nothing more.
        Banned = "banned",
    }
}

named_enum! {
    /// Where an outbound webhook message stands with its endpoint.
    DeliveryStatus {
        /// Not yet accepted by the endpoint; another attempt is scheduled.
        Pending = "pending",
        /// The endpoint answered 2xx.
        Delivered = "delivered",
        /// Every scheduled attempt failed.
        Failed = "failed",
    }
}

named_enum! {
    /// Whether a referral link records clicks.
    LinkStatus {
        /// Records clicks.
        Active = "active",
        /// Refuses clicks.
        Inactive = "inactive",
    }
}

named_enum! {
    /// Where a customer stands in the click → lead → sale chain.
    CustomerStatus {
        /// Clicked a referral link.
        Click = "click",
        /// Signed up.
        Lead = "lead",
        /// Bought.
        Conversion = "conversion",
    }
}

named_enum! {
    /// Where a commission stands.
    CommissionStatus {
        /// Inside the program's hold period: a refund may still reverse it.
        Pending = "pending",
        /// Due: the hold has passed or an owner approved it; a payout may take it.
        Approved = "approved",
        /// Part of a payout that was marked paid.
        Paid = "paid",
        /// Its sale was fully refunded before it was paid.
        Reversed = "reversed",
        /// An owner refused it; it never pays.
        Rejected = "rejected",
    }
}

named_enum! {
    /// Why a commission exists.
    CommissionKind {
        /// Earned by a sale.
        Sale = "sale",
        /// Takes back, from the next payout, what a refund after payment undid.
        Clawback = "clawback",
        /// Earned by a customer's first lead, under the partner's group's lead reward.
        Lead = "lead",
        /// Given by an owner: due at once, paid with the next payout.
        Bonus = "bonus",
        /// Earned by reaching a bounty's goal.
        Bounty = "bounty",
    }
}

named_enum! {
    /// Something an owner should know about a commission before paying it.
    CommissionFlag {
        /// The sale's customer has the partner's email: the partner bought through its
        /// own link or coupon. The commission waits for an owner's approval.
        #[serde(rename = "self_referral")]
        SelfReferral = "self_referral",
        /// The customer's email is at a known disposable-mail domain.
        #[serde(rename = "disposable_email")]
        DisposableEmail = "disposable_email",
        /// The customer's click came from an IP from which another customer of the same
        /// partner converted lately.
        #[serde(rename = "duplicate_ip")]
        DuplicateIp = "duplicate_ip",
        /// The customer's click came from an IP the partner signed in to the portal from
        /// lately.
        #[serde(rename = "partner_ip")]
        PartnerIp = "partner_ip",
        /// The sale came within seconds of the customer's click.
        #[serde(rename = "fast_conversion")]
        FastConversion = "fast_conversion",
    }
}

named_enum! {
    /// Whether a coupon code attributes sales.
    CouponStatus {
        /// Attributes sales to its link's partner.
        Active = "active",
        /// Kept for the record; attributes nothing, and its code may be used again.
        Archived = "archived",
    }
}

named_enum! {
    /// Where a payout stands.
    PayoutStatus {
        /// Created; its commissions are held by it until it is paid or cancelled.
        Pending = "pending",
        /// The money was sent; its commissions are paid.
        Paid = "paid",
        /// Called off; its commissions went back to approved.
        Cancelled = "cancelled",
    }
}

named_enum! {
    /// How a partner wants to be paid.
    PayoutMethod {
        /// PayPal, to the payout email.
        Paypal = "paypal",
        /// Wise, to the payout email.
        Wise = "wise",
        /// Any other way, arranged by the program owner.
        Manual = "manual",
    }
}

impl PayoutMethod {
    /// The method's name as a page shows it.
    pub fn label(self) -> &'static str {
        match self {
            PayoutMethod::Paypal => "PayPal",
            PayoutMethod::Wise => "Wise",
            PayoutMethod::Manual => "Manual",
        }
    }
}

/// What a role may do on the dashboard endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Permission {
    /// Figures and status of a program.
    TrackingRead,
    /// The event listing.
    TrackingList,
}

impl Permission {
    /// The permission's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Permission::TrackingRead => "tracking:read",
            Permission::TrackingList => "tracking:list",
        }
    }
}

impl Role {
    /// Whether the role grants `permission`: owners, admins and members read and list;
    /// viewers only read.
    pub fn grants(self, permission: Permission) -> bool {
        match self {
            Role::Owner | Role::Admin | Role::Member => true,
            Role::Viewer => permission == Permission::TrackingRead,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_list_the_allowed() {
        for r in Role::ALL {
            assert_eq!(r.as_str().parse::<Role>(), Ok(*r));
        }
        let err = "boss".parse::<Role>().unwrap_err();
        assert_eq!(
            err.message("role"),
            "role must be one of: owner, admin, member, viewer"
        );
        assert_eq!(
            "x".parse::<LinkStatus>().unwrap_err().message("status"),
            "status must be one of: active, inactive"
        );
        let flag = CommissionFlag::SelfReferral;
        assert_eq!(flag.as_str().parse::<CommissionFlag>(), Ok(flag));
        assert_eq!(
            serde_json::to_value(flag).unwrap(),
            serde_json::json!("self_referral")
        );
    }

    #[test]
    fn viewers_read_but_do_not_list() {
        assert!(Role::Viewer.grants(Permission::TrackingRead));
        assert!(!Role::Viewer.grants(Permission::TrackingList));
        assert!(Role::Member.grants(Permission::TrackingList));
    }
}
