//! Partner accounts and the partner API: invites, sign-in, applications, and what a
//! signed-in partner reads of its own programs.
//!
//! A partner session token is `rtp_` and 256 random bits in hex, an invite token `rti_`
//! likewise; only their SHA-256 hashes are stored. Sessions last 7 days from sign-in,
//! as dashboard sessions do, and are a table of their own: neither kind of session works
//! on the other's API. An invite works once, for 7 days; accepting it sets the partner's
//! password (a first one, or a new one when it forgot it) and ends its other sessions.
//!
//! A partner sees a program's links, figures, commissions and payouts only while it is
//! `approved` there; pending, rejected and banned partners see the program's name and
//! their standing (in [`App::partner_me`]) and nothing else.

pub mod invite_mail;

mod applications;
mod fields;
mod partner_programs;
mod profile;
mod sign_in;
mod views;

use std::sync::Arc;

use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::access::Caller;
use crate::accounts::invite_mail::invite_mail;
use crate::dashboard::{NewSession, SESSION_LIFETIME_MS};
use crate::error::refusals;
use crate::money::payouts::CommissionParams;
use crate::notice_mail::{application_mail, payout_details_mail, ApplicationNotice};
use crate::pages::{listed, probe, PageParams};
use crate::programs::{
    check_password, email, hashed_password, name, partner_patch, short_link, user_email,
    PartnerPatchBody,
};
use crate::secrets::{generate_token, hash_token};
use crate::tracking::redirect::redirect_url;
use crate::two_factor::{Account, SecondFactor};
use crate::{App, Error, Listed, Result};
use reftrack_domain::access::Access;
use reftrack_domain::commission::CommissionRule;
use reftrack_domain::rewards::{RewardKind, Rewards};
use reftrack_domain::status::{LinkStatus, MembershipStatus, PartnerStatus};
use reftrack_domain::webhooks::EventType;
use reftrack_store::partners::{
    NewApplicant, PartnerAccount, PartnerMembership, PartnerPayoutItem, TokenGrant,
};
use reftrack_store::webhooks::{Event, Subject};
use reftrack_store::{
    Balance, CommissionRow, Link, LinkFilter, Partner, PartnerProgram, Program, Record, StoreError,
};

use fields::*;
pub use fields::{
    BANNED_PAYOUT_DETAILS, PAYOUT_DETAILS_NEED_CODE, PAYOUT_DETAILS_NEED_PASSWORD,
    WRONG_CURRENT_PASSWORD,
};
pub use views::*;

/// Prefix of partner session tokens.
pub const PARTNER_SESSION_PREFIX: &str = "rtp_";
/// Prefix of invite tokens.
pub const INVITE_TOKEN_PREFIX: &str = "rti_";
/// How long an invite works: 7 days.
pub const INVITE_LIFETIME_MS: i64 = 7 * reftrack_domain::time::DAY_MS;
/// How long a password-reset link a partner asked for itself works: an hour.
pub const RESET_LIFETIME_MS: i64 = 60 * 60 * 1000;
/// The answer to a partner's password-reset request, whether or not the email has an
/// account (the answer does not tell).
pub const RESET_SENT: &str = "If a partner account signs in with this email, a link to set a \
    new password is on its way to it. The link works once, for an hour.";
/// Why a partner cannot reset its password itself on this server.
pub const RESET_UNAVAILABLE: &str = "Resetting a password by mail is not set up on this \
    server: ask the program for a new invite link, which lets you set a new password";
/// Active links a partner may have in one program when it makes its own.
pub const MAX_PARTNER_LINKS: i64 = 20;
/// The 409 of an application whose email belongs to a partner the program's workspace
/// added (or invited) and that has not set a password yet: its invite is how it signs up.
pub(super) const INVITED_EMAIL: &str =
    "A program has added a partner with this email that has not \
     signed up yet: accept the invite you were sent (or ask the program for one), then \
     apply signed in";

#[cfg(test)]
mod tests;
