//! The checks of the management bodies' fields, each with the text a client reads, and
//! the records a valid body becomes.

use super::*;

/// Distinguishes an explicit `null` (Some(None)) from an absent field (None).
pub(crate) fn nullable<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// A trimmed text of 1 to `max` characters, or the field's error.
pub(crate) fn name(field: &str, value: &str, max: usize) -> Result<String> {
    let v = value.trim();
    if v.is_empty() || v.chars().count() > max {
        return Err(Error::invalid(format!(
            "{field} must be 1 to {max} characters"
        )));
    }
    readable(field, v)?;
    Ok(v.to_string())
}

/// `Ok` unless `value` holds a control or bidirectional formatting character
/// ([`text::forbidden_char`]), which is the field's error.
pub(crate) fn readable(field: &str, value: &str) -> Result<()> {
    match text::forbidden_char(value) {
        Some(_) => Err(Error::invalid(text::refusal(field))),
        None => Ok(()),
    }
}

/// One of the names of `T`, or the field's error.
pub(crate) fn one_of<T: std::str::FromStr<Err = UnknownValue>>(
    field: &str,
    value: &str,
) -> Result<T> {
    value
        .parse()
        .map_err(|e: UnknownValue| Error::invalid(e.message(field)))
}

/// `value` when it lies in `range`, else the field's error.
pub(super) fn in_range(
    field: &str,
    value: i64,
    range: std::ops::RangeInclusive<i64>,
) -> Result<i64> {
    if range.contains(&value) {
        Ok(value)
    } else {
        Err(Error::invalid(format!(
            "{field} must be an integer from {} to {}",
            range.start(),
            range.end()
        )))
    }
}

pub(super) fn window_days(days: i64) -> Result<i64> {
    in_range("cookie_window_days", days, 1..=3650)
}

pub(super) fn hold_days(days: i64) -> Result<i64> {
    in_range("commission_hold_days", days, 0..=3650)
}

pub(super) fn min_payout(cents: i64) -> Result<i64> {
    in_range("min_payout_cents", cents, 0..=100_000_000_000)
}

/// A trimmed email address, or the field's error.
pub(crate) fn email(field: &str, value: &str) -> Result<String> {
    let v = value.trim();
    if !v.contains('@') || v.len() > 255 || v.contains(char::is_whitespace) {
        return Err(Error::invalid(format!("{field} must be an email address")));
    }
    Ok(v.to_string())
}

/// A link's short name: trimmed, 1 to 255 characters without spaces.
pub(crate) fn short_link(value: &str) -> Result<&str> {
    let v = value.trim();
    if v.is_empty() || v.chars().count() > 255 || v.contains(char::is_whitespace) {
        return Err(Error::invalid(
            "short_link must be 1 to 255 characters without spaces",
        ));
    }
    readable("short_link", v)?;
    Ok(v)
}

/// The password rule of dashboard users and partners: 8 to 1024 characters.
pub(crate) fn check_password(field: &str, password: &str) -> Result<()> {
    let length = password.chars().count();
    if !(8..=1024).contains(&length) {
        return Err(Error::invalid(format!(
            "{field} must be 8 to 1024 characters"
        )));
    }
    Ok(())
}

/// The argon2id hash of a password, computed off the async workers (it is deliberately
/// slow).
pub(crate) async fn hashed_password(password: String) -> Result<String> {
    secrets::password_work(move || secrets::hash_password(&password))
        .await
        .and_then(|hashed| hashed)
        .map_err(|e| Error::Internal("Internal server error", e))
}

pub(super) fn currency(code: &str) -> Result<String> {
    normalize_currency(code)
        .ok_or_else(|| Error::invalid("currency must be a 3-letter currency code"))
}

pub(super) fn commission(spec: &CommissionSpec) -> Result<CommissionRule> {
    CommissionRule::from_spec(spec).map_err(Error::Invalid)
}

pub(super) fn recurring_months(months: Option<i64>) -> Result<Option<i64>> {
    match months {
        Some(m) if !(0..=1200).contains(&m) => Err(Error::invalid(
            "recurring_commission_months must be null or an integer from 0 to 1200",
        )),
        other => Ok(other),
    }
}

/// Normalises allowed origins to `scheme://host[:port]`. A wildcard is refused with its
/// own reason: it would parse, then match no browser's `Origin`.
pub(super) fn origins(list: &[String]) -> Result<Vec<String>> {
    list.iter()
        .map(|o| {
            if o.contains('*') {
                return Err(Error::invalid(format!(
                    "allowed_origins: {o:?} has a wildcard, which is not supported: list each \
                     site, like https://shop.example.com and https://www.example.com"
                )));
            }
            let url = url::Url::parse(o.trim()).ok().filter(|u| {
                matches!(u.scheme(), "http" | "https")
                    && u.host().is_some()
                    && u.path() == "/"
                    && u.query().is_none()
                    && u.username().is_empty()
            });
            url.map(|u| u.origin().ascii_serialization())
                .ok_or_else(|| {
                    Error::invalid(format!(
                        "allowed_origins: {o:?} is not an origin like https://shop.example.com"
                    ))
                })
        })
        .collect()
}

/// A destination URL of redirect links, or the field's error.
pub(crate) fn destination_url(url: &str) -> Result<String> {
    redirect::destination(url).map_err(|e| Error::invalid(format!("destination_url {e}")))
}

pub(super) fn webhook_secret(secret: Option<String>) -> Result<Option<String>> {
    match secret {
        Some(s) if s.trim().is_empty() || s.chars().count() > 255 => Err(Error::invalid(
            "stripe_webhook_secret must be 1 to 255 characters",
        )),
        other => Ok(other.map(|s| s.trim().to_string())),
    }
}

/// The program a create body asks for, validated, with its new API token (whose hash
/// the program keeps).
pub(crate) fn new_program(b: ProgramBody) -> Result<(NewProgram, String)> {
    let token = secrets::generate_token(API_TOKEN_PREFIX);
    let program = NewProgram {
        workspace_id: b.workspace_id,
        name: name("name", &b.name, 200)?,
        cookie_window_days: window_days(b.cookie_window_days.unwrap_or(60))?,
        currency: currency(b.currency.as_deref().unwrap_or("usd"))?,
        commission: b
            .commission
            .as_ref()
            .map(commission)
            .transpose()?
            .unwrap_or_default(),
        recurring_commission_months: recurring_months(b.recurring_commission_months)?,
        allowed_origins: origins(&b.allowed_origins.unwrap_or_default())?,
        stripe_webhook_secret: webhook_secret(b.stripe_webhook_secret)?,
        commission_hold_days: hold_days(b.commission_hold_days.unwrap_or(30))?,
        min_payout_cents: min_payout(b.min_payout_cents.unwrap_or(5000))?,
        applications_open: b.applications_open.unwrap_or(false),
        partner_links_allowed: b.partner_links_allowed.unwrap_or(true),
        destination_url: b
            .destination_url
            .as_deref()
            .map(destination_url)
            .transpose()?,
        api_token_hash: secrets::hash_token(&token),
        api_token_prefix: secrets::token_prefix(&token),
    };
    Ok((program, token))
}

/// A partner code as given (trimmed), or the field's error.
pub(super) fn partner_code(value: &str) -> Result<&str> {
    let code = value.trim();
    let fits = (1..=64).contains(&code.len())
        && code
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_');
    if fits {
        Ok(code)
    } else {
        Err(Error::invalid(
            "code must be 1 to 64 letters, digits, '-' or '_'",
        ))
    }
}

/// The change a partner patch body asks for, validated, by `changed_by` (as
/// [`Partner::payout_details_changed_by`] names it) at `at`.
pub(crate) fn partner_patch(
    b: PartnerPatchBody,
    changed_by: &'static str,
    at: i64,
) -> Result<PartnerPatch> {
    Ok(PartnerPatch {
        changed_by,
        at,
        name: b.name.map(|n| name("name", &n, 200)).transpose()?,
        email: b
            .email
            .map(|e| e.map(|e| email("email", &e)).transpose())
            .transpose()?,
        payout_method: b
            .payout_method
            .map(|m| {
                m.map(|m| one_of::<PayoutMethod>("payout_method", &m))
                    .transpose()
            })
            .transpose()?,
        payout_email: b
            .payout_email
            .map(|e| e.map(|e| email("payout_email", &e)).transpose())
            .transpose()?,
    })
}

/// The fraud rules a change names (only those to change); an unknown rule or action is
/// refused with a text that names it.
pub(super) fn fraud_rules_patch(value: &serde_json::Value) -> Result<FraudRulesPatch> {
    FraudRulesPatch::parse(value).map_err(|e| Error::invalid(e.to_string()))
}
