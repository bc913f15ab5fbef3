//! Outbound mail over SMTP, through lettre's tokio transport: [`Mailer`] sends a
//! plain-text [`Mail`] from the configured sender. Configured by `REFTRACK_SMTP_URL` and
//! `REFTRACK_MAIL_FROM` (the binary's configuration); without them nothing is mailed.
//!
//! TLS (`smtps://`, or STARTTLS with `?tls=required`) is rustls with Mozilla's root
//! certificates built in, so that a container image without a CA bundle can send too.

use std::time::Duration;

use lettre::message::header::ContentType;
use lettre::message::Mailbox;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

/// Longest the hand-over of one message may take (connecting, TLS, sign-in, sending);
/// a request that mails waits for it, so it stays well under the request time limit.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(10);

/// A plain-text message to one recipient.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mail {
    /// The recipient's address.
    pub to: String,
    pub subject: String,
    pub body: String,
}

/// Why a mail was not sent. The texts name no credential and no recipient.
#[derive(Debug, thiserror::Error)]
pub enum MailError {
    /// The recipient's address is not one a mail can go to.
    #[error("the recipient is not a valid mail address")]
    Recipient,
    /// The message could not be put together.
    #[error("building the message failed: {0}")]
    Message(#[from] lettre::error::Error),
    /// The SMTP server could not be reached or refused the message.
    #[error("SMTP: {0}")]
    Smtp(#[from] lettre::transport::smtp::Error),
}

/// Sends mails through one SMTP server, from one sender.
pub struct Mailer {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
}

impl std::fmt::Debug for Mailer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The transport holds the SMTP password.
        f.debug_struct("Mailer").field("from", &self.from).finish()
    }
}

impl Mailer {
    /// A mailer for the SMTP server at `smtp_url`, sending from `from`. The errors do
    /// not repeat the URL, which may hold a password.
    pub fn new(smtp_url: &str, from: &str) -> anyhow::Result<Self> {
        let transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(smtp_url.trim())
            .map_err(|e| anyhow::anyhow!("REFTRACK_SMTP_URL is not a usable SMTP URL: {e}"))?
            .timeout(Some(SEND_TIMEOUT))
            .build();
        let from = from.trim().parse::<Mailbox>().map_err(|e| {
            anyhow::anyhow!("REFTRACK_MAIL_FROM is not a mail address ({e}): {from}")
        })?;
        Ok(Mailer { transport, from })
    }

    /// Sends `mail`; `Ok` once the server has accepted it.
    pub async fn send(&self, mail: Mail) -> Result<(), MailError> {
        let to = mail
            .to
            .parse::<Mailbox>()
            .map_err(|_| MailError::Recipient)?;
        let message = Message::builder()
            .from(self.from.clone())
            .to(to)
            .subject(mail.subject)
            .header(ContentType::TEXT_PLAIN)
            .body(mail.body)?;
        self.transport.send(message).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configuration_errors_do_not_repeat_the_password() {
        let e = Mailer::new("ftp://user:s3cret@mail.example", "a@example.com")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("REFTRACK_SMTP_URL"), "{e}");
        assert!(!e.contains("s3cret"), "{e}");
        let e = Mailer::new("smtp://user:s3cret@mail.example:587", "not an address")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("REFTRACK_MAIL_FROM"), "{e}");
        assert!(!e.contains("s3cret"), "{e}");
    }

    #[test]
    fn plain_tls_and_starttls_urls_are_accepted() {
        for url in [
            "smtp://127.0.0.1:2525",
            "smtp://user:pass@mail.example:587?tls=required",
            "smtps://user:pass@mail.example",
        ] {
            Mailer::new(url, "Acme Partners <invites@example.com>")
                .unwrap_or_else(|e| panic!("{url}: {e}"));
        }
    }
}
