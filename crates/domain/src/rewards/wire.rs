//! The wire form of rewards: [`Rewards::from_json`] validates it into [`Rewards`], naming
//! the full path of a refused field; [`Rewards::to_json`] and the `*Spec` structs (the
//! shape the OpenAPI document shows) give it back.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::{
    Attribute, Condition, ConditionValue, FieldError, Modifier, Operator, Reward, RewardKind,
    Rewards, MAX_CONDITIONS, MAX_DURATION_MONTHS, MAX_LIST_VALUES, MAX_MODIFIERS,
    MAX_PRODUCT_ID_CHARS,
};
use crate::commission::{CommissionRule, MAX_FLAT_CENTS};

/// A group's rewards on the wire: `{"sale": Reward|null, "lead": Reward|null}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RewardsSpec {
    /// What an attributed sale earns; null: a sale creates no commission.
    pub sale: Option<RewardSpec>,
    /// What an attributed customer's first lead earns (flat only); null: a lead creates no
    /// commission.
    pub lead: Option<RewardSpec>,
}

/// How a reward or a modifier computes its amount.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum RewardType {
    /// A share of the sale's amount in the program's currency (`percent`).
    Percentage,
    /// A fixed amount in the program's currency (`amount_cents`).
    Flat,
}

/// One reward: `{"type": "percentage", "percent": 30}` or `{"type": "flat",
/// "amount_cents": 200}`, with a duration and modifiers for a sale reward.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RewardSpec {
    /// `percentage` or `flat`; a lead reward is flat.
    #[serde(rename = "type")]
    pub kind: RewardType,
    /// For `percentage`: greater than 0 and at most 100, at most two decimals.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "percent_out"
    )]
    pub percent: Option<f64>,
    /// For `flat`: minor units of the program's currency, 0 to 100000000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amount_cents: Option<i64>,
    /// Sale rewards only: null, every renewal earns; 0, only the customer's first payment;
    /// N (at most 1200), payments within N months of the customer's first attributed sale.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    #[schema(value_type = Option<i64>)]
    pub max_duration_months: Option<Option<i64>>,
    /// Sale rewards only, at most 20: the first whose conditions all hold replaces the base.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub modifiers: Vec<ModifierSpec>,
}

/// A modifier: when all its conditions hold, its type and amount (and its
/// `max_duration_months`, when it names one) apply instead of the reward's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ModifierSpec {
    /// 1 to 10 conditions, all of which must hold.
    pub conditions: Vec<ConditionSpec>,
    /// `percentage` or `flat`.
    #[serde(rename = "type")]
    pub kind: RewardType,
    /// For `percentage`: greater than 0 and at most 100, at most two decimals.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "percent_out"
    )]
    pub percent: Option<f64>,
    /// For `flat`: minor units of the program's currency, 0 to 100000000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amount_cents: Option<i64>,
    /// Absent: the reward's duration; null: every renewal earns; else as the reward's.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    #[schema(value_type = Option<i64>)]
    pub max_duration_months: Option<Option<i64>>,
}

/// A condition: `{"attribute": "product_id", "operator": "in", "value": ["prod_1"]}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ConditionSpec {
    /// What of the sale is tested.
    pub attribute: Attribute,
    /// How: `product_id` and `customer_country` take `eq`, `neq`, `in`, `not_in`;
    /// `amount_cents` takes `eq`, `gt`, `gte`, `lt`, `lte`; `recurring` takes `eq`;
    /// `partner_sales` and `partner_revenue_cents` take `gt`, `gte`, `lt`, `lte`.
    pub operator: Operator,
    /// A text (a list of 1 to 100 texts for `in` / `not_in`) for `product_id` (1 to 255
    /// characters) and `customer_country` (two upper-case letters); a whole number, 0 or
    /// more, for `amount_cents`, `partner_sales` and `partner_revenue_cents`; a boolean for
    /// `recurring`.
    pub value: Value,
}

/// A whole percentage as an integer (`30`, not `30.0`), else as it is.
fn percent_out<S: Serializer>(percent: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match *percent {
        Some(p) if p.fract() == 0.0 && p.abs() < 1e15 => s.serialize_i64(p as i64),
        Some(p) => s.serialize_f64(p),
        None => s.serialize_none(),
    }
}

/// A field that is present reads as `Some`, null included (absent is the `default`).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<i64>>, D::Error> {
    Option::<i64>::deserialize(d).map(Some)
}

impl Rewards {
    /// Reads and validates the wire form at `field` (e.g. `rewards`); an error names the
    /// full path of the refused field (`rewards.sale.modifiers[1].conditions[0].operator`).
    ///
    /// Beyond the spec: unknown keys are refused; a lead reward takes no modifiers and no
    /// duration (a null `max_duration_months` is read as absent).
    pub fn from_json(value: &Value, field: &str) -> Result<Rewards, FieldError> {
        let map = value
            .as_object()
            .ok_or_else(|| FieldError::new(field, "must be an object with sale and lead"))?;
        known_keys(map, field, &["sale", "lead"])?;
        let read = |key: &str, kind| match map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => read_reward(v, &format!("{field}.{key}"), kind).map(Some),
        };
        Ok(Rewards {
            sale: read("sale", RewardKind::Sale)?,
            lead: read("lead", RewardKind::Lead)?,
        })
    }

    /// The wire form, which [`Rewards::from_json`] reads back as it is.
    pub fn to_json(&self) -> Value {
        // Nothing in a spec fails to serialise (no map keys, only finite numbers).
        serde_json::to_value(self.spec()).unwrap_or(Value::Null)
    }

    /// The wire form as its documented structs.
    pub fn spec(&self) -> RewardsSpec {
        RewardsSpec {
            sale: self.sale.as_ref().map(|r| r.spec(RewardKind::Sale)),
            lead: self.lead.as_ref().map(|r| r.spec(RewardKind::Lead)),
        }
    }
}

impl Reward {
    /// The wire form of a reward for `kind` (a sale reward always says its duration).
    pub fn spec(&self, kind: RewardKind) -> RewardSpec {
        let (kind_of_rule, percent, amount_cents) = rule_fields(self.rule);
        RewardSpec {
            kind: kind_of_rule,
            percent,
            amount_cents,
            max_duration_months: match kind {
                RewardKind::Sale => Some(self.max_duration_months),
                RewardKind::Lead => self.max_duration_months.map(Some),
            },
            modifiers: self.modifiers.iter().map(Modifier::spec).collect(),
        }
    }
}

impl Modifier {
    /// The wire form of a modifier.
    pub fn spec(&self) -> ModifierSpec {
        let (kind, percent, amount_cents) = rule_fields(self.rule);
        ModifierSpec {
            conditions: self.conditions.iter().map(Condition::spec).collect(),
            kind,
            percent,
            amount_cents,
            max_duration_months: self.max_duration_months,
        }
    }
}

impl Condition {
    /// The wire form of a condition.
    pub fn spec(&self) -> ConditionSpec {
        ConditionSpec {
            attribute: self.attribute,
            operator: self.operator,
            value: match &self.value {
                ConditionValue::Text(t) => Value::from(t.as_str()),
                ConditionValue::Texts(ts) => Value::from(ts.clone()),
                ConditionValue::Integer(n) => Value::from(*n),
                ConditionValue::Boolean(b) => Value::from(*b),
            },
        }
    }
}

fn rule_fields(rule: CommissionRule) -> (RewardType, Option<f64>, Option<i64>) {
    match rule {
        CommissionRule::Percentage { bps } => {
            (RewardType::Percentage, Some(bps as f64 / 100.0), None)
        }
        CommissionRule::Flat { amount_cents } => (RewardType::Flat, None, Some(amount_cents)),
    }
}

fn known_keys(map: &Map<String, Value>, path: &str, allowed: &[&str]) -> Result<(), FieldError> {
    match map.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(key) => Err(FieldError::new(
            format!("{path}.{key}"),
            format!("is not a known field (expected {})", allowed.join(", ")),
        )),
        None => Ok(()),
    }
}

fn object<'v>(value: &'v Value, path: &str) -> Result<&'v Map<String, Value>, FieldError> {
    value
        .as_object()
        .ok_or_else(|| FieldError::new(path, "must be an object"))
}

/// A key's value, absent and null alike being `None`.
fn get<'v>(map: &'v Map<String, Value>, key: &str) -> Option<&'v Value> {
    map.get(key).filter(|v| !v.is_null())
}

fn read_reward(value: &Value, path: &str, kind: RewardKind) -> Result<Reward, FieldError> {
    let map = value
        .as_object()
        .ok_or_else(|| FieldError::new(path, "must be an object or null"))?;
    known_keys(
        map,
        path,
        &[
            "type",
            "percent",
            "amount_cents",
            "max_duration_months",
            "modifiers",
        ],
    )?;
    let rule = read_rule(map, path, kind)?;
    let max_duration_months = match get(map, "max_duration_months") {
        None => None,
        Some(_) if kind == RewardKind::Lead => {
            return Err(FieldError::new(
                format!("{path}.max_duration_months"),
                "only a sale reward has a duration",
            ))
        }
        Some(v) => Some(read_duration(v, path)?),
    };
    let modifiers_path = format!("{path}.modifiers");
    let modifiers = match get(map, "modifiers") {
        None => Vec::new(),
        Some(Value::Array(items)) => {
            if kind == RewardKind::Lead && !items.is_empty() {
                return Err(FieldError::new(
                    modifiers_path,
                    "a lead reward has no modifiers",
                ));
            }
            if items.len() > MAX_MODIFIERS {
                return Err(FieldError::new(
                    modifiers_path,
                    format!("must have at most {MAX_MODIFIERS} modifiers"),
                ));
            }
            items
                .iter()
                .enumerate()
                .map(|(i, m)| read_modifier(m, &format!("{modifiers_path}[{i}]"), kind))
                .collect::<Result<_, _>>()?
        }
        Some(_) => {
            return Err(FieldError::new(
                modifiers_path,
                format!("must be a list of at most {MAX_MODIFIERS} modifiers"),
            ))
        }
    };
    Ok(Reward {
        rule,
        max_duration_months,
        modifiers,
    })
}

fn read_rule(
    map: &Map<String, Value>,
    path: &str,
    kind: RewardKind,
) -> Result<CommissionRule, FieldError> {
    let type_path = format!("{path}.type");
    let percentage = match map.get("type").and_then(Value::as_str) {
        Some("percentage") => true,
        Some("flat") => false,
        _ => return Err(FieldError::new(type_path, "must be percentage or flat")),
    };
    if percentage && kind == RewardKind::Lead {
        return Err(FieldError::new(type_path, "a lead reward is flat"));
    }
    let (wanted, foreign) = if percentage {
        ("percent", "amount_cents")
    } else {
        ("amount_cents", "percent")
    };
    if get(map, foreign).is_some() {
        let which = if percentage { "flat" } else { "percentage" };
        return Err(FieldError::new(
            format!("{path}.{foreign}"),
            format!("only a {which} reward has {foreign}"),
        ));
    }
    let wanted_path = format!("{path}.{wanted}");
    let Some(value) = get(map, wanted) else {
        let which = if percentage { "percentage" } else { "flat" };
        return Err(FieldError::new(
            wanted_path,
            format!("is required for a {which} reward"),
        ));
    };
    if percentage {
        read_percent(value, &wanted_path).map(|bps| CommissionRule::Percentage { bps })
    } else {
        read_flat(value, &wanted_path).map(|amount_cents| CommissionRule::Flat { amount_cents })
    }
}

/// A percent, 0 < P <= 100 with at most two decimals, in basis points.
fn read_percent(value: &Value, path: &str) -> Result<i64, FieldError> {
    let refused = || {
        FieldError::new(
            path,
            "must be a number greater than 0 and at most 100, with at most two decimals",
        )
    };
    let bps = value.as_f64().ok_or_else(refused)? * 100.0;
    let whole = bps.round();
    // A decimal percent is rarely exact in binary: 12.34 * 100 is 1234.0000000000002.
    if (bps - whole).abs() > 1e-6 || !(1.0..=10_000.0).contains(&whole) {
        return Err(refused());
    }
    Ok(whole as i64)
}

fn read_flat(value: &Value, path: &str) -> Result<i64, FieldError> {
    value
        .as_i64()
        .filter(|n| (0..=MAX_FLAT_CENTS).contains(n))
        .ok_or_else(|| {
            FieldError::new(
                path,
                format!("must be a whole number of minor units from 0 to {MAX_FLAT_CENTS}"),
            )
        })
}

/// A non-null `max_duration_months` of the object at `path`.
fn read_duration(value: &Value, path: &str) -> Result<i64, FieldError> {
    value
        .as_i64()
        .filter(|n| (0..=MAX_DURATION_MONTHS).contains(n))
        .ok_or_else(|| {
            FieldError::new(
                format!("{path}.max_duration_months"),
                format!(
                    "must be null (every renewal earns) or a whole number of months from 0 \
                     to {MAX_DURATION_MONTHS}"
                ),
            )
        })
}

fn read_modifier(value: &Value, path: &str, kind: RewardKind) -> Result<Modifier, FieldError> {
    let map = object(value, path)?;
    known_keys(
        map,
        path,
        &[
            "conditions",
            "type",
            "percent",
            "amount_cents",
            "max_duration_months",
        ],
    )?;
    let conditions_path = format!("{path}.conditions");
    let conditions = match map.get("conditions") {
        Some(Value::Array(items)) if items.is_empty() => {
            return Err(FieldError::new(
                conditions_path,
                "must have at least one condition",
            ))
        }
        Some(Value::Array(items)) if items.len() > MAX_CONDITIONS => {
            return Err(FieldError::new(
                conditions_path,
                format!("must have at most {MAX_CONDITIONS} conditions"),
            ))
        }
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, c)| read_condition(c, &format!("{conditions_path}[{i}]")))
            .collect::<Result<_, _>>()?,
        _ => {
            return Err(FieldError::new(
                conditions_path,
                format!("must be a list of 1 to {MAX_CONDITIONS} conditions"),
            ))
        }
    };
    let rule = read_rule(map, path, kind)?;
    let max_duration_months = match map.get("max_duration_months") {
        None => None,
        Some(Value::Null) => Some(None),
        Some(_) if kind == RewardKind::Lead => {
            return Err(FieldError::new(
                format!("{path}.max_duration_months"),
                "only a sale reward has a duration",
            ))
        }
        Some(v) => Some(Some(read_duration(v, path)?)),
    };
    Ok(Modifier {
        conditions,
        rule,
        max_duration_months,
    })
}

fn read_condition(value: &Value, path: &str) -> Result<Condition, FieldError> {
    let map = object(value, path)?;
    known_keys(map, path, &["attribute", "operator", "value"])?;
    let attribute = map
        .get("attribute")
        .and_then(Value::as_str)
        .and_then(Attribute::parse)
        .ok_or_else(|| {
            let names: Vec<_> = Attribute::ALL.iter().map(|a| a.as_str()).collect();
            FieldError::new(
                format!("{path}.attribute"),
                format!("must be one of {}", names.join(", ")),
            )
        })?;
    let allowed = attribute.operators();
    let operator = map
        .get("operator")
        .and_then(Value::as_str)
        .and_then(Operator::parse)
        .filter(|o| allowed.contains(o))
        .ok_or_else(|| {
            let names: Vec<_> = allowed.iter().map(|o| o.as_str()).collect();
            FieldError::new(
                format!("{path}.operator"),
                format!(
                    "must be one of {} for {}",
                    names.join(", "),
                    attribute.as_str()
                ),
            )
        })?;
    let value_path = format!("{path}.value");
    let value = read_value(
        attribute,
        operator,
        map.get("value").unwrap_or(&Value::Null),
        &value_path,
    )?;
    Ok(Condition {
        attribute,
        operator,
        value,
    })
}

fn read_value(
    attribute: Attribute,
    operator: Operator,
    value: &Value,
    path: &str,
) -> Result<ConditionValue, FieldError> {
    let whole = |what: &str| {
        value
            .as_i64()
            .filter(|n| *n >= 0)
            .map(ConditionValue::Integer)
            .ok_or_else(|| {
                FieldError::new(path, format!("must be a whole number of {what}, 0 or more"))
            })
    };
    match attribute {
        Attribute::AmountCents | Attribute::PartnerRevenueCents => whole("minor units"),
        Attribute::PartnerSales => whole("sales"),
        Attribute::Recurring => value
            .as_bool()
            .map(ConditionValue::Boolean)
            .ok_or_else(|| FieldError::new(path, "must be true or false")),
        Attribute::ProductId | Attribute::CustomerCountry => {
            let text = |v: &Value, path: &str| read_text(attribute, v, path);
            if matches!(operator, Operator::In | Operator::NotIn) {
                let what = text_kind(attribute).1;
                let refused = || {
                    FieldError::new(
                        path,
                        format!("must be a list of 1 to {MAX_LIST_VALUES} {what}"),
                    )
                };
                match value {
                    Value::Array(items) if (1..=MAX_LIST_VALUES).contains(&items.len()) => items
                        .iter()
                        .enumerate()
                        .map(|(i, v)| text(v, &format!("{path}[{i}]")))
                        .collect::<Result<_, _>>()
                        .map(ConditionValue::Texts),
                    _ => Err(refused()),
                }
            } else {
                text(value, path).map(ConditionValue::Text)
            }
        }
    }
}

/// What a text attribute's value is, in words: one and several.
fn text_kind(attribute: Attribute) -> (&'static str, &'static str) {
    match attribute {
        Attribute::CustomerCountry => (
            "a country code of two upper-case letters such as DE",
            "country codes of two upper-case letters such as DE",
        ),
        _ => (
            "a product id of 1 to 255 characters",
            "product ids of 1 to 255 characters",
        ),
    }
}

fn read_text(attribute: Attribute, value: &Value, path: &str) -> Result<String, FieldError> {
    let fits = |t: &str| match attribute {
        Attribute::CustomerCountry => t.len() == 2 && t.bytes().all(|b| b.is_ascii_uppercase()),
        _ => (1..=MAX_PRODUCT_ID_CHARS).contains(&t.chars().count()),
    };
    value
        .as_str()
        .filter(|t| fits(t))
        .map(str::to_owned)
        .ok_or_else(|| FieldError::new(path, format!("must be {}", text_kind(attribute).0)))
}
