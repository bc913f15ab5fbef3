//! The service layer's error: what went wrong, in words a client may read. The HTTP layer
//! maps each kind to a status once; internal causes are logged there, never sent.

use crate::accounts::MAX_PARTNER_LINKS;
use reftrack_store::{RecordedSale, StoreError};

/// A use case's failure.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The input breaks a rule (HTTP 400).
    #[error("{0}")]
    Invalid(String),
    /// No or wrong credentials (HTTP 401).
    #[error("{0}")]
    Unauthorized(String),
    /// The password was right, but the account signs in with a second factor and none
    /// was sent (HTTP 401, with `two_factor_required`).
    #[error("{}", crate::two_factor::CODE_REQUIRED)]
    TwoFactorRequired,
    /// Credentials that do not allow this (HTTP 403).
    #[error("{0}")]
    Forbidden(String),
    /// The named record does not exist (HTTP 404).
    #[error("{0}")]
    NotFound(String),
    /// The change would duplicate a record (HTTP 409).
    #[error("{0}")]
    Conflict(String),
    /// The sale's `transaction_id` is already recorded (HTTP 409), with the earlier
    /// sale when it is of the caller's program.
    #[error("{DUPLICATE_SALE}")]
    DuplicateSale(Option<RecordedSale>),
    /// The database cannot be reached now; retrying later may work (HTTP 503).
    #[error("Service temporarily unavailable")]
    Unavailable(#[source] anyhow::Error),
    /// A fault of the service; the text is what the client sees, the cause is logged.
    #[error("{0}")]
    Internal(&'static str, #[source] anyhow::Error),
    /// The write's group-commit batch failed through another write and this one must run
    /// again alone ([`StoreError::Retry`]); the service layer does that, so a client never
    /// reads it (HTTP 503 if one did).
    #[error("Service temporarily unavailable")]
    Retry,
}

/// The answer to a write that would take a counter or total past the largest whole number
/// the database holds.
pub const TOO_LARGE: &str =
    "This would take the program's totals past the largest amount Reftrack can store";

/// The answer to a sale whose `transaction_id` is already recorded.
pub const DUPLICATE_SALE: &str = "Duplicate transaction_id. This sale has already been recorded.";

/// A use case's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An [`Error::Invalid`].
    pub fn invalid(text: impl Into<String>) -> Self {
        Error::Invalid(text.into())
    }

    /// The same error, with `text` as the client's words for an internal fault.
    pub fn public_text(self, text: &'static str) -> Self {
        match self {
            Error::Internal(_, cause) => Error::Internal(text, cause),
            other => other,
        }
    }
}

/// The texts of the checks that refused their field, in order; a field left out
/// (`None`) or accepted adds none. For a form that shows every wrong field at once.
pub fn refusals(checks: impl IntoIterator<Item = Option<Result<()>>>) -> Vec<String> {
    checks
        .into_iter()
        .flatten()
        .filter_map(|checked| match checked {
            Err(Error::Invalid(text)) => Some(text),
            _ => None,
        })
        .collect()
}

/// What a client reads when a record the store names is missing.
fn not_found_text(what: &str) -> String {
    let mut text = what.to_string();
    if let Some(first) = text.get_mut(..1) {
        first.make_ascii_uppercase();
    }
    format!("{text} not found")
}

/// What a client reads when a change would duplicate the record the store names.
fn conflict_text(what: &str) -> String {
    match what {
        "partner code" => "A partner with this code already exists".into(),
        "partner_program" => "This partner is already in this program".into(),
        "short_link" => "A link with this short_link already exists".into(),
        "email" => "A user with this email already exists".into(),
        "membership" => "This user is already a member of this workspace".into(),
        "active links" => {
            format!("You already have {MAX_PARTNER_LINKS} active links in this program")
        }
        "coupon code" => "A coupon with this code already exists in this program".into(),
        "stripe_promotion_code" => {
            "A coupon with this stripe_promotion_code already exists in this program".into()
        }
        "group name" => "A group with this name already exists in this program".into(),
        "default group" => "The default group cannot be deleted".into(),
        "group with partners" => {
            "The group still has partners: move them to another group first".into()
        }
        "program currency" => "The program's currency cannot change once it has sales or \
            commissions: its figures, balances and payouts are counted in it"
            .into(),
        other => format!("Already exists: {other}"),
    }
}

impl From<StoreError> for Error {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound(what) => Error::NotFound(not_found_text(what)),
            StoreError::Conflict(what) => Error::Conflict(conflict_text(what)),
            StoreError::Unavailable(cause) => Error::Unavailable(cause),
            StoreError::TooLarge => Error::Invalid(TOO_LARGE.into()),
            StoreError::Retry => Error::Retry,
            StoreError::Other(cause) => Error::Internal("Internal server error", cause),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_errors_read_as_sentences() {
        let e = Error::from(StoreError::NotFound("program"));
        assert_eq!(e.to_string(), "Program not found");
        let e = Error::from(StoreError::Conflict("short_link"));
        assert_eq!(e.to_string(), "A link with this short_link already exists");
    }
}
