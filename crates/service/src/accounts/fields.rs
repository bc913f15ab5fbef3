//! The codes, short links and notes a partner account makes or checks, and why an
//! invite is refused.

use super::*;

/// Why an invite could not be used.
pub(super) fn invite_refused(
    invite: Option<reftrack_store::partners::InviteRow>,
    now: i64,
) -> Error {
    Error::invalid(match invite {
        None => "This invite link is not valid",
        Some(i) if i.used_at.is_some() => {
            "This invite link has already been used: sign in, or ask for a new one"
        }
        Some(i) if i.expires_at <= now => "This invite link has expired: ask for a new one",
        Some(_) => "This invite link is not valid",
    })
}

/// A partner's link with its redirect address, when it has one.
pub(super) fn partner_link(
    link: Link,
    program_destination: Option<&str>,
    public_url: &str,
) -> PartnerLink {
    PartnerLink {
        redirect_url: redirect_url(public_url, &link, program_destination),
        link,
    }
}

/// A short link made for a partner: its code and 6 random hex digits.
pub(super) fn generated_short_link(code: &str) -> String {
    let random = generate_token("");
    format!("{}-{}", code.to_ascii_lowercase(), &random[..6])
}

/// A partner code made for an applicant: letters and digits of its name, and 6 random
/// hex digits.
pub(super) fn applicant_code(name: &str) -> String {
    let stem: String = name
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(20)
        .collect::<String>()
        .to_ascii_lowercase();
    let random = generate_token("");
    if stem.is_empty() {
        format!("partner-{}", &random[..6])
    } else {
        format!("{stem}-{}", &random[..6])
    }
}

/// An optional free text of at most `max` characters, trimmed; empty is none.
pub(super) fn note(field: &str, value: Option<String>, max: usize) -> Result<Option<String>> {
    match value.as_deref().map(str::trim) {
        None | Some("") => Ok(None),
        Some(v) if v.chars().count() > max => Err(Error::invalid(format!(
            "{field} must be at most {max} characters"
        ))),
        Some(v) => Ok(Some(v.to_string())),
    }
}

/// The API's answer to a password change whose current password is wrong.
pub const WRONG_CURRENT_PASSWORD: &str = "current_password is not the current password";

/// The answer (403) to a change of payout details without the current password.
pub const PAYOUT_DETAILS_NEED_PASSWORD: &str =
    "current_password is required to change the payout method or payout email";

/// The answer (403) to a change of payout details by a partner banned from a program.
pub const BANNED_PAYOUT_DETAILS: &str =
    "A partner banned from a program cannot change its payout details";

/// The answer (403) to a change of payout details without a two-factor code, from a
/// partner that signs in with one.
pub const PAYOUT_DETAILS_NEED_CODE: &str =
    "code (from your authenticator app) is required to change the payout method or payout email";
