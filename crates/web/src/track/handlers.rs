//! The handlers of the tracking API: click, lead, sale and refund, each reading its
//! request and calling the service layer.

use axum::extract::State;
use axum::http::header::USER_AGENT;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::Value;

use super::caller::{program_from_token, ApiKey, Caller, MAX_USER_AGENT_LEN};
use super::requests::{
    ClickRequest, LeadRequest, RefundRequest, SaleRequest, REFUND_TRANSACTION_ID,
    SALE_TRANSACTION_ID,
};
use super::responses::{
    ClickRefused, ClickResponse, ClickTracked, LeadResponse, RefundResponse, SaleResponse,
    SaleTracked, TestModeData, TestModeResponse, Tracked,
};
use crate::bearer::Bearer;
use crate::error::{DuplicateSaleBody, Error, ErrorBody, Result};
use crate::extract::TrackJson;
use crate::fields::{AMOUNT_REQUIRED, MAX_ID_LEN};
use crate::AppState;
use reftrack_domain::attribution::extract_aff;
use reftrack_domain::money::major_units;
use reftrack_service::tracking::{
    ClickCommand, ClickOutcome, LeadCommand, RefundCommand, SaleCommand,
};
use reftrack_store::ClickDetails;

/// The test-mode success body of click, lead and sale.
fn test_response(message: &str, event_id: i64, program_id: i64) -> TestModeResponse {
    TestModeResponse {
        success: true,
        message: message.into(),
        data: TestModeData {
            event_id,
            program_id,
            test_mode: true,
        },
    }
}

/// What the click listing stores of a visit: the request's fields, cut to size, with
/// device and geo data derived on the server.
fn click_details(state: &AppState, caller: &Caller, b: ClickRequest) -> ClickDetails {
    let user_agent = b
        .user_agent
        .0
        .or_else(|| caller.header(USER_AGENT, MAX_USER_AGENT_LEN))
        .unwrap_or_default();
    ClickDetails {
        session_id: b.session_id.cut(MAX_ID_LEN),
        page_url: b.page_url.0,
        page_title: b.page_title.0,
        referrer_url: b.referrer_url.0,
        screen_resolution: b.screen_resolution.cut(64),
        viewport_size: b.viewport_size.cut(64),
        language: b.language.cut(64),
        timezone: b.timezone.cut(64),
        ..caller.derived_details(state, &user_agent)
    }
}

/// Track a click on a referral link.
///
/// Resolves the link from `aff`, reuses (`existing_click_id`, last touch) or
/// creates the customer, stores the click with server-side device and geo data and counts
/// it. No credentials: the link is the credential; browser calls need an allowed origin.
#[utoipa::path(
    post,
    path = "/click",
    tag = "tracking",
    request_body = ClickRequest,
    responses(
        (status = 200, description = "Tracked; `success: false` for an inactive link; the test-mode body in test mode", body = ClickResponse, headers(("Reftrack-Click" = String, description = "For a tracked click: `committed`, or `queued` when the server answers clicks after a bounded wait (`--click-wait-ms`) and it ran out before the commit"))),
        (status = 400, description = "Invalid field or unknown referral link", body = ErrorBody),
        (status = 403, description = "Origin not allowed", body = ErrorBody),
        (status = 429, description = "Too many requests from this client; see Retry-After", body = ErrorBody),
    ),
)]
pub(super) async fn click(
    State(state): State<AppState>,
    caller: Caller,
    TrackJson(mut body): TrackJson<ClickRequest>,
) -> Result<Response> {
    let Some(affiliate_url) = body.affiliate_url.0.take() else {
        return Err(Error::bad_request("affiliate_url is required"));
    };
    let extra = body.additional_data.take().unwrap_or_default();
    let aff = extract_aff(&affiliate_url);
    let origin = caller.origin();
    let existing_click_id = std::mem::take(&mut body.existing_click_id).0;
    let details = click_details(&state, &caller, body);
    let outcome = state
        .app
        .track_click(ClickCommand {
            aff,
            origin,
            details,
            existing_click_id,
            test_mode: extra.test_mode(),
            program_id: extra.program_id.0,
            redirect: false,
        })
        .await?;
    let mut state_header = None;
    let body = Json(match outcome {
        ClickOutcome::Tracked {
            click_id,
            partner_code,
            cookie_window_days,
            committed,
        } => {
            state_header = Some(crate::redirect::click_state(committed));
            ClickResponse::Tracked(ClickTracked {
                success: true,
                click_id,
                partner_code,
                cookie_window_days,
            })
        }
        ClickOutcome::Inactive => ClickResponse::Inactive(ClickRefused {
            success: false,
            message: "Referral link is inactive".into(),
        }),
        ClickOutcome::Test {
            event_id,
            program_id,
        } => ClickResponse::Test(test_response("Test click recorded", event_id, program_id)),
    });
    let mut r = body.into_response();
    if let Some(value) = state_header {
        r.headers_mut().insert(crate::redirect::CLICK_STATE, value);
    }
    Ok(r)
}

/// Track a signup (lead).
///
/// Server mode with the program's API key, or browser mode without one (the
/// click id proves attribution; the origin must be allowed). Moves a `click` customer to
/// `lead`; with only `customer_key` and no known customer, stores an unattributed lead.
#[utoipa::path(
    post,
    path = "/lead",
    tag = "tracking",
    request_body = LeadRequest,
    security((), ("api_key" = [])),
    responses(
        (status = 200, description = "Lead recorded (or the test-mode body)", body = LeadResponse),
        (status = 400, description = "Invalid field, unknown customer, customer of another program, or status cannot move to lead", body = ErrorBody),
        (status = 401, description = "Authorization header present but invalid", body = ErrorBody),
        (status = 403, description = "Origin not allowed (browser mode)", body = ErrorBody),
        (status = 429, description = "Too many browser-mode requests from this client; see Retry-After", body = ErrorBody),
    ),
)]
pub(super) async fn lead(
    State(state): State<AppState>,
    caller: Caller,
    TrackJson(body): TrackJson<LeadRequest>,
) -> Result<Json<LeadResponse>> {
    let extra = body.additional_data.unwrap_or_default();
    let origin = caller.origin();
    let token = caller.bearer();
    let test_mode = extra.test_mode();
    let mut command = LeadCommand {
        server_program: None,
        program_id: extra.program_id.0,
        origin,
        click_id: body.click_id.0,
        customer_key: body.customer_key.0,
        email: body.email.0,
        session_id: body.session_id.cut(MAX_ID_LEN),
        page_url: body.page_url.0,
        event_name: extra.event_name.cut(MAX_ID_LEN),
    };
    if test_mode {
        // No real token needed; a valid one names the program when additional_data
        // does not.
        let by_key = match (command.program_id, token) {
            (None, Bearer::Token(t)) => {
                command.server_program = Some(program_from_token(&state, t).await?);
                true
            }
            _ => false,
        };
        let (id, program_id) = state.app.track_test_lead(command, by_key).await?;
        return Ok(Json(LeadResponse::Test(test_response(
            "Test lead recorded",
            id,
            program_id,
        ))));
    }
    command.server_program = match token {
        Bearer::Absent => None,
        Bearer::Malformed => {
            return Err(Error::Unauthorized(
                "Invalid Authorization header. Expected: Bearer <API key>".into(),
            ))
        }
        Bearer::Token(t) => Some(program_from_token(&state, t).await?),
    };
    state.app.track_lead(command).await?;
    Ok(Json(LeadResponse::Tracked(Tracked {
        success: true,
        message: "Lead tracked successfully".into(),
    })))
}

/// Record a sale and its commission.
///
/// Resolves the customer by `customer_key`, then `click_id`, else the link of
/// `coupon_code`; stores the sale,
/// the commission of the program's rule, the customer's conversion and the figures in one
/// transaction. A `transaction_id` is accepted once, across all programs.
#[utoipa::path(
    post,
    path = "/sale",
    tag = "tracking",
    request_body = SaleRequest,
    security(("api_key" = [])),
    responses(
        (status = 200, description = "Sale recorded (or the test-mode body)", body = SaleResponse),
        (status = 400, description = "Invalid field, customer or coupon code not found, or no attribution", body = ErrorBody),
        (status = 401, description = "Missing or invalid API key", body = ErrorBody),
        (status = 409, description = "Duplicate transaction_id: the earlier sale when it is of this program", body = DuplicateSaleBody),
    ),
)]
pub(super) async fn sale(
    State(state): State<AppState>,
    ApiKey(program): ApiKey,
    TrackJson(body): TrackJson<SaleRequest>,
) -> Result<Json<SaleResponse>> {
    let test_mode = body.additional_data.unwrap_or_default().test_mode();
    if body.transaction_id.0.is_none() && !test_mode {
        return Err(Error::bad_request(SALE_TRANSACTION_ID));
    }
    let Some(amount_cents) = body.amount_cents.0 else {
        return Err(Error::bad_request(
            AMOUNT_REQUIRED.replace("{field}", "amount_cents"),
        ));
    };
    let command = SaleCommand {
        transaction_id: body.transaction_id.0,
        amount_cents,
        currency: body.currency.0,
        customer_key: body.customer_key.0,
        click_id: body.click_id.0,
        sale_type: body.sale_type.as_str().into(),
        is_recurring: body.is_recurring.0.unwrap_or(false),
        subscription_id: body.subscription_id.0,
        product_id: body.product_id.0,
        metadata: body.metadata.0.map(|m| Value::Object(m).to_string()),
        test_mode,
        coupon_code: body.coupon_code.0,
        promotion_code: None,
        customer_email: body.customer_email.0,
    };
    let outcome = state.app.track_sale(&program, command).await?;
    if test_mode {
        return Ok(Json(SaleResponse::Test(test_response(
            "Test sale recorded",
            outcome.sale_id,
            program.id,
        ))));
    }
    let message = match outcome.unearned {
        None => "Sale tracked successfully".to_string(),
        Some(why) => format!("Sale tracked successfully; no commission: {}", why.reason()),
    };
    Ok(Json(SaleResponse::Tracked(SaleTracked {
        success: true,
        sale_id: outcome.sale_id,
        commission_id: outcome.commission_id,
        message,
    })))
}

/// Refund a sale, fully or partly.
///
/// Reverses the commission of the program's sale in proportion; a repeated
/// full refund is harmless (`skipped`).
#[utoipa::path(
    post,
    path = "/refund",
    tag = "tracking",
    request_body = RefundRequest,
    security(("api_key" = [])),
    responses(
        (status = 200, description = "Refund applied", body = RefundResponse),
        (status = 400, description = "Invalid field or amount over what is left", body = ErrorBody),
        (status = 401, description = "Missing or invalid API key", body = ErrorBody),
        (status = 404, description = "No sale with this transaction_id in the program", body = ErrorBody),
        (status = 409, description = "The refund_id was used for another amount of the sale", body = ErrorBody),
    ),
)]
pub(super) async fn refund(
    State(state): State<AppState>,
    ApiKey(program): ApiKey,
    TrackJson(body): TrackJson<RefundRequest>,
) -> Result<Json<RefundResponse>> {
    let test_mode = body.additional_data.unwrap_or_default().test_mode();
    let Some(transaction_id) = body.transaction_id.0 else {
        return Err(Error::bad_request(REFUND_TRANSACTION_ID));
    };
    if let Some(refused) =
        (body.amount_cents.refusal("amount_cents")).or_else(|| body.amount.refusal("amount"))
    {
        return Err(Error::bad_request(refused));
    }
    let amount_cents = body.refund_amount_cents.0;
    let reason = body.refund_reason.cut(500);
    let outcome = state
        .app
        .track_refund(
            &program,
            RefundCommand {
                transaction_id,
                amount_cents,
                reason,
                refund_id: body.refund_id.0,
                test_mode,
            },
        )
        .await?;
    Ok(Json(RefundResponse {
        success: true,
        status: outcome.status.as_str().into(),
        sale_id: outcome.sale_id,
        commission_id: outcome.commission_id,
        deduction_amount: major_units(outcome.deduction_cents, &outcome.currency),
        clawback_commission_id: outcome.clawback_id,
        test_mode: test_mode.then_some(true),
    }))
}
