//! Notices: to a program's owners and admins that someone applied, to the applicant once
//! it is approved, to a partner when a payout paid it, and to a partner when its payout
//! details changed.

use crate::mail::{Mail, Mailer};
use crate::App;
use reftrack_store::Partner;

/// Sends `mails` (notices of `what`) one after the other, logging each that fails:
/// they tell of a change already committed, and nothing waits for them.
pub async fn send_notices(mailer: &Mailer, what: &str, mails: Vec<Mail>) {
    for mail in mails {
        if let Err(e) = mailer.send(mail).await {
            tracing::warn!(error = %e, "mailing {what} failed");
        }
    }
}

impl App {
    /// Sends `mails` after the answer ([`send_notices`]), when the server mails.
    pub(super) fn notify_later(&self, what: &'static str, mails: Vec<Mail>) {
        if let Some(mailer) = self.mailer.clone() {
            tokio::spawn(async move { send_notices(&mailer, what, mails).await });
        }
    }
}

/// What the mail says about an application.
pub struct ApplicationNotice<'a> {
    pub program_name: &'a str,
    pub applicant_name: &'a str,
    pub applicant_email: &'a str,
    pub website: Option<&'a str>,
    pub message: Option<&'a str>,
    /// The dashboard's list of the program's pending partners, when the server knows its
    /// own address (never one taken from the applicant's request).
    pub review_url: Option<&'a str>,
}

/// The notice of an application, to `to`.
pub fn application_mail(to: &str, n: &ApplicationNotice<'_>) -> Mail {
    let mut body = format!(
        "{} ({}) applied to join {}.\n",
        n.applicant_name, n.applicant_email, n.program_name
    );
    if let Some(website) = n.website {
        body.push_str(&format!("\nWebsite: {website}\n"));
    }
    if let Some(message) = n.message {
        body.push_str(&format!("\nTheir message:\n{message}\n"));
    }
    body.push_str(&match n.review_url {
        Some(url) => format!("\nApprove or reject the application here:\n{url}\n"),
        None => "\nApprove or reject it on the program's Partners page of the dashboard \
                 (pending partners).\n"
            .to_string(),
    });
    Mail {
        to: to.to_string(),
        subject: format!("New partner application: {}", n.program_name),
        body,
    }
}

/// The mail that tells the partner called `name` it is approved in `program_name`;
/// `portal_url` is the portal's sign-in page when the server knows its address.
pub fn approval_mail(to: &str, name: &str, program_name: &str, portal_url: Option<&str>) -> Mail {
    let sign_in = match portal_url {
        Some(url) => format!("Sign in to the partner portal to get your links:\n{url}\n"),
        None => "Sign in to the partner portal to get your links.\n".to_string(),
    };
    Mail {
        to: to.to_string(),
        subject: format!("You are approved: {program_name}"),
        body: format!(
            "Hello {name},\n\nYour application to {program_name} is approved: sales through \
             your links now earn you commission.\n\n{sign_in}"
        ),
    }
}

/// The notice to `to` that the payout details of the partner `before` are now those of
/// `after`: what changed, and what to do if the partner did not change them.
pub fn payout_details_mail(to: &str, before: &Partner, after: &Partner) -> Mail {
    let method = |p: &Partner| p.payout_method.map_or("not set", |m| m.as_str());
    let email = |p: &Partner| p.payout_email.clone().unwrap_or_else(|| "not set".into());
    let mut body = format!(
        "Hello {},\n\nThe details of where your partner payouts are sent were changed",
        after.name
    );
    body.push_str(match after.payout_details_changed_by.as_deref() {
        Some("partner") => " from your partner account.\n\n",
        _ => " by a program you belong to.\n\n",
    });
    if before.payout_method != after.payout_method {
        body.push_str(&format!(
            "Payout method: {} (was {})\n",
            method(after),
            method(before)
        ));
    }
    if before.payout_email != after.payout_email {
        body.push_str(&format!(
            "Payout email: {} (was {})\n",
            email(after),
            email(before)
        ));
    }
    body.push_str(
        "\nIf you did not ask for this change, sign in to the partner portal, change your \
         password and set your payout details back, and tell the program's owner.\n",
    );
    Mail {
        to: to.to_string(),
        subject: "Your payout details were changed".into(),
        body,
    }
}

/// What a paid payout's notice says to one partner.
pub struct PaidNotice<'a> {
    pub name: &'a str,
    pub program_name: &'a str,
    /// The amount, formatted in the payout's currency.
    pub amount: &'a str,
    pub commission_count: i64,
    /// How and where it was sent: `PayPal to pay@alice.example`.
    pub sent_by: String,
    /// The transfer's reference in the tool that sent the money, if the owner gave one.
    pub reference: Option<&'a str>,
    /// The partner's payouts page, when the server knows its address.
    pub payouts_url: Option<String>,
}

/// The notice of a paid payout, to `to`.
pub fn paid_mail(to: &str, n: &PaidNotice<'_>) -> Mail {
    let commissions = match n.commission_count {
        1 => "1 commission".to_string(),
        c => format!("{c} commissions"),
    };
    let mut body = format!(
        "Hello {},\n\n{} has paid you {} for {commissions}, by {}.\n",
        n.name, n.program_name, n.amount, n.sent_by
    );
    if let Some(reference) = n.reference {
        body.push_str(&format!("Reference: {reference}\n"));
    }
    if let Some(url) = &n.payouts_url {
        body.push_str(&format!("\nYour payouts:\n{url}\n"));
    }
    Mail {
        to: to.to_string(),
        subject: format!("Payout sent: {} from {}", n.amount, n.program_name),
        body,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reftrack_domain::status::PayoutMethod;

    #[test]
    fn the_notice_names_the_applicant_and_where_to_decide() {
        let mut n = ApplicationNotice {
            program_name: "Acme Partners",
            applicant_name: "Bob",
            applicant_email: "bob@example.com",
            website: Some("https://bob.example"),
            message: Some("I write about shoes."),
            review_url: Some("https://track.example.com/app/programs/1/partners?status=pending"),
        };
        let mail = application_mail("owner@acme.example", &n);
        assert_eq!(mail.to, "owner@acme.example");
        assert_eq!(mail.subject, "New partner application: Acme Partners");
        for part in [
            "Bob (bob@example.com) applied to join Acme Partners.",
            "Website: https://bob.example",
            "I write about shoes.",
            "https://track.example.com/app/programs/1/partners?status=pending",
        ] {
            assert!(mail.body.contains(part), "{part} not in {}", mail.body);
        }
        n.review_url = None;
        n.website = None;
        let mail = application_mail("owner@acme.example", &n);
        assert!(mail.body.contains("Partners page of the dashboard"));
        assert!(!mail.body.contains("Website:"));
    }

    #[test]
    fn the_payout_notice_says_how_much_and_how() {
        let mail = paid_mail(
            "alice@example.com",
            &PaidNotice {
                name: "Alice",
                program_name: "Acme Partners",
                amount: "$25.00",
                commission_count: 2,
                sent_by: "PayPal to pay@alice.example".into(),
                reference: Some("PP-123"),
                payouts_url: Some("https://track.example.com/partner/programs/1/payouts".into()),
            },
        );
        assert_eq!(mail.subject, "Payout sent: $25.00 from Acme Partners");
        for part in [
            "Acme Partners has paid you $25.00 for 2 commissions, by PayPal to pay@alice.example.",
            "Reference: PP-123",
            "https://track.example.com/partner/programs/1/payouts",
        ] {
            assert!(mail.body.contains(part), "{part} not in {}", mail.body);
        }
    }

    fn partner(method: Option<PayoutMethod>, email: Option<&str>, by: &str) -> Partner {
        Partner {
            id: 1,
            name: "Alice".into(),
            code: "alice".into(),
            email: None,
            payout_method: method,
            payout_email: email.map(str::to_string),
            created_at: 0,
            payout_details_changed_at: Some(1),
            payout_details_changed_by: Some(by.into()),
        }
    }

    #[test]
    fn the_payout_details_notice_names_only_what_changed_and_who() {
        let before = partner(Some(PayoutMethod::Paypal), Some("a@x.io"), "partner");
        let after = partner(Some(PayoutMethod::Paypal), Some("b@x.io"), "partner");
        let mail = payout_details_mail("alice@example.com", &before, &after);
        assert_eq!(mail.subject, "Your payout details were changed");
        assert!(mail.body.contains("Payout email: b@x.io (was a@x.io)"));
        assert!(!mail.body.contains("Payout method"));
        assert!(mail.body.contains("from your partner account"));
        let after = partner(Some(PayoutMethod::Wise), None, "user");
        let mail = payout_details_mail("alice@example.com", &before, &after);
        assert!(mail.body.contains("Payout method: wise (was paypal)"));
        assert!(mail.body.contains("Payout email: not set (was a@x.io)"));
        assert!(mail.body.contains("by a program you belong to"));
    }

    #[test]
    fn the_approval_says_where_to_sign_in() {
        let mail = approval_mail(
            "bob@example.com",
            "Bob",
            "Acme Partners",
            Some("https://track.example.com/partner/login"),
        );
        assert_eq!(mail.subject, "You are approved: Acme Partners");
        assert!(mail.body.contains("Hello Bob,"));
        assert!(mail
            .body
            .contains("https://track.example.com/partner/login"));
        let mail = approval_mail("bob@example.com", "Bob", "Acme Partners", None);
        assert!(mail
            .body
            .contains("Sign in to the partner portal to get your links."));
    }
}
