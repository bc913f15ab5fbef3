//! The Bounties pages of a program: its bounties with their goals in words and the
//! partners that earned each, a form for a new one, and a bounty's page that changes or
//! archives it ([`reftrack_service::programs::bounties`]). Forms work without script;
//! a refused value is shown beside its field with what was typed.

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;

use super::frame::{done, Frame, Head, Ids, Tab};
use super::session::Signed;
use crate::pages::view::{
    ok, place_error, render, Chrome, Field, Moment, PageError, PageResult, Posted, ProgramId,
    Query, Refusal,
};
use crate::AppState;
use reftrack_domain::bounties::{offer_words, Metric};
use reftrack_domain::money::{major_units_text, parse_major_units};
use reftrack_domain::time::day_of;
use reftrack_service as app;
use reftrack_service::programs::bounties::{BountyBody, BountyPatchBody};
use reftrack_store::{BountyEarner, BountyRow, Group, Record};

fn list_href(id: i64) -> String {
    format!("/app/programs/{id}/bounties")
}

fn bounty_href(id: i64, bounty_id: i64) -> String {
    format!("{}/{bounty_id}", list_href(id))
}

/// The metrics offered, with their words.
const METRICS: [(&str, &str); 3] = [
    ("sales", "Sales"),
    ("leads", "Signups"),
    ("revenue_cents", "Revenue"),
];

/// What a goal the form cannot read is told.
const GOAL_HINT: &str = "Enter a whole number of sales or signups, or an amount such as 1,000.00";
/// What an amount the form cannot read is told.
const AMOUNT_HINT: &str = "Enter an amount above 0, such as 50.00";

/// A bounty as the list shows it.
struct BountyCard {
    id: i64,
    name: String,
    /// `Reach 10 sales to earn $50.00`.
    words: String,
    groups: String,
    window: String,
    archived: bool,
    earners: Vec<(i64, String, Moment)>,
}

/// A group as a checkbox of the bounty form.
struct GroupChoice {
    id: String,
    name: String,
    checked: bool,
}

/// The fields of the bounty form.
struct BountyForm {
    name: Field,
    metric: Field,
    metrics: Vec<(&'static str, &'static str, bool)>,
    threshold: Field,
    amount: Field,
    groups: Field,
    group_choices: Vec<GroupChoice>,
    starts_at: Field,
    ends_at: Field,
    form_error: Option<String>,
    /// The goal's and the reward's hints, naming the program's currency.
    goal_hint: String,
    amount_hint: String,
}

impl BountyForm {
    fn new(groups: &[Group], currency: &str) -> BountyForm {
        let currency = currency.to_ascii_uppercase();
        BountyForm {
            goal_hint: format!(
                "A number of sales or signups, or for revenue an amount in {currency} (1,000.00)."
            ),
            amount_hint: format!(
                "What a partner who reaches the goal earns, once, in {currency} (50.00)."
            ),
            name: Field::new("name", "Name"),
            metric: Field::new("metric", "What it counts").with("sales"),
            metrics: Vec::new(),
            threshold: Field::new("threshold", "Goal"),
            amount: Field::new("amount", "Reward"),
            groups: Field::new("group_ids", "Groups"),
            group_choices: groups
                .iter()
                .map(|g| GroupChoice {
                    id: g.id.to_string(),
                    name: g.name.clone(),
                    checked: false,
                })
                .collect(),
            starts_at: Field::new("starts_at", "Starts"),
            ends_at: Field::new("ends_at", "Ends"),
            form_error: None,
        }
        .finished()
    }

    /// The form showing bounty `b`.
    fn of(b: &BountyRow, groups: &[Group], currency: &str) -> BountyForm {
        let mut f = BountyForm::new(groups, currency);
        f.name = f.name.with(b.name.clone());
        f.metric = f.metric.with(b.metric.as_str());
        f.threshold = f.threshold.with(match b.metric {
            Metric::RevenueCents => major_units_text(b.threshold, currency),
            _ => b.threshold.to_string(),
        });
        f.amount = f.amount.with(major_units_text(b.amount_cents, currency));
        for c in &mut f.group_choices {
            c.checked = b.group_ids.iter().any(|id| id.to_string() == c.id);
        }
        f.starts_at = f
            .starts_at
            .with(b.starts_at.map(day_of).unwrap_or_default());
        f.ends_at = f.ends_at.with(b.ends_at.map(day_of).unwrap_or_default());
        f.finished()
    }

    /// The form as `form` posted it.
    fn posted(mut self, form: &Posted) -> BountyForm {
        form.refill(&mut [
            &mut self.name,
            &mut self.metric,
            &mut self.threshold,
            &mut self.amount,
            &mut self.starts_at,
            &mut self.ends_at,
        ]);
        let chosen = form.all("group_ids");
        for c in &mut self.group_choices {
            c.checked = chosen.contains(&c.id);
        }
        self.finished()
    }

    fn finished(mut self) -> BountyForm {
        self.metrics = METRICS
            .iter()
            .map(|(v, l)| (*v, *l, *v == self.metric.value))
            .collect();
        self
    }

    /// The body the form asks for, or the field it cannot read with its message.
    fn body(&self, form: &Posted, currency: &str) -> Result<BountyBody, (&'static str, String)> {
        let metric = form.get("metric");
        let goal = form.get("threshold");
        let threshold = if metric == "revenue_cents" {
            parse_major_units(goal.trim(), currency)
        } else {
            goal.trim().replace(',', "").parse::<i64>().ok()
        }
        .ok_or(("threshold", GOAL_HINT.to_string()))?;
        let amount_cents = parse_major_units(form.get("amount").trim(), currency)
            .filter(|c| *c > 0)
            .ok_or(("amount", AMOUNT_HINT.to_string()))?;
        let group_ids = form
            .all("group_ids")
            .iter()
            .filter_map(|v| v.parse::<i64>().ok())
            .collect();
        Ok(BountyBody {
            name: form.get("name"),
            metric,
            threshold,
            amount_cents,
            group_ids: Some(group_ids),
            starts_at: form.text("starts_at"),
            ends_at: form.text("ends_at"),
        })
    }

    /// Puts the service's refusal beside its field, else atop the form.
    fn refuse(&mut self, text: String) {
        if text.starts_with("amount_cents") {
            self.amount.error = Some(AMOUNT_HINT.into());
            return;
        }
        self.form_error = place_error(
            &text,
            &mut [
                &mut self.name,
                &mut self.metric,
                &mut self.threshold,
                &mut self.groups,
                &mut self.starts_at,
                &mut self.ends_at,
            ],
        );
    }

    /// Puts the form's own refusal of `field` (`threshold` or `amount`) beside it.
    fn refuse_field(&mut self, field: &str, text: String) {
        match field {
            "threshold" => self.threshold.error = Some(text),
            _ => self.amount.error = Some(text),
        }
    }
}

#[derive(Template)]
#[template(path = "console/bounties.html")]
struct BountiesPage {
    chrome: Chrome,
    head: Head,
    bounties: Vec<BountyCard>,
    form: BountyForm,
}

#[derive(Template)]
#[template(path = "console/bounty.html")]
struct BountyPage {
    chrome: Chrome,
    head: Head,
    id: i64,
    card: BountyCard,
    form: BountyForm,
}

fn card(
    b: &BountyRow,
    earners: Vec<(i64, String, Moment)>,
    groups: &[Group],
    currency: &str,
) -> BountyCard {
    let names: Vec<&str> = groups
        .iter()
        .filter(|g| b.group_ids.contains(&g.id))
        .map(|g| g.name.as_str())
        .collect();
    let window = match (b.starts_at, b.ends_at) {
        (None, None) => "from its creation, with no end".to_string(),
        (Some(s), None) => format!("from {}", day_of(s)),
        (None, Some(e)) => format!("until {} (not included)", day_of(e)),
        (Some(s), Some(e)) => format!("from {} until {} (not included)", day_of(s), day_of(e)),
    };
    BountyCard {
        id: b.id,
        name: b.name.clone(),
        words: offer_words(b.metric, b.threshold, b.amount_cents, currency),
        groups: if names.is_empty() {
            "every group".into()
        } else {
            names.join(", ")
        },
        window,
        archived: b.archived,
        earners,
    }
}

/// The partners that earned a bounty, as its card lists them.
fn earner_rows(earners: Vec<BountyEarner>) -> Vec<(i64, String, Moment)> {
    earners
        .into_iter()
        .map(|e| (e.partner_id, e.partner_name, Moment::of(e.earned_at)))
        .collect()
}

async fn bounties_page(s: &AppState, frame: Frame) -> app::Result<BountiesPage> {
    let currency = frame.program.currency.clone();
    let groups = s
        .app
        .list_groups(&frame.caller, frame.program.id)
        .await?
        .data;
    let listed = s
        .app
        .bounties_with_earners(&frame.caller, frame.program.id)
        .await?;
    let bounties = listed
        .into_iter()
        .map(|b| card(&b.bounty, earner_rows(b.earners), &groups, &currency))
        .collect();
    Ok(BountiesPage {
        bounties,
        form: BountyForm::new(&groups, &currency),
        chrome: frame.chrome,
        head: frame.head,
    })
}

/// `GET /app/programs/{id}/bounties`: the program's bounties, and a new one.
pub(super) async fn list(
    State(s): State<AppState>,
    user: Signed,
    ProgramId(id): ProgramId,
    Query(q): Query,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Partners, q.text("done").as_deref()).await?;
    Ok(ok(&bounties_page(&s, frame).await?))
}

/// `POST /app/programs/{id}/bounties`: a new bounty.
pub(super) async fn create(
    State(s): State<AppState>,
    user: Signed,
    ProgramId(id): ProgramId,
    form: Posted,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Partners, None).await?;
    frame.allow_change(&s, Record::Program(id)).await?;
    let currency = frame.program.currency.clone();
    let caller = frame.caller.clone();
    let mut page = bounties_page(&s, frame).await?;
    page.form = page.form.posted(&form);
    match page.form.body(&form, &currency) {
        Err((field, text)) => page.form.refuse_field(field, text),
        Ok(body) => match s.app.create_bounty(&caller, id, body).await.refused()? {
            Ok(_) => return Ok(done(&list_href(id), "bounty-created")),
            Err(text) => page.form.refuse(text),
        },
    }
    Ok(render(StatusCode::BAD_REQUEST, &page))
}

/// Bounty `bounty_id` when it is one of the frame's program's (404 otherwise).
async fn own_bounty(s: &AppState, frame: &Frame, bounty_id: i64) -> Result<BountyRow, PageError> {
    let b = s.app.bounty(&frame.caller, bounty_id).await?;
    if b.program_id != frame.program.id {
        return Err(PageError::not_yours());
    }
    Ok(b)
}

async fn bounty_page(s: &AppState, frame: Frame, b: &BountyRow) -> app::Result<BountyPage> {
    let currency = frame.program.currency.clone();
    let groups = s
        .app
        .list_groups(&frame.caller, frame.program.id)
        .await?
        .data;
    let earners = earner_rows(s.app.bounty_earners(&frame.caller, b.id).await?);
    Ok(BountyPage {
        id: b.id,
        card: card(b, earners, &groups, &currency),
        form: BountyForm::of(b, &groups, &currency),
        chrome: frame.chrome,
        head: frame.head,
    })
}

/// `GET /app/programs/{id}/bounties/{bounty_id}`: a bounty, who earned it, and its form.
pub(super) async fn detail(
    State(s): State<AppState>,
    user: Signed,
    Ids(id, bounty_id): Ids,
    Query(q): Query,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Partners, q.text("done").as_deref()).await?;
    let b = own_bounty(&s, &frame, bounty_id).await?;
    Ok(ok(&bounty_page(&s, frame, &b).await?))
}

/// `POST /app/programs/{id}/bounties/{bounty_id}`: its new fields; they apply to the
/// events recorded from now on.
pub(super) async fn save(
    State(s): State<AppState>,
    user: Signed,
    Ids(id, bounty_id): Ids,
    form: Posted,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Partners, None).await?;
    frame.allow_change(&s, Record::Bounty(bounty_id)).await?;
    let b = own_bounty(&s, &frame, bounty_id).await?;
    let currency = frame.program.currency.clone();
    let caller = frame.caller.clone();
    let mut page = bounty_page(&s, frame, &b).await?;
    page.form = page.form.posted(&form);
    match page.form.body(&form, &currency) {
        Err((field, text)) => page.form.refuse_field(field, text),
        Ok(body) => {
            let patch = BountyPatchBody {
                name: Some(body.name),
                metric: Some(body.metric),
                threshold: Some(body.threshold),
                amount_cents: Some(body.amount_cents),
                group_ids: body.group_ids,
                starts_at: Some(body.starts_at),
                ends_at: Some(body.ends_at),
            };
            match s
                .app
                .update_bounty(&caller, bounty_id, patch)
                .await
                .refused()?
            {
                Ok(_) => return Ok(done(&bounty_href(id, bounty_id), "bounty-saved")),
                Err(text) => page.form.refuse(text),
            }
        }
    }
    Ok(render(StatusCode::BAD_REQUEST, &page))
}

/// `POST /app/programs/{id}/bounties/{bounty_id}/archive`: archives the bounty.
pub(super) async fn archive(
    State(s): State<AppState>,
    user: Signed,
    Ids(id, bounty_id): Ids,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Partners, None).await?;
    own_bounty(&s, &frame, bounty_id).await?;
    s.app.archive_bounty(&frame.caller, bounty_id).await?;
    Ok(done(&bounty_href(id, bounty_id), "bounty-archived"))
}
