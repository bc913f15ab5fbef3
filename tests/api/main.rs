//! The API tests, one binary: the real router on SQLite and PostgreSQL (through
//! `tower::ServiceExt::oneshot` or a port-0 listener), and the server binary itself where a
//! process matters (crashes, outages, shutdown, several processes on one database).
//!
//! PostgreSQL: each test that runs on it makes a database of its own on the server of
//! `REFTRACK_TEST_POSTGRES_URL` and drops it at the end. `scripts/test` starts a
//! throw-away server when the variable is not set; a PostgreSQL test run without one
//! fails and says how to get one.

#[macro_use]
mod common;

mod abuse;
mod admin_api;
mod audit_log;
mod backup;
mod bad_input;
mod bounties;
mod click_waits;
mod connections;
mod console;
mod coupons;
mod crash;
mod currencies;
mod dashboard_auth;
mod dashboard_reports;
mod deploy;
mod fraud_rules;
mod fuzz;
mod geoip;
mod groups;
mod invite_mail;
mod lead_rewards;
mod lookup_cache;
mod management;
mod metrics;
mod openapi;
mod outage;
mod partners;
mod payout_details;
mod payouts;
mod portal;
mod process;
mod redirects;
mod request_ids;
mod seed_bench;
mod self_referral;
mod shutdown;
mod startup;
mod stripe_webhooks;
mod tenant_isolation;
mod track_click;
mod track_lead;
mod track_sale;
mod two_factor;
mod verify;
mod webhook_processes;
mod webhooks;
