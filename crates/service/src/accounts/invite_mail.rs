//! The mail that carries a partner's invite link: a first invite, or a new password for
//! a partner that already has one (the same link, worded for what it does).

use crate::mail::Mail;
use reftrack_domain::time::iso;

/// The mail of an invite to `to`, for the partner called `name`; `reset` when the
/// partner already has a password (the link then sets a new one).
pub fn invite_mail(to: &str, name: &str, invite_url: &str, expires_at: i64, reset: bool) -> Mail {
    // The ISO timestamp without its milliseconds: `2026-01-02 03:04 UTC`.
    let until = iso(expires_at);
    let until = format!("{} {} UTC", &until[..10], &until[11..16]);
    let (subject, opening, closing) = if reset {
        (
            "Set a new password for the partner portal",
            "A new password was asked for your account on the partner portal. Open this \
             link to choose it:",
            "Until you use it, your current password keeps working. If you did not ask for \
             a new one, ignore this mail.",
        )
    } else {
        (
            "Your invite to the partner portal",
            "You are invited to the partner portal, where you see your links, clicks, \
             commissions and payouts. Open this link to choose your password:",
            "If you did not expect this invite, ignore this mail.",
        )
    };
    Mail {
        to: to.to_string(),
        subject: subject.to_string(),
        body: format!(
            "Hello {name},\n\n{opening}\n\n{invite_url}\n\nThe link works once, until \
             {until}. {closing}\n"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const URL: &str = "https://track.example.com/partner/invite?token=rti_abc";

    #[test]
    fn a_first_invite_and_a_new_password_say_what_the_link_does() {
        // 2026-01-02T03:04:05.678Z
        let at = 1_767_323_045_678;
        let first = invite_mail("alice@example.com", "Alice", URL, at, false);
        assert_eq!(first.to, "alice@example.com");
        assert_eq!(first.subject, "Your invite to the partner portal");
        assert!(first.body.starts_with("Hello Alice,\n"));
        assert!(first.body.contains(&format!("\n{URL}\n")));
        assert!(first.body.contains("until 2026-01-02 03:04 UTC."));
        let reset = invite_mail("alice@example.com", "Alice", URL, at, true);
        assert_eq!(reset.subject, "Set a new password for the partner portal");
        assert!(reset.body.contains(&format!("\n{URL}\n")));
        assert!(reset.body.contains("current password keeps working"));
    }
}
