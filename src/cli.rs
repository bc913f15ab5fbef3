//! `reftrack admin …`: the management API's operations from the command line.
//!
//! Each subcommand becomes the same request the HTTP API takes and runs through the same
//! router in-process (no server needed), so validation and output are identical. Fields
//! are `key=value` (a string) or `key:=json` (a number, boolean, null, object or list).

use clap::{Args, Subcommand};
use serde_json::{Map, Value};
use tower::ServiceExt;

use crate::app::{secrets, App};
use crate::config::DatabaseArgs;
use crate::domain::time::SystemClock;
use crate::http::client_ip::ClientResolver;
use crate::http::AppState;
use crate::store;

/// Options of `reftrack admin`.
#[derive(Debug, Args)]
pub struct AdminArgs {
    #[command(flatten)]
    pub database: DatabaseArgs,
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
    /// [allowed_origins:='["https://shop.example"]']
    CreateProgram { fields: Vec<String> },
    /// Show a program.
    GetProgram { id: i64 },
    /// Change a program (any create field, plus stripe_webhook_secret=…).
    UpdateProgram { id: i64, fields: Vec<String> },
    /// Issue a new API token for a program; the old one stops working.
    RotateToken { id: i64 },
    /// Set a program's payment account: status=connected [account_id=…]
    /// [charges_enabled:=true] [payouts_enabled:=true] [details_submitted:=true]
    /// [connection_date=2026-01-01T00:00:00Z]
    SetPaymentAccount { id: i64, fields: Vec<String> },
    /// Create a partner: name=… code=… [email=…]
    CreatePartner { fields: Vec<String> },
    /// Add a partner to a program: partner_id:=1 [status=approved|pending|rejected]
    AddProgramPartner {
        program_id: i64,
        fields: Vec<String>,
    },
    /// Create a referral link: program_id:=1 partner_id:=1 short_link=… [status=active]
    CreateLink { fields: Vec<String> },
    /// Show a referral link with its click counter.
    GetLink { id: i64 },
    /// Change a link's status: status=active|inactive
    UpdateLink { id: i64, fields: Vec<String> },
    /// Create a dashboard user: email=… password=… [name=…]
    CreateUser { fields: Vec<String> },
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
    /// Replace the stored admin token with a new one and print it (not needed when
    /// REFTRACK_ADMIN_TOKEN is set, which takes precedence).
    RotateAdminToken,
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

impl AdminCommand {
    /// The HTTP method, path under `/api/admin` and body of the operation.
    fn request(&self) -> anyhow::Result<(&'static str, String, Option<Value>)> {
        use AdminCommand::*;
        let body = |f: &[String]| parse_fields(f).map(Some);
        Ok(match self {
            CreateWorkspace { fields } => ("POST", "/workspaces".into(), body(fields)?),
            CreateProgram { fields } => ("POST", "/programs".into(), body(fields)?),
            GetProgram { id } => ("GET", format!("/programs/{id}"), None),
            UpdateProgram { id, fields } => ("PATCH", format!("/programs/{id}"), body(fields)?),
            RotateToken { id } => ("POST", format!("/programs/{id}/rotate-token"), None),
            SetPaymentAccount { id, fields } => (
                "PUT",
                format!("/programs/{id}/payment-account"),
                body(fields)?,
            ),
            CreatePartner { fields } => ("POST", "/partners".into(), body(fields)?),
            AddProgramPartner { program_id, fields } => (
                "POST",
                format!("/programs/{program_id}/partners"),
                body(fields)?,
            ),
            CreateLink { fields } => ("POST", "/links".into(), body(fields)?),
            GetLink { id } => ("GET", format!("/links/{id}"), None),
            UpdateLink { id, fields } => ("PATCH", format!("/links/{id}"), body(fields)?),
            CreateUser { fields } => ("POST", "/users".into(), body(fields)?),
            AddMember {
                workspace_id,
                fields,
            } => (
                "POST",
                format!("/workspaces/{workspace_id}/members"),
                body(fields)?,
            ),
            UpdateMember {
                workspace_id,
                user_id,
                fields,
            } => (
                "PATCH",
                format!("/workspaces/{workspace_id}/members/{user_id}"),
                body(fields)?,
            ),
            RotateAdminToken => anyhow::bail!("not an HTTP operation"),
        })
    }
}

/// Runs one admin subcommand; prints the JSON answer and returns whether it succeeded.
pub async fn run_admin(args: AdminArgs) -> anyhow::Result<bool> {
    let store = store::open(&args.database.database_url).await?;
    if let AdminCommand::RotateAdminToken = args.command {
        let token = crate::app::admin::rotate_admin_token(&*store).await?;
        println!("{}", serde_json::json!({ "admin_token": token }));
        store.close().await;
        return Ok(true);
    }
    let (method, path, body) = args.command.request()?;
    // The CLI has the database itself, so it is trusted: it authenticates to the
    // in-process router with a token that exists only for this run.
    let token = secrets::generate_token(secrets::ADMIN_TOKEN_PREFIX);
    let app = std::sync::Arc::new(App::new(store.clone(), std::sync::Arc::new(SystemClock)));
    let state = AppState::new(
        app,
        &secrets::hash_token(&token),
        ClientResolver::new(None, None)?,
    );
    let mut request = axum::http::Request::builder()
        .method(method)
        .uri(format!("/api/admin{path}"))
        .header("authorization", format!("Bearer {token}"));
    let body = match body {
        Some(b) => {
            request = request.header("content-type", "application/json");
            axum::body::Body::from(b.to_string())
        }
        None => axum::body::Body::empty(),
    };
    let response = crate::router(state).oneshot(request.body(body)?).await?;
    let ok = response.status().is_success();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await?;
    let value: Value = serde_json::from_slice(&bytes)?;
    let text = serde_json::to_string_pretty(&value)?;
    if ok {
        println!("{text}");
    } else {
        eprintln!("{text}");
    }
    store.close().await;
    Ok(ok)
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
