//! The HTTP layer's one error type and its mapping to responses.
//!
//! Every failure a handler can meet ends up as an [`Error`]: the service layer's errors
//! are mapped here, once ([`From<app::Error>`]). Client errors carry the exact texts of
//! the tracking interface; internal errors are logged with their cause and answered with
//! a fixed public text, so no internal detail leaves the process.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use reftrack_service as app;

/// Result alias of the handlers.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The body of every error response: `{"error": "..."}`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(example = json!({"error": "amount_cents is required and must be a positive integer"}))]
pub struct ErrorBody {
    /// Human-readable error text.
    pub error: String,
}

/// The body of the 409 of a sale whose `transaction_id` is already recorded: the error,
/// and the earlier sale when it is of the caller's program.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DuplicateSaleBody {
    /// `Duplicate transaction_id. This sale has already been recorded.`
    pub error: String,
    /// The earlier sale's id; absent when another program recorded the transaction id
    /// (as are the next two fields).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sale_id: Option<i64>,
    /// Its commission's id, null when it earned none.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<i64>)]
    pub commission_id: Option<Option<i64>>,
    /// Whether it was recorded in test mode: a test sale uses its transaction id up too.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test_mode: Option<bool>,
}

impl DuplicateSaleBody {
    fn of(error: String, recorded: Option<app::RecordedSale>) -> Self {
        DuplicateSaleBody {
            error,
            sale_id: recorded.map(|r| r.sale_id),
            commission_id: recorded.map(|r| r.commission_id),
            test_mode: recorded.map(|r| r.test_mode),
        }
    }
}

/// The 401 of a sign-in: `{"error": "Invalid email or password"}` (or a wrong two-factor
/// code), or, when the password was right but a two-factor code is needed,
/// `{"error": "Two-factor code required", "two_factor_required": true}`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct TwoFactorRequiredBody {
    /// What went wrong.
    pub error: String,
    /// `true` when only the two-factor code is missing: send the login again with `code`
    /// or `recovery_code`. Absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub two_factor_required: Option<bool>,
}

/// Everything that can go wrong while serving a request.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// 400: the request is invalid; the text is shown to the client.
    #[error("{0}")]
    BadRequest(String),
    /// 401: missing or invalid credentials.
    #[error("{0}")]
    Unauthorized(String),
    /// 401: the password was right; the account needs a two-factor code as well.
    #[error("{}", app::two_factor::CODE_REQUIRED)]
    TwoFactorRequired,
    /// 403: authenticated but not allowed.
    #[error("{0}")]
    Forbidden(String),
    /// 404: the named resource does not exist.
    #[error("{0}")]
    NotFound(String),
    /// 405: the route exists but not for this method.
    #[error("Method not allowed")]
    MethodNotAllowed,
    /// 409: a unique value is already taken.
    #[error("{0}")]
    Conflict(String),
    /// 409: a sale's `transaction_id` is already recorded; the earlier sale of the
    /// caller's program, when it is one.
    #[error("{}", app::error::DUPLICATE_SALE)]
    DuplicateSale(Option<app::RecordedSale>),
    /// 413: the body is over the limit.
    #[error("Request body too large (limit 64 KiB)")]
    PayloadTooLarge,
    /// 415: the body is not JSON.
    #[error("Content-Type must be application/json")]
    UnsupportedMediaType,
    /// 429: the caller sent too many requests (or failed logins); retry after this many
    /// seconds, which the response also gives in `Retry-After`.
    #[error("Too many requests; retry after {0} s")]
    TooManyRequests(u64),
    /// 503: the database cannot be reached or is overloaded right now.
    #[error("Service temporarily unavailable")]
    Unavailable(#[source] anyhow::Error),
    /// 500: anything else. The first field is the public text, the cause is only logged.
    #[error("{0}")]
    Internal(&'static str, #[source] anyhow::Error),
}

impl Error {
    /// Shorthand for a 400 with the given text.
    pub fn bad_request(msg: impl Into<String>) -> Self {
        Error::BadRequest(msg.into())
    }

    /// Shorthand for a 404 with the given text.
    pub fn not_found(msg: impl Into<String>) -> Self {
        Error::NotFound(msg.into())
    }

    /// Replaces the public text of an internal error with an endpoint's own
    /// (`Click tracking failed`, ...); client errors pass unchanged.
    pub fn public_text(self, text: &'static str) -> Self {
        match self {
            Error::Internal(_, cause) => Error::Internal(text, cause),
            other => other,
        }
    }

    /// The HTTP status of this error.
    pub fn status(&self) -> StatusCode {
        match self {
            Error::BadRequest(_) => StatusCode::BAD_REQUEST,
            Error::Unauthorized(_) | Error::TwoFactorRequired => StatusCode::UNAUTHORIZED,
            Error::Forbidden(_) => StatusCode::FORBIDDEN,
            Error::NotFound(_) => StatusCode::NOT_FOUND,
            Error::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Error::Conflict(_) | Error::DuplicateSale(_) => StatusCode::CONFLICT,
            Error::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Error::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Error::TooManyRequests(_) => StatusCode::TOO_MANY_REQUESTS,
            Error::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            Error::Internal(..) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl From<app::Error> for Error {
    fn from(e: app::Error) -> Self {
        match e {
            app::Error::Invalid(text) => Error::BadRequest(text),
            app::Error::Unauthorized(text) => Error::Unauthorized(text),
            app::Error::TwoFactorRequired => Error::TwoFactorRequired,
            app::Error::Forbidden(text) => Error::Forbidden(text),
            app::Error::NotFound(text) => Error::NotFound(text),
            app::Error::Conflict(text) => Error::Conflict(text),
            app::Error::DuplicateSale(recorded) => Error::DuplicateSale(recorded),
            app::Error::Unavailable(cause) => Error::Unavailable(cause),
            app::Error::Internal(text, cause) => Error::Internal(text, cause),
            app::Error::Retry => Error::Unavailable(anyhow::anyhow!(
                "a write to run again alone reached the edge"
            )),
        }
    }
}

impl From<anyhow::Error> for Error {
    fn from(e: anyhow::Error) -> Self {
        Error::Internal("Internal server error", e)
    }
}

/// Marks a response that answers [`Error::Unavailable`], so that middleware can tell a
/// database outage from any other 503.
#[derive(Debug, Clone, Copy)]
pub struct DatabaseUnavailable;

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let status = self.status();
        match &self {
            Error::Internal(text, cause) => tracing::error!(error = ?cause, "{text}"),
            Error::Unavailable(cause) => tracing::warn!(error = %cause, "database unavailable"),
            _ => {}
        }
        let retry_after = match &self {
            Error::TooManyRequests(secs) => Some(secs.max(&1).to_string()),
            Error::Unavailable(_) => Some("1".to_string()),
            _ => None,
        };
        let unavailable = matches!(self, Error::Unavailable(_));
        let error = self.to_string();
        let mut response = match self {
            Error::DuplicateSale(recorded) => {
                (status, axum::Json(DuplicateSaleBody::of(error, recorded))).into_response()
            }
            Error::TwoFactorRequired => (
                status,
                axum::Json(TwoFactorRequiredBody {
                    error,
                    two_factor_required: Some(true),
                }),
            )
                .into_response(),
            _ => (status, axum::Json(ErrorBody { error })).into_response(),
        };
        if let Some(secs) = retry_after.and_then(|s| s.parse().ok()) {
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, secs);
        }
        if unavailable {
            response.extensions_mut().insert(DatabaseUnavailable);
        }
        response
    }
}
