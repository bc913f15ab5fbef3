//! The mail that tells a program's owners and admins that someone applied to it.

use crate::mail::Mail;

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
