//! The bonus form of a partner's page: a one-off commission an owner gives
//! ([`reftrack_service::money::bonuses`]).

use axum::extract::State;
use axum::http::StatusCode;

use super::{partner_href, partner_page};
use crate::console::frame::{done, Frame, Ids, Tab};
use crate::console::session::Signed;
use crate::pages::view::{render, PageResult, Posted, Refusal};
use crate::AppState;
use reftrack_domain::money::parse_major_units;
use reftrack_service::money::bonuses::BonusBody;
use reftrack_store::Record;

/// What an amount the form cannot read is told.
const AMOUNT_HINT: &str = "Enter an amount above 0, such as 25.00";

/// `POST /app/programs/{id}/partners/{partner_id}/bonuses`: a bonus of the amount typed
/// (in the program's currency) with its description; a refusal shows the page again with
/// the error beside its field, and nothing is stored.
pub(in crate::console) async fn create_bonus(
    State(s): State<AppState>,
    user: Signed,
    Ids(id, partner_id): Ids,
    form: Posted,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Partners, None).await?;
    frame.allow_change(&s, Record::Program(id)).await?;
    let caller = frame.caller.clone();
    let amount =
        parse_major_units(form.get("amount").trim(), &frame.program.currency).filter(|c| *c > 0);
    let text = match amount {
        None => AMOUNT_HINT.to_string(),
        Some(amount_cents) => {
            let b = BonusBody {
                amount_cents,
                description: form.get("description"),
            };
            match s
                .app
                .give_bonus(&caller, id, partner_id, b)
                .await
                .refused()?
            {
                Ok(_) => return Ok(done(&partner_href(id, partner_id), "bonus")),
                Err(text) => text,
            }
        }
    };
    let mut page = partner_page(&s, frame, partner_id).await?;
    page.bonus_amount = page.bonus_amount.with(form.get("amount"));
    page.bonus_description = page.bonus_description.with(form.get("description"));
    if text == AMOUNT_HINT || text.starts_with("amount_cents") {
        page.bonus_amount.error = Some(AMOUNT_HINT.into());
    } else if text.starts_with("description") {
        page.bonus_description.error = Some("Enter 1 to 500 characters".into());
    } else {
        page.bonus_error = Some(text);
    }
    Ok(render(StatusCode::BAD_REQUEST, &page.finished()))
}
