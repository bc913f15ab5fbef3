//! The management operations: workspaces, programs, partners, links, users and
//! memberships, and the admin token. The inputs are the management API's request bodies,
//! whether they come over HTTP or from `reftrack admin`; these functions validate them
//! (with the texts a client reads), issue secrets, stamp times and keep the lookup
//! caches true.

pub mod bounties;
pub mod coupons;
pub mod first_run;
pub mod groups;
pub mod management;

mod admin_token;
mod bodies;
mod links;
mod records;
mod users;
mod validate;
mod views;

use futures::FutureExt;
use serde::{Deserialize, Deserializer, Serialize};
use utoipa::ToSchema;

use crate::access::Caller;
use crate::error::refusals;
use crate::secrets::{self, ADMIN_TOKEN_PREFIX, API_TOKEN_PREFIX};
use crate::{App, Error, Result};
use reftrack_domain::access::Access;
use reftrack_domain::audit::{moved, Action, Changes, Entry, Scope, Target};
use reftrack_domain::commission::{CommissionRule, CommissionSpec};
use reftrack_domain::fraud::{FraudRules, FraudRulesPatch};
use reftrack_domain::money::normalize_currency;
use reftrack_domain::redirect;
use reftrack_domain::status::{
    LinkStatus, MembershipStatus, PartnerStatus, PayoutMethod, Role, UnknownValue,
};
use reftrack_domain::text;
use reftrack_domain::time::iso;
use reftrack_store::{
    Link, LinkPatch, MemberRow, Membership, NewProgram, Partner, PartnerPatch, PartnerProgram,
    PaymentAccount, Program, ProgramPatch, Record, StoreError, User, UserPatch, Workspace,
};

pub use bodies::*;
pub(crate) use users::{user_email, user_fields};
use validate::*;
pub(crate) use validate::{
    check_password, destination_url, email, hashed_password, name, new_program, nullable, one_of,
    partner_patch, short_link,
};
pub use views::*;

#[cfg(test)]
mod tests;
