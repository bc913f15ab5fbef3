//! The tracking use cases: a click, a lead, a sale and a refund, each one flow whatever
//! its source (the tracking API, its legacy alias, a Stripe event, the CLI).
//!
//! A flow runs inside the group committer's transaction, against [`Tx`]; it decides, the
//! store reads and writes. New clicks and plain sales may instead go in set-based with
//! the rest of their batch ([`Write::Click`], [`Write::Sale`]); whatever the batch
//! statement does not take runs as the same flow, so the answer is always the flow's.

pub mod load;
pub mod redirect;
pub mod stripe;

mod bounties;
mod calls;
mod clicks;
mod commands;
mod leads;
mod refunds;
mod sales;

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use tokio::sync::oneshot;

use crate::money::rates::facts::WaitingFacts;
use crate::{answer_or_alone, App, Error, Result};
use reftrack_domain::attribution::{self, AffError, SaleSource};
use reftrack_domain::bounties::Progress;
use reftrack_domain::click_id;
use reftrack_domain::commission::{self, Unearned};
use reftrack_domain::figures::{Deltas, RefundFigures, SaleFigures};
use reftrack_domain::fraud::{self, Rule, SaleFacts, Verdict};
use reftrack_domain::lifecycle::{self, RefundEffect};
use reftrack_domain::refund::{self, RefundStatus};
use reftrack_domain::rewards::{self, SaleReward};
use reftrack_domain::status::{CommissionKind, CustomerStatus, LinkStatus};
use reftrack_domain::webhooks::EventType;
use reftrack_store::tx::Tx;
use reftrack_store::webhooks::{sale_recorded, Event, Subject};
use reftrack_store::write::{self, ClickWrite, Job, OnCommit, SaleWrite, Write};
use reftrack_store::{
    origin_allowed, ClickDetails, ClickEventRow, CouponTarget, Customer, LeadEventRow, NewClick,
    NewCommission, NewCustomer, NewSale, PartnerStanding, Program, SaleEventRow, SaleOutcome,
    SaleProgram, Store,
};

pub(crate) use bounties::count_bounties;
use clicks::*;
pub use commands::*;
use leads::*;
pub(crate) use refunds::refund_flow;
pub(crate) use sales::sale_flow;
use sales::*;
