//! The partner's settings: its name and payout details, and its password.

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;

use super::session::{see_other, Signed};
use super::view::{
    self, notice, ok, place_error, render, show_refused, Chrome, Field, PageResult, Posted, Query,
    Section,
};
use crate::error::Error;
use crate::partner::update_me;
use crate::AppState;
use reftrack_service as app;
use reftrack_service::accounts::{
    PartnerMe, PartnerMeBody, PasswordBody, PAYOUT_DETAILS_NEED_CODE, PAYOUT_DETAILS_NEED_PASSWORD,
    WRONG_CURRENT_PASSWORD,
};
use reftrack_service::two_factor::WRONG_CODE;

/// The payout methods offered (the empty value is none).
const METHODS: [(&str, &str); 4] = [
    ("", "Not set"),
    ("paypal", "PayPal"),
    ("wise", "Wise"),
    ("manual", "Manual (the program contacts you)"),
];

#[derive(Template)]
#[template(path = "partner/settings.html")]
struct SettingsPage {
    chrome: Chrome,
    email: String,
    code: String,
    name: Field,
    payout_method: Field,
    methods: Vec<(&'static str, &'static str, bool)>,
    payout_email: Field,
    /// The partner's password, which a change of its payout details needs.
    password: Field,
    /// Whether the partner signs in with two-factor: the change then needs a code too.
    two_factor: bool,
    second_factor: Field,
    profile_error: Option<String>,
    current_password: Field,
    new_password: Field,
    confirm_password: Field,
    password_error: Option<String>,
}

impl SettingsPage {
    fn new(me: &PartnerMe, done: Option<&str>) -> SettingsPage {
        let method = me.payout_method.map(|m| m.as_str()).unwrap_or("");
        SettingsPage {
            chrome: view::signed_in("Settings", me, Section::Settings).with_notice(notice(done)),
            email: me.email.clone().unwrap_or_default(),
            code: me.code.clone(),
            name: Field::new("name", "Name").with(me.name.clone()),
            payout_method: Field::new("payout_method", "Payout method").with(method),
            methods: Vec::new(),
            payout_email: Field::new("payout_email", "Payout email")
                .with(me.payout_email.clone().unwrap_or_default()),
            password: Field::new("password", "Your password"),
            two_factor: me.two_factor,
            second_factor: Field::new("code", "Two-factor code"),
            profile_error: None,
            current_password: Field::new("current_password", "Current password"),
            new_password: Field::new("new_password", "New password"),
            confirm_password: Field::new("confirm_password", "Repeat the new password"),
            password_error: None,
        }
    }

    /// The page as sent: the method options follow the method field.
    fn finished(mut self) -> SettingsPage {
        self.methods = METHODS
            .iter()
            .map(|(v, l)| (*v, *l, *v == self.payout_method.value))
            .collect();
        self
    }
}

/// `GET /partner/settings`.
pub(super) async fn settings(State(s): State<AppState>, p: Signed, Query(q): Query) -> PageResult {
    let me = s.app.partner_me(p.partner_id).await?;
    Ok(ok(
        &SettingsPage::new(&me, q.text("done").as_deref()).finished()
    ))
}

/// `POST /partner/settings`: name and payout details.
pub(super) async fn save_profile(
    State(s): State<AppState>,
    p: Signed,
    origin: crate::origin::RequestOrigin,
    form: Posted,
) -> PageResult {
    let password = form.get("password");
    let mut b = PartnerMeBody {
        name: Some(form.get("name")),
        payout_method: Some(form.text("payout_method")),
        payout_email: Some(form.text("payout_email")),
        current_password: (!password.is_empty()).then_some(password),
        ..PartnerMeBody::default()
    };
    // One field takes a current code (six digits) or a recovery code.
    if let Some(code) = form.text("code") {
        if code.trim().len() == 6 && code.trim().bytes().all(|c| c.is_ascii_digit()) {
            b.code = Some(code);
        } else {
            b.recovery_code = Some(code);
        }
    }
    let origin = origin.of_actor(reftrack_domain::audit::Actor::partner(p.partner_id, None));
    let refused = match update_me(&s, p.partner_id, b, origin).await {
        Ok(_) => return Ok(see_other("/partner/settings?done=profile")),
        Err(Error::BadRequest(text)) => text,
        Err(Error::Forbidden(text)) => {
            return refused_payout_change(&s, p.partner_id, &form, &text).await
        }
        Err(e) => return Err(e.into()),
    };
    let me = s.app.partner_me(p.partner_id).await?;
    let mut page = SettingsPage::new(&me, None);
    page.profile_error = show_refused(
        &form,
        [refused],
        &mut [
            &mut page.name,
            &mut page.payout_method,
            &mut page.payout_email,
        ],
    );
    Ok(render(StatusCode::BAD_REQUEST, &page.finished()))
}

/// The settings page again, with the details form as sent and why its change of payout
/// details was refused beside the password field (or above the form for a ban).
async fn refused_payout_change(
    s: &AppState,
    partner_id: i64,
    form: &Posted,
    text: &str,
) -> PageResult {
    let me = s.app.partner_me(partner_id).await?;
    let mut page = SettingsPage::new(&me, None);
    page.name.value = form.get("name");
    page.payout_method.value = form.get("payout_method");
    page.payout_email.value = form.get("payout_email");
    match text {
        PAYOUT_DETAILS_NEED_PASSWORD => {
            page.password.error = Some("Enter your password to change where your payouts go".into())
        }
        WRONG_CURRENT_PASSWORD => {
            page.password.error = Some("That is not your current password".into())
        }
        PAYOUT_DETAILS_NEED_CODE => {
            page.second_factor.error =
                Some("Enter the code your authenticator app shows now".into())
        }
        WRONG_CODE => {
            page.second_factor.error =
                Some("That code is not right: enter the code your app shows now".into())
        }
        other => page.profile_error = Some(other.to_string()),
    }
    Ok(render(StatusCode::FORBIDDEN, &page.finished()))
}

/// `POST /partner/settings/password`: a new password; other sessions end.
pub(super) async fn change_password(
    State(s): State<AppState>,
    p: Signed,
    form: Posted,
) -> PageResult {
    let new_password = form.get("new_password");
    let refused = if new_password != form.get("confirm_password") {
        None
    } else {
        let b = PasswordBody {
            current_password: form.get("current_password"),
            new_password,
        };
        match s
            .app
            .change_partner_password(p.partner_id, &p.token_hash, b)
            .await
        {
            Ok(()) => return Ok(see_other("/partner/settings?done=password")),
            Err(app::Error::Invalid(text)) => Some(text),
            Err(e) => return Err(e.into()),
        }
    };
    let me = s.app.partner_me(p.partner_id).await?;
    let mut page = SettingsPage::new(&me, None);
    match refused {
        None => page.confirm_password.error = Some("The two new passwords are not the same".into()),
        // The API's words name its field twice; a person reads this.
        Some(text) if text == WRONG_CURRENT_PASSWORD => {
            page.current_password.error = Some("That is not your current password".into())
        }
        Some(text) => {
            page.password_error = place_error(
                &text,
                &mut [&mut page.current_password, &mut page.new_password],
            )
        }
    }
    Ok(render(StatusCode::BAD_REQUEST, &page.finished()))
}
