//! The first run of a server: while no dashboard user exists, the owner's dashboard
//! offers a setup page that creates the first workspace, its owner and a first program,
//! and records the address the owner confirms as the server's. It asks for the admin
//! token, so that a server nobody has set up yet cannot be claimed by whoever reaches it
//! first. Once anyone has an account, it is gone; operators keep the admin token and the
//! CLI either way.

use crate::address::server_address;
use crate::programs::{
    check_password, hashed_password, name, new_program, user_email, user_fields, ProgramBody,
    UserBody,
};
use crate::{App, Error, Result};
use reftrack_store::{NewOwner, StoreError, User, Workspace};

/// What the setup page asks for.
#[derive(Debug, Clone, Default)]
pub struct FirstRunBody {
    /// The admin token (printed at the server's first start, or `REFTRACK_ADMIN_TOKEN`).
    pub admin_token: String,
    /// The address partners and the owner reach the server at, which the links it hands
    /// out name; `None` when `REFTRACK_PUBLIC_URL` sets it.
    pub public_url: Option<String>,
    /// The company or team: the workspace's name.
    pub workspace_name: String,
    /// The owner's name.
    pub name: String,
    pub email: String,
    /// At least 8 characters.
    pub password: String,
    pub program_name: String,
    /// Three letters; `usd` when absent.
    pub currency: Option<String>,
    /// The site's origin (`https://shop.example.com`), the program's first allowed
    /// origin; optional.
    pub website: Option<String>,
}

impl FirstRunBody {
    /// The first program as this body asks for it, with the site and currency given.
    fn program(&self, website: Option<String>, currency: Option<String>) -> ProgramBody {
        ProgramBody {
            workspace_id: 0,
            name: self.program_name.trim().to_string(),
            cookie_window_days: None,
            currency: currency.filter(|c| !c.trim().is_empty()),
            commission: None,
            recurring_commission_months: None,
            // The site is also where redirect links send visitors, until changed.
            destination_url: website.clone(),
            allowed_origins: website.map(|w| vec![w]),
            stripe_webhook_secret: None,
            commission_hold_days: None,
            min_payout_cents: None,
            applications_open: None,
            partner_links_allowed: None,
        }
    }

    fn website(&self) -> Option<String> {
        self.website
            .as_deref()
            .map(str::trim)
            .filter(|w| !w.is_empty())
            .map(str::to_string)
    }

    /// Every field the body gets wrong, in the form's order: the use case refuses the
    /// first, the setup page shows them all at once.
    pub fn problems(&self) -> Vec<String> {
        // The site and the currency each on their own, under a valid name, so that one
        // error does not hide another.
        let named = FirstRunBody {
            program_name: "Program".into(),
            ..self.clone()
        };
        let program = |website, currency| {
            new_program(named.program(website, currency)).map_err(website_words)
        };
        let token = if self.admin_token.trim().is_empty() {
            Err(Error::invalid(ADMIN_TOKEN_REQUIRED))
        } else {
            Ok(())
        };
        [
            token,
            self.public_url
                .as_deref()
                .map_or(Ok(()), |u| server_address("public_url", u).map(drop)),
            name("workspace_name", &self.workspace_name, 200).map(drop),
            name("name", &self.name, 200).map(drop),
            user_email(&self.email).map(drop),
            check_password("password", &self.password),
            name("program_name", &self.program_name, 200).map(drop),
            program(self.website(), None).map(drop),
            program(None, self.currency.clone()).map(drop),
        ]
        .into_iter()
        .filter_map(|checked| match checked {
            Err(Error::Invalid(text)) => Some(text),
            _ => None,
        })
        .collect()
    }
}

/// The program's refusal of the site in the setup form's words.
fn website_words(e: Error) -> Error {
    match e {
        Error::Invalid(text) if text.starts_with("allowed_origins") => Error::invalid(
            "website must be the address of your site, like https://shop.example.com",
        ),
        other => other,
    }
}

/// What the first run created; the program's view carries its API token.
#[derive(Debug)]
pub struct FirstRun {
    pub workspace: Workspace,
    pub user: User,
    pub program: crate::programs::ProgramView,
}

/// The text of a first run without the admin token.
pub const ADMIN_TOKEN_REQUIRED: &str = "admin_token is required: the admin token printed \
    when the server first started, or REFTRACK_ADMIN_TOKEN";

/// The text of a first run after another.
pub const ALREADY_SET_UP: &str = "This server is already set up: sign in instead";

impl App {
    /// Whether the server still waits for its first run: no dashboard user exists.
    pub async fn needs_first_run(&self) -> Result<bool> {
        Ok(!self.store.has_users().await?)
    }

    /// Creates the first workspace, its owner and its first program, and records the
    /// confirmed address; 403 without the admin token, a conflict once any user exists.
    pub async fn first_run(&self, b: FirstRunBody) -> Result<FirstRun> {
        if let Some(problem) = b.problems().into_iter().next() {
            return Err(Error::Invalid(problem));
        }
        self.check_admin_token(&b.admin_token).await?;
        let public_url = b
            .public_url
            .as_deref()
            .filter(|_| self.public_url.is_none())
            .map(|u| server_address("public_url", u))
            .transpose()?;
        let workspace_name = name("workspace_name", &b.workspace_name, 200)?;
        let program_body = b.program(b.website(), b.currency.clone());
        let user = UserBody {
            email: b.email,
            password: b.password,
            name: Some(b.name),
        };
        let (email, display) = user_fields(&user)?;
        name("program_name", &b.program_name, 200)?;
        let (program, token) = new_program(program_body).map_err(website_words)?;
        if !self.needs_first_run().await? {
            return Err(Error::Conflict(ALREADY_SET_UP.into()));
        }
        let hash = hashed_password(user.password).await?;
        let owner = NewOwner {
            workspace_name: &workspace_name,
            email: &email,
            password_hash: &hash,
            name: display.as_deref(),
        };
        let done = self
            .store
            .first_run(&owner, &program, public_url.as_deref(), self.now_ms())
            .await
            .map_err(|e| match e {
                StoreError::Conflict(_) => Error::Conflict(ALREADY_SET_UP.into()),
                other => other.into(),
            })?;
        self.stored_public_url.clear();
        Ok(FirstRun {
            workspace: done.workspace,
            user: done.user,
            program: crate::programs::program_view(&done.program, Some(&token)),
        })
    }
}
