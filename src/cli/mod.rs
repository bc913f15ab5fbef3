//! `reftrack admin …`: the management API's operations from the command line.
//!
//! Each subcommand reads its fields into the same request body the management API takes
//! and calls the same service-layer function (no server needed), so validation, texts and
//! output are the API's. Fields are `key=value` (a string) or `key:=json` (a number,
//! boolean, null, object or list).

pub mod payouts;
pub mod rates;

use std::sync::Arc;

use clap::{Args, Subcommand};
use futures::future::BoxFuture;
use futures::FutureExt;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::app::programs::management::{LinkParams, ProgramPartnerParams};
use crate::app::{App, Caller, PageParams};
use crate::config::{DatabaseArgs, MailArgs, WebhookArgs};
use crate::domain::time::SystemClock;
use crate::store;

/// Prints `value` as indented JSON on standard output. A reader that stopped reading
/// (`reftrack admin … | head`) is not an error: the rest of the answer is not wanted.
pub fn print_json(value: &impl Serialize) -> anyhow::Result<()> {
    use std::io::Write;
    let text = serde_json::to_string_pretty(value)?;
    match writeln!(std::io::stdout().lock(), "{text}") {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

/// Options of `reftrack admin`.
#[derive(Debug, Args)]
pub struct AdminArgs {
    #[command(flatten)]
    pub database: DatabaseArgs,
    #[command(flatten)]
    pub webhooks: WebhookArgs,
    /// The SMTP server partner invites are mailed through, as `reftrack serve` takes it.
    #[command(flatten)]
    pub mail: MailArgs,
    #[command(subcommand)]
    pub command: AdminCommand,
}

/// One management operation.
#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Create a workspace: name=…
    CreateWorkspace { fields: Vec<String> },
    /// Create a program: workspace_id:=1 name=… [cookie_window_days:=60] [currency=usd]
    /// [commission:='{"type":"percentage","percent":30}'] [recurring_commission_months:=12]
    /// [allowed_origins:='["https://shop.example"]'] [destination_url=https://…]
    CreateProgram { fields: Vec<String> },
    /// Show a program.
    GetProgram { id: i64 },
    /// Change a program (any create field, plus stripe_webhook_secret=…).
    UpdateProgram { id: i64, fields: Vec<String> },
    /// Issue a new API token for a program; the old one stops working at once, or after
    /// [keep_old_for_hours:=N] hours (up to 168).
    RotateToken { id: i64, fields: Vec<String> },
    /// Set a program's payment account: status=connected [account_id=…]
    /// [charges_enabled:=true] [payouts_enabled:=true] [details_submitted:=true]
    /// [connection_date=2026-01-01T00:00:00Z]
    SetPaymentAccount { id: i64, fields: Vec<String> },
    /// Create a partner: name=… code=… [email=…]
    CreatePartner { fields: Vec<String> },
    /// Change a partner: [name=…] [email=…] [payout_method=paypal|wise|manual]
    /// [payout_email=…] (`key:=null` clears)
    UpdatePartner { id: i64, fields: Vec<String> },
    /// Make an invite link for a partner (a new password for one that has an account),
    /// mailed to it too when an SMTP server is configured; older links stop working.
    InvitePartner {
        id: i64,
        /// Where partners reach the server, the link's base (`https://track.example.com`);
        /// by default the address confirmed at the first run or in the dashboard's
        /// settings.
        #[arg(long, env = "REFTRACK_PUBLIC_URL", value_parser = crate::domain::redirect::server_url)]
        public_url: Option<String>,
    },
    /// Add a partner to a program: partner_id:=1 [status=approved|pending|rejected]
    AddProgramPartner {
        program_id: i64,
        fields: Vec<String>,
    },
    /// Create a referral link: program_id:=1 partner_id:=1 short_link=… [status=active]
    /// [destination_url=https://…]
    CreateLink { fields: Vec<String> },
    /// Show a referral link with its click counter and coupon codes.
    GetLink { id: i64 },
    /// Change a link: [status=active|inactive] [destination_url=…] (`destination_url:=null`
    /// clears)
    UpdateLink { id: i64, fields: Vec<String> },
    /// Create a coupon code on a link: code=… [stripe_promotion_code=promo_…]
    CreateCoupon { link_id: i64, fields: Vec<String> },
    /// List a link's coupon codes.
    ListCoupons {
        link_id: i64,
        /// active or archived.
        #[arg(long)]
        status: Option<String>,
        #[command(flatten)]
        paging: Paging,
    },
    /// Archive a coupon code: it attributes no more sales.
    ArchiveCoupon { link_id: i64, coupon_id: i64 },
    /// Create a dashboard user: email=… password=… [name=…]
    CreateUser { fields: Vec<String> },
    /// Change a dashboard user: [name=…] [password=…] (a new password ends the user's
    /// sessions: how a user who forgot its password gets a new one)
    UpdateUser { id: i64, fields: Vec<String> },
    /// Turn a dashboard user's two-factor sign-in off (for a user who lost both its
    /// device and its recovery codes): it signs in with its password alone again.
    DisableTwoFactor {
        /// The email the user signs in with.
        email: String,
    },
    /// Change a workspace's settings: require_two_factor:=true|false
    UpdateWorkspace { id: i64, fields: Vec<String> },
    /// List the dashboard users whose email or name contains the search text
    ListUsers {
        /// Search text (any case).
        #[arg(long)]
        q: Option<String>,
        #[command(flatten)]
        paging: Paging,
    },
    /// Add a user to a workspace: user_id:=1 role=owner|admin|member|viewer [status=active]
    AddMember {
        workspace_id: i64,
        fields: Vec<String>,
    },
    /// Change a membership: [role=…] [status=active|suspended]
    UpdateMember {
        workspace_id: i64,
        user_id: i64,
        fields: Vec<String>,
    },
    /// List the workspaces.
    ListWorkspaces {
        #[command(flatten)]
        paging: Paging,
    },
    /// List the programs, of one workspace if asked.
    ListPrograms {
        #[arg(long)]
        workspace_id: Option<String>,
        #[command(flatten)]
        paging: Paging,
    },
    /// List the partners whose name, email or code contains the search text.
    ListPartners {
        /// Search text (any case).
        #[arg(long)]
        q: Option<String>,
        #[command(flatten)]
        paging: Paging,
    },
    /// List a program's partners with their totals there.
    ListProgramPartners {
        program_id: i64,
        /// pending, approved, rejected or banned.
        #[arg(long)]
        status: Option<String>,
        /// Only the partners of this group.
        #[arg(long)]
        group_id: Option<String>,
        #[command(flatten)]
        page: payouts::PageOptions,
    },
    /// List a program's partner groups, the default first.
    ListGroups { program_id: i64 },
    /// Create a partner group: name=… [rewards:='{"sale":{…},"lead":{…}}'] (without
    /// rewards, a copy of the default group's)
    AddGroup {
        program_id: i64,
        fields: Vec<String>,
    },
    /// Show a partner group.
    GetGroup { id: i64 },
    /// Change a partner group: [name=…] [rewards:='{…}'] [commission_hold_days:=N|null]
    UpdateGroup { id: i64, fields: Vec<String> },
    /// Delete a partner group (not the default one, and only once it has no partners).
    DeleteGroup { id: i64 },
    /// List a program's bounties, newest first.
    ListBounties { program_id: i64 },
    /// Create a bounty: name=… metric=sales|leads|revenue_cents threshold:=N
    /// amount_cents:=N [group_ids:='[1,2]'] [starts_at=2026-12-01] [ends_at=…]
    AddBounty {
        program_id: i64,
        fields: Vec<String>,
    },
    /// Show a bounty.
    GetBounty { id: i64 },
    /// Change a bounty: any field of add-bounty (starts_at:=null, ends_at:=null clear them).
    UpdateBounty { id: i64, fields: Vec<String> },
    /// Archive a bounty: it makes no new awards.
    ArchiveBounty { id: i64 },
    /// Change a partner's status in a program, or move it to another group:
    /// [status=approved|rejected|banned|pending] [group_id:=N]
    SetPartnerStatus {
        program_id: i64,
        partner_id: i64,
        fields: Vec<String>,
    },
    /// List referral links.
    ListLinks {
        #[arg(long)]
        program_id: Option<String>,
        #[arg(long)]
        partner_id: Option<String>,
        /// active or inactive.
        #[arg(long)]
        status: Option<String>,
        #[command(flatten)]
        paging: Paging,
    },
    /// List a program's webhook endpoints.
    ListWebhooks {
        program_id: i64,
        #[command(flatten)]
        paging: Paging,
    },
    /// Add a webhook endpoint to a program; prints its secret, this once:
    /// url=https://… events:='["sale.created","payout.paid"]'
    AddWebhook {
        program_id: i64,
        fields: Vec<String>,
    },
    /// Show a webhook endpoint (without its secret).
    GetWebhook { id: i64 },
    /// Change a webhook endpoint: [url=…] [events:='[…]'] [enabled:=true|false]
    UpdateWebhook { id: i64, fields: Vec<String> },
    /// Delete a webhook endpoint with its delivery log.
    DeleteWebhook { id: i64 },
    /// List a webhook endpoint's deliveries with their attempts.
    ListWebhookDeliveries {
        id: i64,
        #[command(flatten)]
        paging: Paging,
    },
    /// Make a delivery due now (a running server sends it), with its message id.
    RetryWebhookDelivery { id: i64, delivery_id: i64 },
    /// Write a test message (type `webhook.test`) to a webhook endpoint, due now (a
    /// running server sends it).
    TestWebhook { id: i64 },
    /// Replace the stored admin token with a new one and print it; running servers take
    /// it, and refuse the old one, within 1 s. Refused when REFTRACK_ADMIN_TOKEN is set:
    /// a server started with it accepts that token only.
    RotateAdminToken {
        /// REFTRACK_ADMIN_TOKEN, read as `reftrack serve` reads it, only to refuse.
        #[arg(
            long,
            env = "REFTRACK_ADMIN_TOKEN",
            hide = true,
            hide_env_values = true
        )]
        admin_token: Option<String>,
    },
}

/// What `rotate-admin-token` answers where `REFTRACK_ADMIN_TOKEN` is set: a server that
/// has the variable accepts that token only, so a rotated one would never work there.
pub const ROTATE_CONFIGURED_TOKEN: &str = "REFTRACK_ADMIN_TOKEN is set: a server started \
    with it accepts that token only, so a rotated token would not work there. Set a new \
    REFTRACK_ADMIN_TOKEN and restart the servers instead, or unset it to rotate the stored \
    token.";

/// Paging of a list: `--limit`, `--cursor`.
#[derive(Debug, Clone, Args)]
pub struct Paging {
    /// Rows per page, 1 to 100 (default 50).
    #[arg(long)]
    pub limit: Option<String>,
    /// The `next_cursor` of the previous page.
    #[arg(long)]
    pub cursor: Option<String>,
}

impl Paging {
    fn page(&self) -> PageParams {
        PageParams {
            limit: self.limit.clone(),
            cursor: self.cursor.clone(),
        }
    }
}

/// Parses `key=value` and `key:=json` pairs into a JSON object.
pub fn parse_fields(fields: &[String]) -> anyhow::Result<Value> {
    let mut map = Map::new();
    for field in fields {
        if let Some((k, v)) = field.split_once(":=") {
            let value = serde_json::from_str(v)
                .map_err(|e| anyhow::anyhow!("{k}: not valid JSON ({e}); use {k}=… for text"))?;
            map.insert(k.to_string(), value);
        } else if let Some((k, v)) = field.split_once('=') {
            map.insert(k.to_string(), Value::String(v.to_string()));
        } else {
            anyhow::bail!("expected key=value or key:=json, got {field:?}");
        }
    }
    Ok(Value::Object(map))
}

/// The body of a subcommand: its fields read as the API reads a request body.
fn body<T: DeserializeOwned>(fields: &[String]) -> Result<T, String> {
    let value = parse_fields(fields).map_err(|e| e.to_string())?;
    crate::http::extract::read_body_value(value).map_err(|e| e.to_string())
}

/// An answer as JSON, or a service error as its client text.
fn answer<T: Serialize>(done: crate::app::Result<T>) -> Result<Value, String> {
    match done {
        Ok(v) => serde_json::to_value(v).map_err(|e| e.to_string()),
        Err(e) => {
            if let crate::app::Error::Internal(_, cause) | crate::app::Error::Unavailable(cause) =
                &e
            {
                tracing::error!(error = ?cause, "admin command failed");
            }
            Err(e.to_string())
        }
    }
}

impl AdminCommand {
    /// Runs the operation; its answer as JSON (`None` when it printed its own output),
    /// or the error text.
    async fn run(self, app: &App) -> Result<Option<Value>, String> {
        use AdminCommand::*;
        let caller = &Caller::operator();
        match self {
            ListProgramPartners {
                program_id,
                status,
                group_id,
                page,
            } if page.csv => {
                let filter = ProgramPartnerParams { status, group_id };
                let chunks = app
                    .export_program_partners(caller, program_id, &filter)
                    .await;
                payouts::print_chunks(chunks, crate::app::money::exports::program_partners_csv)
                    .await
            }
            other => other.answer(app).await.map(Some),
        }
    }

    /// Runs an operation that answers JSON.
    async fn answer(self, app: &App) -> Result<Value, String> {
        use AdminCommand::*;
        let caller = &Caller::operator();
        match self {
            ListWorkspaces { paging } => answer(app.list_workspaces(caller, &paging.page()).await),
            ListPrograms {
                workspace_id,
                paging,
            } => answer(
                app.list_programs(caller, workspace_id.as_deref(), &paging.page())
                    .await,
            ),
            ListPartners { q, paging } => answer(
                app.list_partners(caller, q.as_deref(), &paging.page())
                    .await,
            ),
            ListProgramPartners {
                program_id,
                status,
                group_id,
                page,
            } => {
                let filter = ProgramPartnerParams { status, group_id };
                answer(
                    app.program_partners(caller, program_id, &filter, &page.paging.page())
                        .await,
                )
            }
            SetPartnerStatus {
                program_id,
                partner_id,
                fields,
            } => answer(
                app.set_program_partner_status(caller, program_id, partner_id, body(&fields)?)
                    .await,
            ),
            ListLinks {
                program_id,
                partner_id,
                status,
                paging,
            } => {
                let params = LinkParams {
                    program_id,
                    partner_id,
                    status,
                };
                answer(app.list_links(caller, &params, &paging.page()).await)
            }
            CreateWorkspace { fields } => {
                answer(app.create_workspace(caller, body(&fields)?).await)
            }
            CreateProgram { fields } => answer(app.create_program(caller, body(&fields)?).await),
            GetProgram { id } => answer(app.program_view(caller, id).await),
            UpdateProgram { id, fields } => {
                answer(app.update_program(caller, id, body(&fields)?).await)
            }
            RotateToken { id, fields } => {
                answer(app.rotate_program_token(caller, id, body(&fields)?).await)
            }
            SetPaymentAccount { id, fields } => {
                answer(app.set_payment_account(caller, id, body(&fields)?).await)
            }
            CreatePartner { fields } => answer(app.create_partner(caller, body(&fields)?).await),
            UpdatePartner { id, fields } => {
                answer(app.update_partner(caller, id, body(&fields)?).await)
            }
            InvitePartner { id, public_url } => {
                let known = match public_url {
                    Some(url) => Some(url),
                    None => app.known_public_url().await.map_err(|e| e.to_string())?,
                };
                let Some(url) = known else {
                    return Err(
                        "invite-partner needs the server's address: --public-url or \
                        REFTRACK_PUBLIC_URL, or one confirmed at the first run or in the \
                        dashboard's settings"
                            .into(),
                    );
                };
                answer(app.invite_partner(caller, id, &url).await)
            }
            AddProgramPartner { program_id, fields } => answer(
                app.add_program_partner(caller, program_id, body(&fields)?)
                    .await,
            ),
            CreateLink { fields } => answer(app.create_link(caller, body(&fields)?).await),
            GetLink { id } => answer(app.link(caller, id).await),
            CreateCoupon { link_id, fields } => {
                answer(app.create_coupon(caller, link_id, body(&fields)?).await)
            }
            ListCoupons {
                link_id,
                status,
                paging,
            } => answer(
                app.link_coupons(caller, link_id, status.as_deref(), &paging.page())
                    .await,
            ),
            ArchiveCoupon { link_id, coupon_id } => {
                answer(app.archive_coupon(caller, link_id, coupon_id).await)
            }
            UpdateLink { id, fields } => answer(app.update_link(caller, id, body(&fields)?).await),
            CreateUser { fields } => answer(app.create_user(caller, body(&fields)?).await),
            UpdateUser { id, fields } => answer(app.update_user(caller, id, body(&fields)?).await),
            DisableTwoFactor { email } => answer(
                app.operator_disable_two_factor(&email)
                    .await
                    .map(|was_on| serde_json::json!({"email": email, "was_on": was_on})),
            ),
            UpdateWorkspace { id, fields } => {
                let b: crate::app::two_factor::WorkspaceSettingsBody = body(&fields)?;
                answer(
                    app.set_require_two_factor(caller, id, b.require_two_factor)
                        .await,
                )
            }
            ListUsers { q, paging } => {
                answer(app.list_users(caller, q.as_deref(), &paging.page()).await)
            }
            AddMember {
                workspace_id,
                fields,
            } => answer(app.add_member(caller, workspace_id, body(&fields)?).await),
            UpdateMember {
                workspace_id,
                user_id,
                fields,
            } => answer(
                app.update_member(caller, workspace_id, user_id, body(&fields)?)
                    .await,
            ),
            ListWebhooks { program_id, paging } => {
                answer(app.list_webhooks(caller, program_id, &paging.page()).await)
            }
            ListGroups { program_id } => answer(app.list_groups(caller, program_id).await),
            AddGroup { program_id, fields } => {
                answer(app.create_group(caller, program_id, body(&fields)?).await)
            }
            GetGroup { id } => answer(app.group(caller, id).await),
            UpdateGroup { id, fields } => {
                answer(app.update_group(caller, id, body(&fields)?).await)
            }
            DeleteGroup { id } => answer(app.delete_group(caller, id).await),
            ListBounties { program_id } => answer(app.list_bounties(caller, program_id).await),
            AddBounty { program_id, fields } => {
                answer(app.create_bounty(caller, program_id, body(&fields)?).await)
            }
            GetBounty { id } => answer(app.bounty(caller, id).await),
            UpdateBounty { id, fields } => {
                answer(app.update_bounty(caller, id, body(&fields)?).await)
            }
            ArchiveBounty { id } => answer(app.archive_bounty(caller, id).await),
            AddWebhook { program_id, fields } => {
                answer(app.create_webhook(caller, program_id, body(&fields)?).await)
            }
            GetWebhook { id } => answer(app.webhook(caller, id).await),
            UpdateWebhook { id, fields } => {
                answer(app.update_webhook(caller, id, body(&fields)?).await)
            }
            DeleteWebhook { id } => answer(
                app.delete_webhook(caller, id)
                    .await
                    .map(|()| serde_json::json!({ "deleted": id })),
            ),
            ListWebhookDeliveries { id, paging } => {
                answer(app.webhook_deliveries(caller, id, &paging.page()).await)
            }
            RetryWebhookDelivery { id, delivery_id } => {
                answer(app.resend_delivery(caller, id, delivery_id).await)
            }
            TestWebhook { id } => answer(app.send_test_webhook(caller, id).await),
            RotateAdminToken { admin_token: None } => answer(
                app.rotate_admin_token()
                    .await
                    .map(|token| serde_json::json!({ "admin_token": token })),
            ),
            RotateAdminToken {
                admin_token: Some(_),
            } => Err(ROTATE_CONFIGURED_TOKEN.to_string()),
        }
    }
}

/// Runs one admin subcommand; prints the JSON answer (or `{"error": …}` on stderr) and
/// returns whether it succeeded.
pub async fn run_admin(args: AdminArgs) -> anyhow::Result<bool> {
    let command = args.command;
    let mailer = args.mail.mailer()?;
    run_on(&args.database, args.webhooks, mailer, |app| {
        async move { command.run(app).await }.boxed()
    })
    .await
}

/// Opens the database, which must exist ([`store::open_existing`]), runs `work` on the
/// service over it, closes the database, and prints what `work` answered: JSON
/// (`Some`), nothing (`None`: it printed its own output), or `{"error": …}` on stderr.
/// Returns whether it succeeded.
pub async fn run_on<W>(
    database: &DatabaseArgs,
    webhooks: WebhookArgs,
    mailer: Option<crate::app::mail::Mailer>,
    work: W,
) -> anyhow::Result<bool>
where
    W: for<'a> FnOnce(&'a App) -> BoxFuture<'a, Result<Option<Value>, String>>,
{
    let store = store::open_existing(&database.database_url).await?;
    let app = App::new(store.clone(), Arc::new(SystemClock))
        .allowing_private_webhook_targets(webhooks.allow_private)
        .with_mailer(mailer);
    let done = work(&app).await;
    store.close().await;
    match done {
        Ok(Some(value)) => {
            print_json(&value)?;
            Ok(true)
        }
        Ok(None) => Ok(true),
        Err(error) => {
            eprintln!(
                "{}",
                serde_json::to_string_pretty(&serde_json::json!({ "error": error }))?
            );
            Ok(false)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_are_strings_or_json() {
        let v = parse_fields(&[
            "name=Acme Inc".into(),
            "workspace_id:=1".into(),
            "commission:={\"type\":\"flat\",\"amount_cents\":500}".into(),
            "code=a=b".into(),
        ])
        .unwrap();
        assert_eq!(
            v,
            json!({"name": "Acme Inc", "workspace_id": 1, "commission": {"type": "flat", "amount_cents": 500}, "code": "a=b"})
        );
        assert!(parse_fields(&["oops".into()]).is_err());
        assert!(parse_fields(&["n:=nope".into()]).is_err());
    }
}
