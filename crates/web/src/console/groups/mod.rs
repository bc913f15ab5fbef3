//! A program's partner groups, under its Partners tab: the list (each group's reward in
//! words, its partners, a new group), and a group's page (its name, hold and rewards
//! with its modifiers in a form that works without script, each refused input marked
//! beside it; its deletion). The rules are the service's
//! ([`reftrack_service::programs::groups`]).

mod form;

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;

use super::frame::{done, Frame, Head, Ids, Tab};
use super::session::Signed;
use crate::pages::view::{
    ok, render, Chrome, Field, PageError, PageResult, Posted, ProgramId, Query, Refusal,
};
use crate::AppState;
use form::{reward_words, rewards_of, RewardForm};
use reftrack_domain::rewards::Rewards;
use reftrack_service as app;
use reftrack_service::programs::groups::{GroupBody, GroupPatchBody};
use reftrack_store::{Group, Record};

/// The groups page of program `id`.
fn list_href(id: i64) -> String {
    format!(
        "{}/groups",
        Tab::Partners.href(id).trim_end_matches("/partners")
    )
}

/// The page of group `group_id` of program `id`.
fn group_href(id: i64, group_id: i64) -> String {
    format!("{}/{group_id}", list_href(id))
}

/// A group's sale reward, read from its stored rewards.
fn group_rewards(g: &Group) -> Rewards {
    Rewards::from_json(&g.rewards, "rewards").unwrap_or_default()
}

/// A group as the list shows it.
struct GroupRow {
    id: i64,
    name: String,
    is_default: bool,
    partners: i64,
    /// Its rewards in a partner's words, the sale reward's base first.
    words: Vec<String>,
    /// Its hold in days, or the program's.
    hold: String,
}

#[derive(Template)]
#[template(path = "console/groups.html")]
struct GroupsPage {
    chrome: Chrome,
    head: Head,
    groups: Vec<GroupRow>,
    name: Field,
    form_error: Option<String>,
}

async fn groups_page(s: &AppState, frame: Frame) -> app::Result<GroupsPage> {
    let currency = frame.program.currency.clone();
    let listed = s.app.list_groups(&frame.caller, frame.program.id).await?;
    Ok(GroupsPage {
        groups: listed
            .data
            .iter()
            .map(|g| GroupRow {
                id: g.id,
                name: g.name.clone(),
                is_default: g.is_default,
                partners: g.partner_count,
                words: reward_words(&group_rewards(g), &currency),
                hold: g
                    .commission_hold_days
                    .map_or_else(|| "the program's".into(), |d| format!("{d} days")),
            })
            .collect(),
        name: Field::new("name", "Name"),
        form_error: None,
        chrome: frame.chrome,
        head: frame.head,
    })
}

/// `GET /app/programs/{id}/groups`: the program's groups, and a new one.
pub(super) async fn list(
    State(s): State<AppState>,
    user: Signed,
    ProgramId(id): ProgramId,
    Query(q): Query,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Partners, q.text("done").as_deref()).await?;
    Ok(ok(&groups_page(&s, frame).await?))
}

/// `POST /app/programs/{id}/groups`: a new group, with a copy of the default group's
/// rewards; its page opens to set them.
pub(super) async fn create(
    State(s): State<AppState>,
    user: Signed,
    ProgramId(id): ProgramId,
    form: Posted,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Partners, None).await?;
    let b = GroupBody {
        name: form.get("name"),
        rewards: None,
        commission_hold_days: None,
    };
    let refused = match s.app.create_group(&frame.caller, id, b).await.refused()? {
        Ok(g) => return Ok(done(&group_href(id, g.id), "group-created")),
        Err(text) => text,
    };
    let mut page = groups_page(&s, frame).await?;
    page.name = page.name.with(form.get("name"));
    page.name.error = Some(refused);
    Ok(render(StatusCode::BAD_REQUEST, &page))
}

#[derive(Template)]
#[template(path = "console/group.html")]
struct GroupPage {
    chrome: Chrome,
    head: Head,
    id: i64,
    is_default: bool,
    partners: i64,
    name: Field,
    hold: Field,
    reward: RewardForm,
    form_error: Option<String>,
    /// The program's currency, for the amounts' hint.
    currency: String,
}

/// Group `group_id` when it is one of the frame's program's (404 otherwise).
async fn own_group(s: &AppState, frame: &Frame, group_id: i64) -> Result<Group, PageError> {
    let g = s.app.group(&frame.caller, group_id).await?;
    if g.program_id != frame.program.id {
        return Err(PageError::not_yours());
    }
    Ok(g)
}

fn group_page(frame: Frame, g: &Group) -> GroupPage {
    let currency = frame.program.currency.clone();
    GroupPage {
        id: g.id,
        is_default: g.is_default,
        partners: g.partner_count,
        name: Field::new("name", "Name").with(g.name.clone()),
        hold: Field::new("commission_hold_days", "Hold (days)").with(
            g.commission_hold_days
                .map(|d| d.to_string())
                .unwrap_or_default(),
        ),
        reward: {
            let r = group_rewards(g);
            RewardForm::of(r.sale.as_ref(), r.lead.as_ref(), &currency)
        },
        form_error: None,
        currency: currency.to_ascii_uppercase(),
        chrome: frame.chrome,
        head: frame.head,
    }
}

/// `GET /app/programs/{id}/groups/{group_id}`: a group and its form.
pub(super) async fn detail(
    State(s): State<AppState>,
    user: Signed,
    Ids(id, group_id): Ids,
    Query(q): Query,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Partners, q.text("done").as_deref()).await?;
    let g = own_group(&s, &frame, group_id).await?;
    Ok(ok(&group_page(frame, &g)))
}

/// `POST /app/programs/{id}/groups/{group_id}`: its name, hold and rewards; a refusal
/// shows the form as sent with the error beside its input, and nothing is stored.
pub(super) async fn save(
    State(s): State<AppState>,
    user: Signed,
    Ids(id, group_id): Ids,
    form: Posted,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Partners, None).await?;
    frame.allow_change(&s, Record::Group(group_id)).await?;
    let g = own_group(&s, &frame, group_id).await?;
    let currency = frame.program.currency.clone();
    let caller = frame.caller.clone();
    let mut page = group_page(frame, &g);
    page.name = page.name.with(form.get("name"));
    page.hold = page.hold.with(form.get("commission_hold_days"));
    page.reward = RewardForm::posted(&form);
    let hold = match form.text("commission_hold_days") {
        None => Some(None),
        Some(d) => match d.parse::<i64>() {
            Ok(d) => Some(Some(d)),
            Err(_) => {
                page.hold.error = Some(
                    "Enter a whole number of days, or leave it empty for the program's".into(),
                );
                None
            }
        },
    };
    let read = rewards_of(&form, &currency);
    if let Err(errors) = &read {
        for (name, message) in errors {
            page.reward.refuse(name, message);
        }
    }
    let (Ok((rewards, origin)), Some(hold)) = (read, hold) else {
        page.form_error = Some("Some fields need a change: see below.".into());
        return Ok(render(StatusCode::BAD_REQUEST, &page));
    };
    let b = GroupPatchBody {
        name: Some(form.get("name")),
        rewards: Some(rewards),
        commission_hold_days: Some(hold),
    };
    let refused = match s.app.update_group(&caller, group_id, b).await.refused()? {
        Ok(_) => return Ok(done(&group_href(id, group_id), "group-saved")),
        Err(text) => text,
    };
    match origin.input_of(&refused) {
        Some((name, message)) if page.reward.refuse(&name, &message) => {}
        _ if refused.starts_with("name") || refused.contains("group with this name") => {
            page.name.error = Some(refused);
        }
        _ if refused.starts_with("commission_hold_days") => page.hold.error = Some(refused),
        _ => page.form_error = Some(refused),
    }
    if page.reward.has_errors() && page.form_error.is_none() {
        page.form_error = Some("Some fields need a change: see below.".into());
    }
    Ok(render(StatusCode::BAD_REQUEST, &page))
}

/// `POST /app/programs/{id}/groups/{group_id}/delete`: deletes a group that is not the
/// default and has no partners.
pub(super) async fn delete(
    State(s): State<AppState>,
    user: Signed,
    Ids(id, group_id): Ids,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Partners, None).await?;
    own_group(&s, &frame, group_id).await?;
    s.app.delete_group(&frame.caller, group_id).await?;
    Ok(done(&list_href(id), "group-deleted"))
}
