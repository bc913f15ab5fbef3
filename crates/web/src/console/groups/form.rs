//! The form of a group's sale reward, without script: the base rule and its renewal
//! limit, then rows of modifiers, each with a few condition slots. A posted form becomes
//! the rewards' wire form; a refusal, from the form's own reading or the service's
//! validation (which names the wire form's field), is shown beside the input it is about.

use serde_json::{json, Map, Value};

use crate::pages::view::Posted;
use reftrack_domain::commission::CommissionRule;
use reftrack_domain::money::{major_units_text, parse_major_units};
use reftrack_domain::rewards::{Attribute, ConditionValue, Operator, Reward, RewardKind, Rewards};

/// Modifier rows the form shows beyond a reward's own.
const SPARE_MODIFIERS: usize = 2;
/// Condition slots a modifier row shows at least.
const CONDITION_SLOTS: usize = 2;
/// The most modifiers and conditions the wire form takes.
const MAX_MODIFIERS: usize = 20;
const MAX_CONDITIONS: usize = 10;

/// One option of a select.
pub(super) struct Opt {
    pub(super) value: String,
    pub(super) label: String,
    pub(super) selected: bool,
}

/// An input of the form: a text box, or a select when it has options.
pub(super) struct Input {
    pub(super) name: String,
    pub(super) label: String,
    pub(super) value: String,
    pub(super) options: Vec<Opt>,
    pub(super) error: Option<String>,
}

impl Input {
    fn text(name: String, label: String, value: String) -> Input {
        Input {
            name,
            label,
            value,
            options: Vec::new(),
            error: None,
        }
    }

    fn select(name: String, label: String, value: &str, choices: &[(&str, &str)]) -> Input {
        Input {
            options: choices
                .iter()
                .map(|(v, l)| Opt {
                    value: (*v).into(),
                    label: (*l).into(),
                    selected: *v == value,
                })
                .collect(),
            value: value.into(),
            ..Input::text(name, label, String::new())
        }
    }
}

/// One condition slot of a modifier row.
pub(super) struct ConditionRow {
    pub(super) attribute: Input,
    pub(super) operator: Input,
    pub(super) value: Input,
}

/// One modifier row.
pub(super) struct ModifierRow {
    /// 1-based, for its legend.
    pub(super) n: usize,
    pub(super) kind: Input,
    pub(super) amount: Input,
    pub(super) conditions: Vec<ConditionRow>,
}

/// The reward form.
pub(super) struct RewardForm {
    pub(super) kind: Input,
    pub(super) amount: Input,
    pub(super) months: Input,
    pub(super) modifiers: Vec<ModifierRow>,
    /// The lead reward's flat amount; empty: a lead earns nothing.
    pub(super) lead: Input,
}

/// The label of the lead reward's input.
const LEAD_LABEL: &str = "A customer's first lead earns (a flat amount; empty: nothing)";

const KINDS: [(&str, &str); 3] = [
    ("percentage", "A percentage of the sale"),
    ("flat", "A flat amount"),
    ("none", "Nothing"),
];
const MODIFIER_KINDS: [(&str, &str); 3] = [
    ("", "Not used"),
    ("percentage", "A percentage of the sale"),
    ("flat", "A flat amount"),
];
const ATTRIBUTES: [(&str, &str); 7] = [
    ("", "—"),
    ("product_id", "Product"),
    ("customer_country", "Customer's country"),
    ("amount_cents", "Sale amount"),
    ("recurring", "Renewal (yes or no)"),
    ("partner_sales", "Partner's earlier sales"),
    ("partner_revenue_cents", "Partner's revenue"),
];
const OPERATORS: [(&str, &str); 8] = [
    ("eq", "is"),
    ("neq", "is not"),
    ("in", "is one of"),
    ("not_in", "is none of"),
    ("gte", "at least"),
    ("gt", "more than"),
    ("lte", "at most"),
    ("lt", "less than"),
];

/// A rule as the form shows it: its kind and its amount (a percent, or major units).
fn rule_text(rule: CommissionRule, currency: &str) -> (&'static str, String) {
    match rule {
        CommissionRule::Percentage { bps } => {
            let percent = bps as f64 / 100.0;
            ("percentage", format!("{percent}"))
        }
        CommissionRule::Flat { amount_cents } => ("flat", major_units_text(amount_cents, currency)),
    }
}

fn value_text(attribute: Attribute, value: &ConditionValue, currency: &str) -> String {
    match value {
        ConditionValue::Text(t) => t.clone(),
        ConditionValue::Texts(ts) => ts.join(", "),
        ConditionValue::Integer(n) => match attribute {
            Attribute::AmountCents | Attribute::PartnerRevenueCents => {
                major_units_text(*n, currency)
            }
            _ => n.to_string(),
        },
        ConditionValue::Boolean(b) => if *b { "yes" } else { "no" }.into(),
    }
}

fn condition_row(
    m: usize,
    c: usize,
    attribute: &str,
    operator: &str,
    value: String,
) -> ConditionRow {
    let n = c + 1;
    ConditionRow {
        attribute: Input::select(
            format!("m{m}_c{c}_attribute"),
            format!("Modifier {} condition {n}: what it reads", m + 1),
            attribute,
            &ATTRIBUTES,
        ),
        operator: Input::select(
            format!("m{m}_c{c}_operator"),
            format!("Modifier {} condition {n}: comparison", m + 1),
            operator,
            &OPERATORS,
        ),
        value: Input::text(
            format!("m{m}_c{c}_value"),
            format!("Modifier {} condition {n}: value", m + 1),
            value,
        ),
    }
}

fn modifier_row(
    m: usize,
    kind: &str,
    amount: String,
    conditions: Vec<ConditionRow>,
) -> ModifierRow {
    ModifierRow {
        n: m + 1,
        kind: Input::select(
            format!("m{m}_kind"),
            format!("Modifier {} pays", m + 1),
            kind,
            &MODIFIER_KINDS,
        ),
        amount: Input::text(
            format!("m{m}_amount"),
            format!("Modifier {}: percent or amount", m + 1),
            amount,
        ),
        conditions,
    }
}

impl RewardForm {
    /// The form showing a group's sale and lead rewards.
    pub(super) fn of(sale: Option<&Reward>, lead: Option<&Reward>, currency: &str) -> RewardForm {
        let (kind, amount) = match sale {
            Some(r) => rule_text(r.rule, currency),
            None => ("none", String::new()),
        };
        let months = sale
            .and_then(|r| r.max_duration_months)
            .map(|m| m.to_string())
            .unwrap_or_default();
        let mut modifiers = Vec::new();
        for (m, modifier) in sale
            .map(|r| r.modifiers.as_slice())
            .unwrap_or(&[])
            .iter()
            .enumerate()
        {
            let (kind, amount) = rule_text(modifier.rule, currency);
            let mut conditions: Vec<ConditionRow> = modifier
                .conditions
                .iter()
                .enumerate()
                .map(|(c, cond)| {
                    condition_row(
                        m,
                        c,
                        cond.attribute.as_str(),
                        cond.operator.as_str(),
                        value_text(cond.attribute, &cond.value, currency),
                    )
                })
                .collect();
            let slots = (conditions.len() + 1).clamp(CONDITION_SLOTS, MAX_CONDITIONS);
            for c in conditions.len()..slots {
                conditions.push(condition_row(m, c, "", "eq", String::new()));
            }
            modifiers.push(modifier_row(m, kind, amount, conditions));
        }
        let rows = (modifiers.len() + SPARE_MODIFIERS).min(MAX_MODIFIERS);
        for m in modifiers.len()..rows {
            let conditions = (0..CONDITION_SLOTS)
                .map(|c| condition_row(m, c, "", "eq", String::new()))
                .collect();
            modifiers.push(modifier_row(m, "", String::new(), conditions));
        }
        RewardForm {
            kind: Input::select("sale_kind".into(), "A sale earns".into(), kind, &KINDS),
            amount: Input::text("sale_amount".into(), "Percent or amount".into(), amount),
            months: Input::text(
                "sale_months".into(),
                "Renewals earn for (months)".into(),
                months,
            ),
            modifiers,
            lead: Input::text(
                "lead_amount".into(),
                LEAD_LABEL.into(),
                lead.map(|r| rule_text(r.rule, currency).1)
                    .unwrap_or_default(),
            ),
        }
    }

    /// The form as `form` posted it: every input shows what was sent.
    pub(super) fn posted(form: &Posted) -> RewardForm {
        let rows = form
            .text("modifier_rows")
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap_or(SPARE_MODIFIERS)
            .min(MAX_MODIFIERS);
        let modifiers = (0..rows)
            .map(|m| {
                let slots = form
                    .text(&format!("m{m}_slots"))
                    .and_then(|n| n.parse::<usize>().ok())
                    .unwrap_or(CONDITION_SLOTS)
                    .min(MAX_CONDITIONS);
                let conditions = (0..slots)
                    .map(|c| {
                        condition_row(
                            m,
                            c,
                            &form.get(&format!("m{m}_c{c}_attribute")),
                            &form.get(&format!("m{m}_c{c}_operator")),
                            form.get(&format!("m{m}_c{c}_value")),
                        )
                    })
                    .collect();
                modifier_row(
                    m,
                    &form.get(&format!("m{m}_kind")),
                    form.get(&format!("m{m}_amount")),
                    conditions,
                )
            })
            .collect();
        RewardForm {
            kind: Input::select(
                "sale_kind".into(),
                "A sale earns".into(),
                &form.get("sale_kind"),
                &KINDS,
            ),
            amount: Input::text(
                "sale_amount".into(),
                "Percent or amount".into(),
                form.get("sale_amount"),
            ),
            months: Input::text(
                "sale_months".into(),
                "Renewals earn for (months)".into(),
                form.get("sale_months"),
            ),
            modifiers,
            lead: Input::text(
                "lead_amount".into(),
                LEAD_LABEL.into(),
                form.get("lead_amount"),
            ),
        }
    }

    fn input_mut(&mut self, name: &str) -> Option<&mut Input> {
        let mut all: Vec<&mut Input> = vec![
            &mut self.kind,
            &mut self.amount,
            &mut self.months,
            &mut self.lead,
        ];
        for m in &mut self.modifiers {
            all.push(&mut m.kind);
            all.push(&mut m.amount);
            for c in &mut m.conditions {
                all.push(&mut c.attribute);
                all.push(&mut c.operator);
                all.push(&mut c.value);
            }
        }
        all.into_iter().find(|i| i.name == name)
    }

    /// Puts `message` beside input `name`; `false` when the form has no such input.
    pub(super) fn refuse(&mut self, name: &str, message: &str) -> bool {
        match self.input_mut(name) {
            Some(input) => {
                input.error = Some(message.to_string());
                true
            }
            None => false,
        }
    }

    /// Whether any input shows an error.
    pub(super) fn has_errors(&self) -> bool {
        self.kind.error.is_some()
            || self.amount.error.is_some()
            || self.months.error.is_some()
            || self.lead.error.is_some()
            || self.modifiers.iter().any(|m| {
                m.kind.error.is_some()
                    || m.amount.error.is_some()
                    || m.conditions.iter().any(|c| {
                        c.attribute.error.is_some()
                            || c.operator.error.is_some()
                            || c.value.error.is_some()
                    })
            })
    }
}

/// Where the wire form's modifiers and conditions came from in the form: the row of
/// modifier `k`, and the slot of its condition `l`.
#[derive(Debug, Default)]
pub(super) struct Origin {
    modifiers: Vec<(usize, Vec<usize>)>,
}

impl Origin {
    /// The input a refusal of the service names (`rewards.sale.modifiers[1].conditions[0].value:
    /// …`), with the message to show beside it.
    pub(super) fn input_of(&self, refusal: &str) -> Option<(String, String)> {
        let (path, message) = refusal.split_once(": ")?;
        let message = message.to_string();
        if path.starts_with("rewards.lead") {
            return Some(("lead_amount".into(), message));
        }
        let rest = path.strip_prefix("rewards.sale")?;
        if rest.is_empty() || rest == ".type" {
            return Some(("sale_kind".into(), message));
        }
        if rest == ".percent" || rest == ".amount_cents" {
            return Some(("sale_amount".into(), message));
        }
        if rest == ".max_duration_months" {
            return Some(("sale_months".into(), message));
        }
        let rest = rest.strip_prefix(".modifiers[")?;
        let (k, rest) = rest.split_once(']')?;
        let (row, slots) = self.modifiers.get(k.parse::<usize>().ok()?)?;
        let Some(rest) = rest.strip_prefix(".conditions[") else {
            let field = if rest == ".type" { "kind" } else { "amount" };
            return Some((format!("m{row}_{field}"), message));
        };
        let (l, rest) = rest.split_once(']')?;
        let slot = slots.get(l.parse::<usize>().ok()?)?;
        let field = match rest.trim_start_matches('.').split(['.', '[']).next() {
            Some("attribute") => "attribute",
            Some("operator") => "operator",
            _ => "value",
        };
        Some((format!("m{row}_c{slot}_{field}"), message))
    }
}

/// A rule's wire fields read from a kind and an amount typed in a form.
fn rule_fields(kind: &str, amount: &str, currency: &str) -> Result<Map<String, Value>, String> {
    let mut map = Map::new();
    match kind {
        "percentage" => {
            let percent: f64 = amount
                .trim()
                .trim_end_matches('%')
                .trim()
                .parse()
                .map_err(|_| "Enter a percentage such as 30 or 12.5".to_string())?;
            map.insert("type".into(), json!("percentage"));
            map.insert("percent".into(), json!(percent));
        }
        _ => {
            let cents = parse_major_units(amount.trim(), currency)
                .ok_or_else(|| "Enter an amount such as 5.00".to_string())?;
            map.insert("type".into(), json!("flat"));
            map.insert("amount_cents".into(), json!(cents));
        }
    }
    Ok(map)
}

/// A condition's value as the wire form takes it, read from the text typed.
fn condition_value(
    attribute: &str,
    operator: &str,
    text: &str,
    currency: &str,
) -> Result<Value, String> {
    let text = text.trim();
    match Attribute::parse(attribute) {
        Some(Attribute::ProductId | Attribute::CustomerCountry) => {
            let country = attribute == "customer_country";
            let one = |t: &str| {
                if country {
                    t.trim().to_ascii_uppercase()
                } else {
                    t.trim().to_string()
                }
            };
            if matches!(
                Operator::parse(operator),
                Some(Operator::In | Operator::NotIn)
            ) {
                Ok(json!(text
                    .split(',')
                    .map(one)
                    .filter(|t| !t.is_empty())
                    .collect::<Vec<_>>()))
            } else {
                Ok(json!(one(text)))
            }
        }
        Some(Attribute::AmountCents | Attribute::PartnerRevenueCents) => {
            parse_major_units(text, currency)
                .map(|c| json!(c))
                .ok_or_else(|| "Enter an amount such as 100.00".to_string())
        }
        Some(Attribute::PartnerSales) => text
            .parse::<i64>()
            .map(|n| json!(n))
            .map_err(|_| "Enter a whole number of sales".to_string()),
        Some(Attribute::Recurring) => match text.to_ascii_lowercase().as_str() {
            "yes" | "true" => Ok(json!(true)),
            "no" | "false" => Ok(json!(false)),
            _ => Err("Enter yes or no".to_string()),
        },
        None => Err("Choose what the condition reads".to_string()),
    }
}

/// The rewards a posted form asks for, with where each modifier and condition came from;
/// or the inputs it cannot read, each with its message.
pub(super) fn rewards_of(
    form: &Posted,
    currency: &str,
) -> Result<(Value, Origin), Vec<(String, String)>> {
    let mut errors = Vec::new();
    let mut origin = Origin::default();
    let lead = match form.text("lead_amount") {
        None => Value::Null,
        Some(amount) => match rule_fields("flat", &amount, currency) {
            Ok(map) => Value::Object(map),
            Err(e) => {
                errors.push(("lead_amount".to_string(), e));
                Value::Null
            }
        },
    };
    let kind = form.get("sale_kind");
    if kind == "none" {
        if !errors.is_empty() {
            return Err(errors);
        }
        return Ok((json!({"sale": null, "lead": lead}), origin));
    }
    let mut sale = match rule_fields(&kind, &form.get("sale_amount"), currency) {
        Ok(map) => map,
        Err(e) => {
            errors.push(("sale_amount".to_string(), e));
            Map::new()
        }
    };
    match form.text("sale_months") {
        None => {
            sale.insert("max_duration_months".into(), Value::Null);
        }
        Some(m) => match m.parse::<i64>() {
            Ok(m) => {
                sale.insert("max_duration_months".into(), json!(m));
            }
            Err(_) => errors.push((
                "sale_months".into(),
                "Enter a whole number of months, or leave it empty".into(),
            )),
        },
    }
    let rows = form
        .text("modifier_rows")
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(0)
        .min(MAX_MODIFIERS);
    let mut modifiers = Vec::new();
    for m in 0..rows {
        let kind = form.get(&format!("m{m}_kind"));
        if kind.is_empty() {
            continue;
        }
        let mut modifier = match rule_fields(&kind, &form.get(&format!("m{m}_amount")), currency) {
            Ok(map) => map,
            Err(e) => {
                errors.push((format!("m{m}_amount"), e));
                Map::new()
            }
        };
        let slots = form
            .text(&format!("m{m}_slots"))
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap_or(0)
            .min(MAX_CONDITIONS);
        let mut conditions = Vec::new();
        let mut from = Vec::new();
        for c in 0..slots {
            let attribute = form.get(&format!("m{m}_c{c}_attribute"));
            if attribute.is_empty() {
                continue;
            }
            let operator = form.get(&format!("m{m}_c{c}_operator"));
            match condition_value(
                &attribute,
                &operator,
                &form.get(&format!("m{m}_c{c}_value")),
                currency,
            ) {
                Ok(value) => {
                    conditions.push(
                        json!({"attribute": attribute, "operator": operator, "value": value}),
                    );
                    from.push(c);
                }
                Err(e) => errors.push((format!("m{m}_c{c}_value"), e)),
            }
        }
        if conditions.is_empty()
            && !errors
                .iter()
                .any(|(name, _)| name.starts_with(&format!("m{m}_")))
        {
            errors.push((
                format!("m{m}_c0_attribute"),
                "A modifier needs at least one condition".into(),
            ));
        }
        modifier.insert("conditions".into(), Value::Array(conditions));
        modifiers.push(Value::Object(modifier));
        origin.modifiers.push((m, from));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    sale.insert("modifiers".into(), Value::Array(modifiers));
    Ok((json!({"sale": Value::Object(sale), "lead": lead}), origin))
}

/// A group's rewards in a partner's words, one line each ([`Reward::words`]): the sale
/// reward's, then the lead reward's.
pub(super) fn reward_words(rewards: &Rewards, currency: &str) -> Vec<String> {
    let mut words = match &rewards.sale {
        Some(r) => r.words(RewardKind::Sale, currency),
        None => vec!["Nothing for sales".into()],
    };
    if let Some(lead) = &rewards.lead {
        words.extend(lead.words(RewardKind::Lead, currency));
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    fn posted(pairs: &[(&str, &str)]) -> Posted {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(pairs)
            .finish();
        Posted::parse(body.as_bytes())
    }

    #[test]
    fn a_posted_form_becomes_the_wire_form_and_refusals_find_their_input() {
        let form = posted(&[
            ("sale_kind", "percentage"),
            ("sale_amount", "30"),
            ("sale_months", "12"),
            ("modifier_rows", "3"),
            ("m0_kind", ""),
            ("m0_slots", "2"),
            ("m1_kind", "percentage"),
            ("m1_amount", "40"),
            ("m1_slots", "2"),
            ("m1_c0_attribute", ""),
            ("m1_c1_attribute", "product_id"),
            ("m1_c1_operator", "in"),
            ("m1_c1_value", "prod_a, prod_b"),
            ("m2_kind", "flat"),
            ("m2_amount", "5.00"),
            ("m2_slots", "1"),
            ("m2_c0_attribute", "partner_revenue_cents"),
            ("m2_c0_operator", "gte"),
            ("m2_c0_value", "10,000.00"),
        ]);
        let (value, origin) = rewards_of(&form, "usd").expect("readable");
        assert_eq!(
            value,
            json!({"sale": {"type": "percentage", "percent": 30.0, "max_duration_months": 12,
                "modifiers": [
                    {"type": "percentage", "percent": 40.0, "conditions": [
                        {"attribute": "product_id", "operator": "in", "value": ["prod_a", "prod_b"]}]},
                    {"type": "flat", "amount_cents": 500, "conditions": [
                        {"attribute": "partner_revenue_cents", "operator": "gte", "value": 1000000}]}]},
                "lead": null})
        );
        assert_eq!(
            origin.input_of("rewards.sale.modifiers[0].conditions[0].operator: must be eq"),
            Some(("m1_c1_operator".into(), "must be eq".into()))
        );
        assert_eq!(
            origin.input_of("rewards.sale.modifiers[1].percent: too big"),
            Some(("m2_amount".into(), "too big".into()))
        );
        assert_eq!(
            origin.input_of("rewards.sale.percent: too big"),
            Some(("sale_amount".into(), "too big".into()))
        );
        assert_eq!(
            origin.input_of("rewards.lead.amount_cents: too big"),
            Some(("lead_amount".into(), "too big".into()))
        );
        assert_eq!(origin.input_of("name must be 1 to 100 characters"), None);
    }

    #[test]
    fn a_lead_amount_becomes_a_flat_lead_reward() {
        let form = posted(&[("sale_kind", "none"), ("lead_amount", "2.50")]);
        let (value, _) = rewards_of(&form, "usd").expect("readable");
        assert_eq!(
            value,
            json!({"sale": null, "lead": {"type": "flat", "amount_cents": 250}})
        );
        let form = posted(&[("sale_kind", "none"), ("lead_amount", "two")]);
        let errors = rewards_of(&form, "usd").unwrap_err();
        assert_eq!(errors[0].0, "lead_amount");
    }

    #[test]
    fn unreadable_inputs_are_each_refused() {
        let form = posted(&[
            ("sale_kind", "flat"),
            ("sale_amount", "five"),
            ("sale_months", "x"),
            ("modifier_rows", "1"),
            ("m0_kind", "percentage"),
            ("m0_amount", "10"),
            ("m0_slots", "1"),
            ("m0_c0_attribute", "amount_cents"),
            ("m0_c0_operator", "gt"),
            ("m0_c0_value", "lots"),
            ("lead_amount", "free"),
        ]);
        let errors = rewards_of(&form, "usd").unwrap_err();
        let names: Vec<&str> = errors.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            ["lead_amount", "sale_amount", "sale_months", "m0_c0_value"]
        );
    }
}
