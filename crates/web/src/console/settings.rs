//! A program's settings: its fields (commission rule, cookie window, hold, minimum
//! payout, applications, partner links, allowed origins, the Stripe webhook secret), the
//! API token's rotation (after a confirmation), the workspace's members and roles, and
//! the server's address (changed with the admin token, as it is the whole server's).

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;

use super::frame::{confirmed, done, Confirm, Frame, Head, Ids, Tab};
use super::install::setup_page;
use super::session::Signed;
use crate::pages::session::see_other;
use crate::pages::view::{
    ok, render, show_refused, Chrome, Field, Moment, PageError, PageResult, Posted, ProgramId,
    Query, Refusal,
};
use crate::AppState;
use reftrack_domain::commission::CommissionSpec;
use reftrack_domain::metrics::IsoValue;
use reftrack_domain::money::{display_amount, major_units_text, parse_major_units};
use reftrack_service as app;
use reftrack_service::address::AddressSource;
use reftrack_service::programs::{MemberPatchBody, ProgramPatchBody, RotateTokenBody};
use reftrack_store::Record;

#[derive(Template)]
#[template(path = "console/settings.html")]
struct SettingsPage {
    chrome: Chrome,
    head: Head,
    /// The hints of the money fields, which name the currency.
    amount_hint: String,
    min_payout_hint: String,
    name: Field,
    /// `percentage` or `flat`.
    commission_type: String,
    commission_percent: Field,
    commission_amount: Field,
    cookie_window_days: Field,
    commission_hold_days: Field,
    min_payout: Field,
    applications_open: bool,
    partner_links_allowed: bool,
    allowed_origins: Field,
    destination_url: Field,
    stripe_webhook_secret: Field,
    webhook_secret_set: bool,
    form_error: Option<String>,
    /// The commission rule and minimum payout in words, for those who may not change them.
    commission_text: String,
    min_payout_text: String,
    apply_href: String,
    token_prefix: String,
    /// Until when the token the last rotation replaced still works, while it does.
    previous_token_until: Option<Moment>,
    members: Vec<MemberView>,
    member_email: Field,
    member_role: String,
    members_error: Option<String>,
    roles: [&'static str; 4],
    /// The server's address, and where it comes from, in words.
    address: Field,
    address_source: &'static str,
    /// Whether `REFTRACK_PUBLIC_URL` sets it (then the form is not shown).
    address_configured: bool,
    address_token: Field,
    address_error: Option<String>,
    /// Whether the workspace requires two-factor sign-in of its members.
    require_two_factor: bool,
    /// This page's address.
    settings_href: String,
    /// The fraud rules' form: each rule with its action.
    fraud_rules: Vec<super::review::RuleChoice>,
    fraud_actions: [(&'static str, &'static str); 3],
}

struct MemberView {
    user_id: i64,
    email: String,
    name: String,
    role: &'static str,
    status: &'static str,
    /// The signed-in user's own row.
    me: bool,
}

/// The roles an owner may give, most powerful first.
const ROLES: [&str; 4] = ["owner", "admin", "member", "viewer"];

async fn settings_page(s: &AppState, frame: Frame, user: &Signed) -> app::Result<SettingsPage> {
    let p = &frame.program;
    let members = s
        .app
        .workspace_members(&frame.caller, p.workspace_id)
        .await?
        .into_iter()
        .map(|m| MemberView {
            me: m.user_id == user.user_id,
            user_id: m.user_id,
            email: m.email,
            name: m.name.unwrap_or_default(),
            role: m.role.as_str(),
            status: m.status.as_str(),
        })
        .collect();
    let commission_text = p.commission.words(&p.currency);
    let (commission_type, percent, amount) = match p.commission {
        CommissionSpec::Percentage { percent } => {
            ("percentage", percent.to_string(), String::new())
        }
        CommissionSpec::Flat { amount_cents } => (
            "flat",
            String::new(),
            major_units_text(amount_cents, &p.currency),
        ),
    };
    let currency = p.currency.to_ascii_uppercase();
    let (address, source) = s.app.public_address().await?;
    Ok(SettingsPage {
        require_two_factor: s
            .app
            .require_two_factor(&frame.caller, p.workspace_id)
            .await?,
        settings_href: Tab::Settings.href(p.id),
        fraud_rules: super::review::rule_choices(&p.fraud_rules),
        fraud_actions: super::review::ACTIONS,
        address: Field::new("public_url", "Address of this server").with(address),
        address_source: match source {
            AddressSource::Configured => "set by REFTRACK_PUBLIC_URL",
            AddressSource::Confirmed => "confirmed by an owner",
            AddressSource::Listening => {
                "the address the server listens on, as nobody has confirmed one yet"
            }
        },
        address_configured: source == AddressSource::Configured,
        address_token: Field::new("admin_token", "Admin token"),
        address_error: None,
        amount_hint: format!("For a fixed amount, in {currency}."),
        min_payout_hint: format!(
            "In {currency}: partners with a smaller due balance wait for the next payout."
        ),
        name: Field::new("name", "Program name").with(p.name.clone()),
        commission_type: commission_type.into(),
        commission_percent: Field::new("commission_percent", "Percent of each sale").with(percent),
        commission_amount: Field::new("commission_amount", "Amount per sale").with(amount),
        cookie_window_days: Field::new("cookie_window_days", "Cookie window (days)")
            .with(p.cookie_window_days.to_string()),
        commission_hold_days: Field::new("commission_hold_days", "Hold period (days)")
            .with(p.commission_hold_days.to_string()),
        min_payout: Field::new("min_payout_cents", "Minimum payout")
            .with(major_units_text(p.min_payout_cents, &p.currency)),
        applications_open: p.applications_open,
        partner_links_allowed: p.partner_links_allowed,
        allowed_origins: Field::new("allowed_origins", "Allowed origins")
            .with(p.allowed_origins.join("\n")),
        destination_url: Field::new("destination_url", "Destination URL")
            .with(p.destination_url.clone().unwrap_or_default()),
        stripe_webhook_secret: Field::new("stripe_webhook_secret", "Stripe webhook secret"),
        webhook_secret_set: p.stripe_webhook_secret_set,
        form_error: None,
        commission_text,
        min_payout_text: display_amount(p.min_payout_cents, &p.currency),
        apply_href: format!("/partner/apply/{}", p.id),
        token_prefix: p.api_token_prefix.clone(),
        previous_token_until: p
            .previous_token_expires_at
            .as_deref()
            .and_then(IsoValue::parse)
            .map(|v| v.lower_ms())
            .filter(|until| *until > s.app.now_ms())
            .map(Moment::of),
        members,
        member_email: Field::new("email", "Email"),
        member_role: "member".into(),
        members_error: None,
        roles: ROLES,
        chrome: frame.chrome,
        head: frame.head,
    })
}

/// `GET /app/programs/{id}/settings`.
pub(super) async fn settings(
    State(s): State<AppState>,
    user: Signed,
    ProgramId(id): ProgramId,
    Query(q): Query,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Settings, q.text("done").as_deref()).await?;
    Ok(ok(&settings_page(&s, frame, &user).await?))
}

/// `value`, or nothing with its error added to `errors`.
fn kept<T>(errors: &mut Vec<String>, value: Result<T, String>) -> Option<T> {
    value.map_err(|e| errors.push(e)).ok()
}

/// The change the settings form asks for, with the errors of the fields it could not
/// read (those fields are left out of the change).
fn patch(form: &Posted, currency: &str) -> (ProgramPatchBody, Vec<String>) {
    let mut errors = Vec::new();
    let integer = |field: &str| -> Result<i64, String> {
        form.get(field)
            .trim()
            .parse()
            .map_err(|_| format!("{field} must be a whole number"))
    };
    let commission = match form.get("commission_type").as_str() {
        "flat" => kept(
            &mut errors,
            parse_major_units(&form.get("commission_amount"), currency)
                .map(|amount_cents| CommissionSpec::Flat { amount_cents })
                .ok_or_else(|| "commission_amount must be an amount like 5.00".into()),
        ),
        _ => kept(
            &mut errors,
            form.get("commission_percent")
                .trim()
                .trim_end_matches('%')
                .parse()
                .map(|percent| CommissionSpec::Percentage { percent })
                .map_err(|_| "commission_percent must be a number like 20 or 12.5".into()),
        ),
    };
    let cookie_window_days = kept(&mut errors, integer("cookie_window_days"));
    let commission_hold_days = kept(&mut errors, integer("commission_hold_days"));
    let min_payout_cents = kept(
        &mut errors,
        parse_major_units(&form.get("min_payout_cents"), currency)
            .ok_or_else(|| "min_payout_cents must be an amount like 50.00".into()),
    );
    let secret = form.text("stripe_webhook_secret");
    let body = ProgramPatchBody {
        name: Some(form.get("name")),
        cookie_window_days,
        currency: None,
        commission,
        recurring_commission_months: None,
        allowed_origins: Some(
            form.get("allowed_origins")
                .split(['\n', ',', ' '])
                .map(str::trim)
                .filter(|o| !o.is_empty())
                .map(str::to_string)
                .collect(),
        ),
        // Blank keeps the secret; the checkbox removes it.
        stripe_webhook_secret: if form.text("remove_secret").is_some() {
            Some(None)
        } else {
            secret.map(Some)
        },
        commission_hold_days,
        min_payout_cents,
        applications_open: Some(form.text("applications_open").is_some()),
        partner_links_allowed: Some(form.text("partner_links_allowed").is_some()),
        // Blank removes it: redirect links then need a destination of their own.
        destination_url: Some(form.text("destination_url")),
        // The fraud rules have a form of their own (`review::save_rules`).
        fraud_rules: None,
    };
    (body, errors)
}

/// `POST /app/programs/{id}/settings`: the program's fields; errors beside them, with
/// everything typed kept (but the webhook secret).
pub(super) async fn save(
    State(s): State<AppState>,
    user: Signed,
    ProgramId(id): ProgramId,
    form: Posted,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Settings, None).await?;
    // The role first, as the API's use case does: a viewer learns nothing from
    // the form's own validation.
    frame.allow_change(&s, Record::Program(id)).await?;
    let currency = frame.program.currency.clone();
    // Every field's error at once: what the form could not read, and what the use
    // case would refuse in the rest; else the use case's own answer.
    let (b, mut refused) = patch(&form, &currency);
    refused.extend(b.problems());
    if refused.is_empty() {
        match s.app.update_program(&frame.caller, id, b).await.invalid()? {
            Ok(_) => return Ok(done(&Tab::Settings.href(id), "settings")),
            Err(t) => refused.push(t),
        }
    }
    let mut page = settings_page(&s, frame, &user).await?;
    page.commission_type = if form.get("commission_type") == "flat" {
        "flat"
    } else {
        "percentage"
    }
    .into();
    page.applications_open = form.text("applications_open").is_some();
    page.partner_links_allowed = form.text("partner_links_allowed").is_some();
    let refused = refused.iter().map(|text| {
        text.replace("commission.percent", "commission_percent")
            .replace("commission.amount_cents", "commission_amount")
            .replace("allowed_origins: ", "allowed_origins ")
    });
    page.form_error = show_refused(
        &form,
        refused,
        &mut [
            &mut page.name,
            &mut page.commission_percent,
            &mut page.commission_amount,
            &mut page.cookie_window_days,
            &mut page.commission_hold_days,
            &mut page.min_payout,
            &mut page.allowed_origins,
            &mut page.destination_url,
            &mut page.stripe_webhook_secret,
        ],
    );
    // A secret typed is never sent back.
    page.stripe_webhook_secret.value.clear();
    Ok(render(StatusCode::BAD_REQUEST, &page))
}

/// `POST /app/programs/{id}/settings/token`: after a confirmation, a new API token (the
/// old one stops working at once), shown on the setup page with its snippets.
pub(super) async fn rotate_token(
    State(s): State<AppState>,
    user: Signed,
    ProgramId(id): ProgramId,
    form: Posted,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Settings, None).await?;
    // Only those who may rotate it are asked, or told what is wrong with the hours.
    frame.allow_change(&s, Record::Program(id)).await?;
    let keep = form.get("keep_old_for_hours");
    let hours = match keep.as_str() {
        "" => 0,
        text => text.parse::<i64>().map_err(|_| {
            PageError::new(
                StatusCode::BAD_REQUEST,
                "keep_old_for_hours must be a whole number of hours",
            )
        })?,
    };
    if !confirmed(&form) {
        let consequence = if hours == 0 {
            "A new token is made and the current one stops working at once: every server \
             that sends leads, sales or refunds with it is refused until it has the new one."
                .to_string()
        } else {
            format!(
                "A new token is made; the current one keeps working for {hours} hour{} \
                 more, then every server still sending it is refused. Any token an earlier \
                 rotation kept working stops now.",
                if hours == 1 { "" } else { "s" }
            )
        };
        let mut page = Confirm::new(
            frame,
            "Rotate the API token?".into(),
            &consequence,
            format!("{}/token", Tab::Settings.href(id)),
        );
        page.fields.push(("keep_old_for_hours", hours.to_string()));
        page.button = "Rotate token";
        page.cancel = format!("{}#token", Tab::Settings.href(id));
        return Ok(ok(&page));
    }
    let body = RotateTokenBody {
        keep_old_for_hours: Some(hours),
    };
    let rotated = s.app.rotate_program_token(&frame.caller, id, body).await?;
    drop(frame);
    let change = if hours > 0 { "token-kept" } else { "token" };
    Ok(setup_page(&s, &user, id, rotated.api_token, Some(change)).await?)
}

/// `POST /app/programs/{id}/settings/members`: adds a user of this server, by email, to
/// the program's workspace.
pub(super) async fn add_member(
    State(s): State<AppState>,
    user: Signed,
    ProgramId(id): ProgramId,
    form: Posted,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Settings, None).await?;
    let workspace_id = frame.program.workspace_id;
    let role = form.get("role");
    let email = form.get("email");
    let added = s
        .app
        .add_member_by_email(&frame.caller, workspace_id, &email, &role);
    let Err(refused) = added.await.refused()? else {
        return Ok(see_other(&format!(
            "{}?done=member#members",
            Tab::Settings.href(id)
        )));
    };
    let mut page = settings_page(&s, frame, &user).await?;
    if ROLES.contains(&role.as_str()) {
        page.member_role = role;
    }
    page.members_error = show_refused(&form, [refused], &mut [&mut page.member_email]);
    Ok(render(StatusCode::BAD_REQUEST, &page))
}

/// `POST /app/programs/{id}/settings/members/{user_id}`: a member's role and status.
pub(super) async fn update_member(
    State(s): State<AppState>,
    user: Signed,
    Ids(id, member_id): Ids,
    form: Posted,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Settings, None).await?;
    let b = MemberPatchBody {
        role: form.text("role"),
        status: form.text("status"),
    };
    let workspace_id = frame.program.workspace_id;
    let saved = s
        .app
        .update_member(&frame.caller, workspace_id, member_id, b);
    let Err(refused) = saved.await.refused()? else {
        return Ok(see_other(&format!(
            "{}?done=member-saved#members",
            Tab::Settings.href(id)
        )));
    };
    let mut page = settings_page(&s, frame, &user).await?;
    page.members_error = Some(refused);
    Ok(render(StatusCode::BAD_REQUEST, &page))
}

/// `POST /app/programs/{id}/settings/members/{user_id}/remove`: takes the user out of the
/// program's workspace.
pub(super) async fn remove_member(
    State(s): State<AppState>,
    user: Signed,
    Ids(id, member_id): Ids,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Settings, None).await?;
    let workspace_id = frame.program.workspace_id;
    let removed = s.app.remove_member(&frame.caller, workspace_id, member_id);
    let Err(refused) = removed.await.refused()? else {
        return Ok(see_other(&format!(
            "{}?done=member-removed#members",
            Tab::Settings.href(id)
        )));
    };
    let mut page = settings_page(&s, frame, &user).await?;
    page.members_error = Some(refused);
    Ok(render(StatusCode::CONFLICT, &page))
}

/// `POST /app/programs/{id}/settings/two-factor`: whether the program's workspace
/// requires two-factor sign-in of its members (owners only, as on the API).
pub(super) async fn require_two_factor(
    State(s): State<AppState>,
    user: Signed,
    ProgramId(id): ProgramId,
    form: Posted,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Settings, None).await?;
    let on = form.get("require_two_factor") == "yes";
    s.app
        .set_require_two_factor(&frame.caller, frame.program.workspace_id, on)
        .await?;
    Ok(see_other(&format!(
        "{}?done=two-factor#security",
        Tab::Settings.href(id)
    )))
}

/// `POST /app/programs/{id}/settings/address`: the server's address, which the links
/// Reftrack hands out and mails name; it needs the admin token, since it is the whole
/// server's and not the workspace's.
pub(super) async fn save_address(
    State(s): State<AppState>,
    user: Signed,
    ProgramId(id): ProgramId,
    form: Posted,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Settings, None).await?;
    frame.allow_change(&s, Record::Program(id)).await?;
    let saved = s
        .app
        .set_public_url(&form.get("admin_token"), &form.get("public_url"))
        .await;
    let (status, refused) = match saved {
        Ok(_) => {
            return Ok(see_other(&format!(
                "{}?done=address#address",
                Tab::Settings.href(id)
            )))
        }
        Err(app::Error::Invalid(text)) => (StatusCode::BAD_REQUEST, text),
        Err(app::Error::Forbidden(text)) => (StatusCode::FORBIDDEN, text),
        Err(app::Error::Conflict(text)) => (StatusCode::CONFLICT, text),
        Err(e) => return Err(e.into()),
    };
    let mut page = settings_page(&s, frame, &user).await?;
    let mut fields = [&mut page.address, &mut page.address_token];
    page.address_error = show_refused(&form, [refused], &mut fields);
    // A token typed is never sent back.
    page.address_token.value.clear();
    Ok(render(status, &page))
}
