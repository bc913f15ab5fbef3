//! The tracking API (§4.1–§4.4): `/api/v1/track/{click,lead,sale,refund}` and the legacy
//! alias under `/api/tracking/`.

use std::sync::atomic::{AtomicI64, Ordering};

use axum::extract::{Request, State};
use axum::http::header::{ORIGIN, USER_AGENT};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Map, Value};

use super::extract::{truncate, AdditionalData, Fields, JsonObject, MAX_ID_LEN};
use crate::auth::{bearer, hash_token, Bearer};
use crate::domain::attribution::extract_aff;
use crate::domain::money::{major_units, normalize_currency};
use crate::domain::time::now_ms;
use crate::error::{Error, Result};
use crate::store::{
    origin_allowed, ClickDetails, NewClick, NewLead, NewRefund, NewSale, NewTestClick, NewTestLead,
    Program, SaleProgram,
};
use crate::AppState;

/// Largest `amount_cents` accepted: ten billion in major units. Beyond it sums could
/// overflow, and no real sale is that large.
pub const MAX_AMOUNT_CENTS: i64 = 1_000_000_000_000;

/// Routes of the tracking API, mounted under `/api/v1/track` and `/api/tracking`.
pub fn router() -> Router<AppState> {
    let browser = Router::new()
        .route("/click", post(click).options(preflight))
        .route("/lead", post(lead).options(preflight))
        .layer(middleware::from_fn(browser_cors));
    let server = Router::new()
        .route("/sale", post(sale))
        .route("/refund", post(refund));
    browser.merge(server)
}

/// The client's peer address and headers, for enrichment and origin checks.
pub struct Caller {
    peer: Option<std::net::IpAddr>,
    headers: HeaderMap,
}

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for Caller {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _: &S,
    ) -> std::result::Result<Self, Self::Rejection> {
        let peer = parts
            .extensions
            .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
            .map(|c| c.0.ip());
        Ok(Caller {
            peer,
            headers: parts.headers.clone(),
        })
    }
}

impl Caller {
    fn origin(&self) -> Option<String> {
        self.headers
            .get(ORIGIN)
            .and_then(|v| v.to_str().ok())
            .map(|s| truncate(s, MAX_ID_LEN))
    }
}

fn forbidden_origin() -> Error {
    Error::Forbidden("Origin not allowed".into())
}

/// The program a bearer token belongs to; 401 per §5 otherwise.
async fn program_from_token(state: &AppState, token: &str) -> Result<Program> {
    state
        .store
        .program_by_token(&hash_token(token))
        .await?
        .ok_or_else(|| Error::Unauthorized("Invalid API key".into()))
}

/// The program of a required bearer API key (sale, refund): 401 per §5 otherwise. As an
/// extractor it runs before the body is read, so a bad key is a 401 whatever the body.
pub struct ApiKey(pub Program);

impl axum::extract::FromRequestParts<AppState> for ApiKey {
    type Rejection = Error;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &AppState,
    ) -> Result<Self> {
        match bearer(&parts.headers) {
            Bearer::Token(t) => program_from_token(state, t).await.map(ApiKey),
            _ => Err(Error::Unauthorized(
                "Missing or invalid Authorization header. Expected: Bearer <API key>".into(),
            )),
        }
    }
}

/// The test-mode success body of §4.1 to §4.3.
fn test_response(message: &str, event_id: i64, program_id: i64) -> Json<Value> {
    Json(json!({
        "success": true,
        "message": message,
        "data": { "eventId": event_id, "programId": program_id, "test_mode": true },
    }))
}

/// Checks that an explicitly named program exists (test mode, browser-mode leads).
async fn existing_program(state: &AppState, id: i64) -> Result<Program> {
    state.store.program(id).await.map_err(|e| match e {
        Error::NotFound(_) => Error::bad_request("Program not found"),
        other => other,
    })
}

fn click_details(state: &AppState, caller: &Caller, f: &Fields) -> Result<ClickDetails> {
    let user_agent = f
        .text("user_agent")?
        .or_else(|| {
            caller
                .headers
                .get(USER_AGENT)
                .and_then(|v| v.to_str().ok())
                .map(|s| truncate(s, 1024))
        })
        .unwrap_or_default();
    let device = state.device_info(&user_agent);
    let geo = state.clients.geo(caller.peer, &caller.headers);
    let short =
        |key: &str| -> Result<Option<String>> { Ok(f.text(key)?.map(|s| truncate(&s, 64))) };
    Ok(ClickDetails {
        session_id: f.text("session_id")?.map(|s| truncate(&s, MAX_ID_LEN)),
        page_url: f.text("page_url")?,
        page_title: f.text("page_title")?,
        referrer_url: f.text("referrer_url")?,
        screen_resolution: short("screen_resolution")?,
        viewport_size: short("viewport_size")?,
        language: short("language")?,
        timezone: short("timezone")?,
        geo_country: geo.country,
        geo_region: geo.region,
        geo_city: geo.city,
        device_type: device.device_type,
        device_os: device.device_os,
        browser_name: device.browser_name,
    })
}

/// `POST /track/click` (§4.1, D4–D6, D11).
async fn click(
    State(state): State<AppState>,
    caller: Caller,
    JsonObject(body): JsonObject,
) -> Result<Response> {
    let f = Fields(&body);
    let affiliate_url = match f.str("affiliate_url") {
        Ok(Some(u)) if !u.trim().is_empty() => u,
        _ => return Err(Error::bad_request("affiliate_url is required")),
    };
    let extra = AdditionalData::from_body(&body)?;
    let aff = extract_aff(affiliate_url);
    let origin = caller.origin();
    let details = click_details(&state, &caller, &f)?;
    let existing_click_id = f.id("existing_click_id", "existing_click_id must be a string")?;

    if extra.test_mode {
        if let Err(e @ crate::domain::attribution::AffError::InvalidUrl) = &aff {
            return Err(Error::bad_request(e.message()));
        }
        let target = match &aff {
            Ok(code) => state.store.link_target(code).await?,
            Err(_) => None,
        };
        let program_id = extra
            .program_id
            .or(target.as_ref().map(|t| t.program_id))
            .ok_or_else(|| {
                Error::bad_request(
                    "Test mode needs additional_data.program_id or a known referral link",
                )
            })?;
        let program = existing_program(&state, program_id).await?;
        if !program.origin_allowed(origin.as_deref()) {
            return Err(forbidden_origin());
        }
        let target = target.filter(|t| t.program_id == program_id);
        let id = state
            .store
            .record_test_click(NewTestClick {
                program_id,
                link_id: target.as_ref().map(|t| t.link_id),
                partner_id: target.as_ref().and_then(|t| t.partner_id),
                click_id: existing_click_id,
                details,
                at: now_ms(),
            })
            .await
            .map_err(|e| e.public_text("Click tracking failed"))?;
        return Ok(test_response("Test click recorded", id, program_id).into_response());
    }

    let aff = aff.map_err(|e| Error::bad_request(e.message()))?;
    let target = state
        .store
        .link_target(&aff)
        .await?
        .ok_or_else(|| Error::bad_request("Referral link not found"))?;
    let (Some(partner_id), Some(partner_code)) = (target.partner_id, target.partner_code.clone())
    else {
        return Err(Error::bad_request("Invalid referral link configuration"));
    };
    if !origin_allowed(&target.allowed_origins, origin.as_deref()) {
        return Err(forbidden_origin());
    }
    if target.link_status == "inactive" {
        return Ok(
            Json(json!({ "success": false, "message": "Referral link is inactive" }))
                .into_response(),
        );
    }
    let click_id = state
        .store
        .record_click(NewClick {
            program_id: target.program_id,
            link_id: target.link_id,
            partner_id,
            existing_click_id,
            details,
            at: now_ms(),
        })
        .await
        .map_err(|e| e.public_text("Click tracking failed"))?;
    Ok(Json(json!({
        "success": true,
        "click_id": click_id,
        "partner_code": partner_code,
        "cookie_window_days": target.cookie_window_days,
    }))
    .into_response())
}

/// `POST /track/lead` (§4.2, D7, D10, D11).
async fn lead(
    State(state): State<AppState>,
    caller: Caller,
    JsonObject(body): JsonObject,
) -> Result<Response> {
    let f = Fields(&body);
    let extra = AdditionalData::from_body(&body)?;
    let click_id = f.id("click_id", "click_id must be a string")?;
    let customer_key = f.id("customer_key", "customer_key must be a string")?;
    let email = f.id("email", "email must be a string")?;
    let session_id = f.text("session_id")?.map(|s| truncate(&s, MAX_ID_LEN));
    let page_url = f.text("page_url")?;
    let origin = caller.origin();
    let token = bearer(&caller.headers);

    if extra.test_mode {
        // No real token needed (§4.2); a valid one names the program when
        // additional_data does not.
        let from_token = match (extra.program_id, token) {
            (None, Bearer::Token(t)) => Some(program_from_token(&state, t).await?.id),
            _ => None,
        };
        let program_id = extra.program_id.or(from_token).ok_or_else(|| {
            Error::bad_request("Test mode needs additional_data.program_id or an API key")
        })?;
        let program = existing_program(&state, program_id).await?;
        if from_token.is_none() && !program.origin_allowed(origin.as_deref()) {
            return Err(forbidden_origin());
        }
        let id = state
            .store
            .record_test_lead(NewTestLead {
                program_id,
                click_id,
                customer_key,
                email,
                session_id,
                page_url,
                event_name: extra.event_name,
                at: now_ms(),
            })
            .await
            .map_err(|e| e.public_text("Lead tracking failed"))?;
        return Ok(test_response("Test lead recorded", id, program_id).into_response());
    }

    let server_program = match token {
        Bearer::Absent => None,
        Bearer::Malformed => {
            return Err(Error::Unauthorized(
                "Invalid Authorization header. Expected: Bearer <API key>".into(),
            ))
        }
        Bearer::Token(t) => Some(program_from_token(&state, t).await?),
    };
    if click_id.is_none() && customer_key.is_none() {
        return Err(Error::bad_request("click_id or customer_key is required"));
    }
    let server_mode = server_program.is_some();
    state
        .store
        .record_lead(NewLead {
            program_id: server_program.map(|p| p.id).or(extra.program_id),
            server_mode,
            origin,
            click_id,
            customer_key,
            email,
            session_id,
            page_url,
            event_name: extra.event_name,
            at: now_ms(),
        })
        .await
        .map_err(|e| e.public_text("Lead tracking failed"))?;
    Ok(Json(json!({ "success": true, "message": "Lead tracked successfully" })).into_response())
}

/// Test-mode transaction ids, `test_txn_<epoch-ms>`, kept unique within the process
/// when two arrive in one millisecond (D10).
fn test_transaction_id() -> String {
    static LAST: AtomicI64 = AtomicI64::new(0);
    let now = now_ms();
    let ms = LAST
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |last| {
            Some(now.max(last + 1))
        })
        .map(|last| now.max(last + 1))
        .unwrap_or(now);
    format!("test_txn_{ms}")
}

fn optional_str(f: &Fields, key: &str) -> Result<Option<String>> {
    f.id(key, &format!("{key} must be a string"))
}

/// `POST /track/sale` (§4.3, D8, D10).
async fn sale(
    State(state): State<AppState>,
    ApiKey(program): ApiKey,
    JsonObject(body): JsonObject,
) -> Result<Response> {
    let f = Fields(&body);
    let extra = AdditionalData::from_body(&body)?;
    const TXN: &str = "transaction_id is required and must be a string";
    let transaction_id = match f.id("transaction_id", TXN)? {
        Some(t) => t,
        None if extra.test_mode => test_transaction_id(),
        None => return Err(Error::bad_request(TXN)),
    };
    const AMOUNT: &str = "amount_cents is required and must be a positive integer";
    let amount_cents = match f.int("amount_cents") {
        Ok(Some(a)) if a > 0 => a,
        _ => return Err(Error::bad_request(AMOUNT)),
    };
    if amount_cents > MAX_AMOUNT_CENTS {
        return Err(Error::bad_request(format!(
            "amount_cents must be at most {MAX_AMOUNT_CENTS}"
        )));
    }
    let currency = match f.str("currency") {
        Ok(None) => program.currency.clone(),
        Ok(Some(c)) => normalize_currency(c)
            .ok_or_else(|| Error::bad_request("currency must be a 3-letter currency code"))?,
        Err(_) => {
            return Err(Error::bad_request(
                "currency must be a 3-letter currency code",
            ))
        }
    };
    let customer_key = optional_str(&f, "customer_key")?;
    let click_id = optional_str(&f, "click_id")?;
    if !extra.test_mode && customer_key.is_none() && click_id.is_none() {
        return Err(Error::bad_request(
            "Customer not found. Provide customer_key or click_id.",
        ));
    }
    let sale_type = match f.str("sale_type") {
        Ok(None) => "payment".to_string(),
        Ok(Some(t @ ("payment" | "subscription"))) => t.to_string(),
        _ => {
            return Err(Error::bad_request(
                "sale_type must be \"payment\" or \"subscription\"",
            ))
        }
    };
    let is_recurring = f.bool("is_recurring")?.unwrap_or(false);
    let metadata = match body.get("metadata") {
        None | Some(Value::Null) => None,
        Some(m @ Value::Object(_)) => Some(m.to_string()),
        Some(_) => return Err(Error::bad_request("metadata must be an object")),
    };
    let new_sale = NewSale {
        program: SaleProgram {
            id: program.id,
            commission: program.commission,
            recurring_commission_months: program.recurring_commission_months,
        },
        transaction_id,
        amount_cents,
        currency,
        customer_key,
        click_id,
        sale_type,
        is_recurring,
        subscription_id: optional_str(&f, "subscription_id")?,
        product_id: optional_str(&f, "product_id")?,
        metadata,
        is_test: extra.test_mode,
        at: now_ms(),
    };
    let outcome = state
        .store
        .record_sale(new_sale)
        .await
        .map_err(|e| e.public_text("Sale tracking failed"))?;
    if extra.test_mode {
        return Ok(
            test_response("Test sale recorded", outcome.sale_id, program.id).into_response(),
        );
    }
    let message = match outcome.commission_id {
        Some(_) => "Sale tracked successfully",
        None => {
            "Sale tracked successfully; no commission: the recurring commission period has ended"
        }
    };
    Ok(Json(json!({
        "success": true,
        "sale_id": outcome.sale_id,
        "commission_id": outcome.commission_id,
        "message": message,
    }))
    .into_response())
}

/// `POST /track/refund` (§4.4, D9).
async fn refund(
    State(state): State<AppState>,
    ApiKey(program): ApiKey,
    JsonObject(body): JsonObject,
) -> Result<Response> {
    let f = Fields(&body);
    let extra = AdditionalData::from_body(&body)?;
    let transaction_id = f
        .id("transaction_id", "transaction_id is required")?
        .ok_or_else(|| Error::bad_request("transaction_id is required"))?;
    let amount_cents = match f.int("refund_amount_cents") {
        Ok(None) => None,
        Ok(Some(a)) if a > 0 => Some(a),
        _ => {
            return Err(Error::bad_request(
                "refund_amount_cents must be a positive integer",
            ))
        }
    };
    let reason = f.text("refund_reason")?.map(|s| truncate(&s, 500));
    let outcome = state
        .store
        .record_refund(NewRefund {
            program_id: program.id,
            transaction_id,
            amount_cents,
            reason,
            is_test: extra.test_mode,
            at: now_ms(),
        })
        .await
        .map_err(|e| e.public_text("Refund tracking failed"))?;
    let mut body = Map::new();
    body.insert("success".into(), json!(true));
    body.insert("status".into(), json!(outcome.status.as_str()));
    body.insert("sale_id".into(), json!(outcome.sale_id));
    body.insert("commission_id".into(), json!(outcome.commission_id));
    body.insert(
        "deduction_amount".into(),
        json!(major_units(outcome.deduction_cents, &outcome.currency)),
    );
    if extra.test_mode {
        body.insert("test_mode".into(), json!(true));
    }
    Ok(Json(Value::Object(body)).into_response())
}

/// CORS preflight of the browser routes (D11). A preflight names no program, so it is
/// answered for origins that some program admits; the request itself is then checked
/// against its own program and refused with 403 when that program does not list it.
async fn preflight(State(state): State<AppState>, headers: HeaderMap) -> Result<Response> {
    let Some(origin) = headers.get(ORIGIN).and_then(|v| v.to_str().ok()) else {
        return Ok(StatusCode::NO_CONTENT.into_response());
    };
    if !state.store.any_program_allows_origin(origin).await? {
        return Err(forbidden_origin());
    }
    let mut response = StatusCode::NO_CONTENT.into_response();
    let h = response.headers_mut();
    h.insert(
        "access-control-allow-methods",
        HeaderValue::from_static("POST, OPTIONS"),
    );
    h.insert(
        "access-control-allow-headers",
        HeaderValue::from_static("content-type, authorization"),
    );
    h.insert("access-control-max-age", HeaderValue::from_static("600"));
    Ok(response)
}

/// Adds `Access-Control-Allow-Origin` for the calling origin to browser-route responses,
/// except when the origin was refused.
async fn browser_cors(req: Request, next: Next) -> Response {
    let origin = req.headers().get(ORIGIN).cloned();
    let is_preflight = req.method() == Method::OPTIONS;
    let mut response = next.run(req).await;
    let refused = response.status() == StatusCode::FORBIDDEN;
    if let (Some(origin), false) = (origin, refused) {
        let h = response.headers_mut();
        h.insert("access-control-allow-origin", origin);
        h.append("vary", HeaderValue::from_static("Origin"));
        if is_preflight {
            h.append(
                "vary",
                HeaderValue::from_static("Access-Control-Request-Headers"),
            );
        }
    }
    response
}
