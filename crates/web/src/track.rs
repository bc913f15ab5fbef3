//! The tracking API: `/api/v1/track/{click,lead,sale,refund}` and the legacy alias under
//! `/api/tracking/`. Each handler reads its request and answers; the use case is the
//! service layer's ([`reftrack_service::track`]).

use axum::extract::{Request, State};
use axum::http::header::{ORIGIN, USER_AGENT};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::options;
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::bearer::{bearer, Bearer};
use super::error::{DuplicateSaleBody, Error, ErrorBody, Result};
use super::extract::{TrackJson, TrackRequest};
use super::fields::{
    nested, truncate, Amount, Currency, Flag, Id, NotARefundAmount, Object, Positive, Required,
    SaleType, Text, AMOUNT_REQUIRED, MAX_ID_LEN,
};
use super::{rate_limit, AppState};
use reftrack_domain::attribution::extract_aff;
use reftrack_domain::money::major_units;
use reftrack_service::track::{
    ClickCommand, ClickOutcome, LeadCommand, RefundCommand, SaleCommand,
};
use reftrack_store::{ClickDetails, Program};

/// Routes of the tracking API, mounted under `/api/v1/track` and `/api/tracking`.
pub fn router() -> OpenApiRouter<AppState> {
    let clicks = OpenApiRouter::new()
        .routes(routes!(click))
        .route("/click", options(preflight))
        .route_layer(middleware::from_fn(rate_limit::clicks));
    let leads = OpenApiRouter::new()
        .routes(routes!(lead))
        .route("/lead", options(preflight))
        .route_layer(middleware::from_fn(rate_limit::browser_leads));
    let browser = clicks.merge(leads).layer(middleware::from_fn(browser_cors));
    let server = OpenApiRouter::new()
        .routes(routes!(sale))
        .routes(routes!(refund));
    browser.merge(server)
}

/// The test-mode body of click, lead and sale.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TestModeResponse {
    /// Always `true`.
    pub success: bool,
    pub message: String,
    pub data: TestModeData,
}

/// What a test-mode call stored.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TestModeData {
    /// Id of the stored test event.
    #[serde(rename = "eventId")]
    pub event_id: i64,
    #[serde(rename = "programId")]
    pub program_id: i64,
    /// Always `true`.
    pub test_mode: bool,
}

/// A tracked click.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ClickTracked {
    /// Always `true`.
    pub success: bool,
    /// Store it in the `tracker_click_id` cookie and send it with the lead.
    #[schema(example = "cust_17953290031505782117260909434975_1795329003150")]
    pub click_id: String,
    pub partner_code: String,
    pub cookie_window_days: i64,
}

/// A click on an inactive link: nothing is recorded.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ClickRefused {
    /// Always `false`.
    pub success: bool,
    pub message: String,
}

/// The answers of `POST /track/click`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum ClickResponse {
    Tracked(ClickTracked),
    Inactive(ClickRefused),
    Test(TestModeResponse),
}

/// A plain success with a message (lead).
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Tracked {
    /// Always `true`.
    pub success: bool,
    pub message: String,
}

/// The answers of `POST /track/lead`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum LeadResponse {
    Tracked(Tracked),
    Test(TestModeResponse),
}

/// A recorded sale.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SaleTracked {
    /// Always `true`.
    pub success: bool,
    pub sale_id: i64,
    /// `null` when the sale earns no commission: its partner is not approved in the
    /// program, or a renewal is past the recurring limit (`message` says which).
    pub commission_id: Option<i64>,
    pub message: String,
}

/// The answers of `POST /track/sale`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum SaleResponse {
    Tracked(SaleTracked),
    Test(TestModeResponse),
}

/// What a refund did.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RefundResponse {
    /// Always `true`.
    pub success: bool,
    /// `reversed` (fully refunded), `refunded` (partial), `skipped` (nothing left),
    /// `no_commission` (the sale had none).
    #[schema(example = "refunded")]
    pub status: String,
    pub sale_id: i64,
    pub commission_id: Option<i64>,
    /// Commission taken back by this refund, in major units with two decimals.
    pub deduction_amount: f64,
    /// Present when the sale's commission was already paid: that commission stays
    /// `paid`, and this new clawback commission (a negative amount) takes the refund's
    /// share back from the partner's next payout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clawback_commission_id: Option<i64>,
    /// Present and `true` for test-mode refunds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test_mode: Option<bool>,
}

/// `additional_data` of a tracking request.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct AdditionalData {
    /// Store a test event (`is_test: true`) that touches no real attribution or figure.
    #[schema(value_type = Option<bool>)]
    #[serde(default)]
    pub test_mode: Flag,
    /// Program of a test event, or of a browser-mode lead sent with only `customer_key`.
    #[schema(value_type = Option<i64>, minimum = 1)]
    #[serde(default)]
    pub program_id: Positive,
    /// Name of the lead event (lead only).
    #[schema(value_type = Option<String>)]
    #[serde(default)]
    pub event_name: Text,
}

impl AdditionalData {
    fn test_mode(&self) -> bool {
        self.test_mode.0.unwrap_or(false)
    }
}

/// Body of `POST /track/click`.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct ClickRequest {
    /// Full landing URL including the `aff` query parameter.
    #[schema(value_type = String, required = true, example = "https://shop.example.com/?aff=alice", min_length = 1)]
    #[serde(default)]
    pub affiliate_url: Required,
    #[schema(value_type = Option<String>)]
    #[serde(default)]
    pub page_url: Text,
    #[schema(value_type = Option<String>)]
    #[serde(default)]
    pub page_title: Text,
    #[schema(value_type = Option<String>)]
    #[serde(default)]
    pub referrer_url: Text,
    #[schema(value_type = Option<String>)]
    #[serde(default)]
    pub session_id: Text,
    /// Falls back to the `User-Agent` header.
    #[schema(value_type = Option<String>)]
    #[serde(default)]
    pub user_agent: Text,
    /// `<width>x<height>`.
    #[schema(value_type = Option<String>)]
    #[serde(default)]
    pub screen_resolution: Text,
    /// `<width>x<height>`.
    #[schema(value_type = Option<String>)]
    #[serde(default)]
    pub viewport_size: Text,
    #[schema(value_type = Option<String>)]
    #[serde(default)]
    pub language: Text,
    /// IANA time zone name.
    #[schema(value_type = Option<String>)]
    #[serde(default)]
    pub timezone: Text,
    /// A click id issued before: the same customer is reused (last touch).
    #[schema(value_type = Option<String>, max_length = 255)]
    #[serde(default)]
    pub existing_click_id: Id,
    #[serde(default, deserialize_with = "nested")]
    pub additional_data: Option<AdditionalData>,
}

impl TrackRequest for ClickRequest {}

/// Body of `POST /track/lead`. Outside test mode, `click_id` or `customer_key` is required.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct LeadRequest {
    /// Value of the `tracker_click_id` cookie.
    #[schema(value_type = Option<String>, max_length = 255)]
    #[serde(default)]
    pub click_id: Id,
    /// Your own stable id of the customer; use the same one at sale time.
    #[schema(value_type = Option<String>, max_length = 255)]
    #[serde(default)]
    pub customer_key: Id,
    #[schema(value_type = Option<String>, max_length = 255)]
    #[serde(default)]
    pub email: Id,
    #[schema(value_type = Option<String>)]
    #[serde(default)]
    pub session_id: Text,
    #[schema(value_type = Option<String>)]
    #[serde(default)]
    pub page_url: Text,
    #[serde(default, deserialize_with = "nested")]
    pub additional_data: Option<AdditionalData>,
}

impl TrackRequest for LeadRequest {}

/// Body of `POST /track/sale`. `customer_key` or `click_id` must resolve a customer, or
/// `coupon_code` name an active coupon.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct SaleRequest {
    /// Idempotency key, globally unique (test and real sales share it). Required, except
    /// in test mode, where one is made when it is left out.
    #[schema(value_type = Option<String>, example = "pi_1001", min_length = 1, max_length = 255)]
    #[serde(default)]
    pub transaction_id: Id,
    /// Positive integer in the smallest currency unit, at most 10^12.
    #[schema(value_type = i64, required = true, example = 4999, minimum = 1, maximum = 1_000_000_000_000_i64)]
    #[serde(default)]
    pub amount_cents: Amount,
    #[schema(value_type = Option<String>, max_length = 255)]
    #[serde(default)]
    pub customer_key: Id,
    #[schema(value_type = Option<String>, max_length = 255)]
    #[serde(default)]
    pub click_id: Id,
    /// 3-letter code; the program's currency when omitted.
    #[schema(value_type = Option<String>, pattern = "^[A-Za-z]{3}$")]
    #[serde(default)]
    pub currency: Currency,
    /// `payment` (default) or `subscription`.
    #[schema(value_type = Option<String>, pattern = "^(payment|subscription)$")]
    #[serde(default)]
    pub sale_type: SaleType,
    #[schema(value_type = Option<bool>)]
    #[serde(default)]
    pub is_recurring: Flag,
    #[schema(value_type = Option<String>, max_length = 255)]
    #[serde(default)]
    pub subscription_id: Id,
    #[schema(value_type = Option<String>, max_length = 255)]
    #[serde(default)]
    pub product_id: Id,
    /// Stored with the sale.
    #[schema(value_type = Option<Object>)]
    #[serde(default)]
    pub metadata: Object,
    /// A coupon code the customer used (any case). When neither `customer_key` nor
    /// `click_id` finds a customer, the sale is attributed to the partner of the link
    /// holding this code; a click attribution wins.
    #[schema(value_type = Option<String>, max_length = 255, example = "PODCAST20")]
    #[serde(default)]
    pub coupon_code: Id,
    /// The customer's email: a sale whose customer has the partner's email (case and
    /// `+tag` ignored) is flagged `self_referral` and waits for an owner's approval.
    #[schema(value_type = Option<String>, max_length = 255)]
    #[serde(default)]
    pub customer_email: Id,
    #[serde(default, deserialize_with = "nested")]
    pub additional_data: Option<AdditionalData>,
}

/// The text of a missing or malformed `transaction_id` of a sale.
const SALE_TRANSACTION_ID: &str = "transaction_id is required and must be a string";

impl TrackRequest for SaleRequest {
    fn error_text(field: &str, text: String) -> String {
        if field == "transaction_id" && text.ends_with("must be a string") {
            SALE_TRANSACTION_ID.into()
        } else {
            text
        }
    }
}

/// Body of `POST /track/refund`.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct RefundRequest {
    /// The `transaction_id` of the sale.
    #[schema(value_type = String, required = true, min_length = 1, max_length = 255)]
    #[serde(default)]
    pub transaction_id: Id,
    /// Partial refund; omitted (or equal to the sale amount): everything left.
    #[schema(value_type = Option<i64>, minimum = 1)]
    #[serde(default)]
    pub refund_amount_cents: Positive,
    #[schema(value_type = Option<String>)]
    #[serde(default)]
    pub refund_reason: Text,
    /// Your id of this refund (a payment processor's refund id, say): a refund sent
    /// again under the same id changes nothing and answers `skipped`, so a retried
    /// partial refund is applied once. Another amount under a used id: 409.
    #[schema(value_type = Option<String>, max_length = 255)]
    #[serde(default)]
    pub refund_id: Id,
    /// Not a refund field (the sale's): refused, since ignoring it would refund
    /// everything left.
    #[schema(ignore)]
    #[serde(default)]
    pub amount_cents: NotARefundAmount,
    /// Not a refund field: refused, as `amount_cents`.
    #[schema(ignore)]
    #[serde(default)]
    pub amount: NotARefundAmount,
    #[serde(default, deserialize_with = "nested")]
    pub additional_data: Option<AdditionalData>,
}

/// The text of a missing or malformed `transaction_id` of a refund.
const REFUND_TRANSACTION_ID: &str = "transaction_id is required";

impl TrackRequest for RefundRequest {
    fn error_text(field: &str, text: String) -> String {
        if field == "transaction_id" && text.ends_with("must be a string") {
            REFUND_TRANSACTION_ID.into()
        } else {
            text
        }
    }
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

    /// A header's value as text, cut to `max` bytes.
    pub(super) fn header(&self, name: HeaderName, max: usize) -> Option<String> {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(|s| truncate(s, max))
    }

    /// The client's IP: the peer, or what a trusted proxy says it forwards for.
    pub(super) fn client_ip(&self, state: &AppState) -> Option<std::net::IpAddr> {
        state.clients.client_ip(self.peer, &self.headers)
    }

    /// What the server derives of a visit: device, OS and browser of `user_agent`, and
    /// the client's geo.
    pub(super) fn derived_details(&self, state: &AppState, user_agent: &str) -> ClickDetails {
        let device = state.app.device_info(user_agent);
        let geo = state.clients.geo(self.peer, &self.headers);
        ClickDetails {
            geo_country: geo.country,
            geo_region: geo.region,
            geo_city: geo.city,
            device_type: device.device_type,
            device_os: device.device_os,
            browser_name: device.browser_name,
            ..ClickDetails::default()
        }
    }
}

/// Longest user agent read from a header.
pub(super) const MAX_USER_AGENT_LEN: usize = 1024;

fn forbidden_origin() -> Error {
    Error::Forbidden("Origin not allowed".into())
}

/// The program a bearer token belongs to; 401 otherwise.
async fn program_from_token(state: &AppState, token: &str) -> Result<Program> {
    state
        .app
        .program_by_token(token)
        .await?
        .ok_or_else(|| Error::Unauthorized("Invalid API key".into()))
}

/// The program of a required bearer API key (sale, refund): 401 otherwise. As an
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
async fn click(
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
            state_header = Some(super::redirect::click_state(committed));
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
        r.headers_mut().insert(super::redirect::CLICK_STATE, value);
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
async fn lead(
    State(state): State<AppState>,
    caller: Caller,
    TrackJson(body): TrackJson<LeadRequest>,
) -> Result<Json<LeadResponse>> {
    let extra = body.additional_data.unwrap_or_default();
    let origin = caller.origin();
    let token = bearer(&caller.headers);
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
async fn sale(
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
async fn refund(
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

/// CORS preflight of the browser routes. A preflight names no program, so it is
/// answered for origins that some program admits; the request itself is then checked
/// against its own program and refused with 403 when that program does not list it.
async fn preflight(State(state): State<AppState>, headers: HeaderMap) -> Result<Response> {
    let Some(origin) = headers.get(ORIGIN).and_then(|v| v.to_str().ok()) else {
        return Ok(StatusCode::NO_CONTENT.into_response());
    };
    if !state.app.any_program_allows_origin(origin).await? {
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
