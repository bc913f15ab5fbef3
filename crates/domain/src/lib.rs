//! Pure business rules: no I/O, unit-tested.

pub mod access;
pub mod attribution;
pub mod audit;
pub mod bounties;
pub mod click_id;
pub mod commission;
pub mod currency;
pub mod figures;
pub mod fraud;
pub mod lifecycle;
pub mod metrics;
pub mod money;
pub mod redirect;
pub mod refund;
pub mod rewards;
pub mod self_referral;
pub mod status;
pub mod stripe;
pub mod text;
pub mod time;
pub mod user_agent;
pub mod webhooks;
