//! Field types of the tracking requests. Each reads one JSON value the way the tracking
//! interface asks (trimmed identifiers, cut free text, positive integers, …) and, when
//! the value does not fit, fails with the interface's exact text. Texts name their
//! field as `{field}`; [`super::extract::TrackJson`] puts in the field's path.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use serde_json::{Map, Value};

use reftrack_domain::metrics::IsoValue;
use reftrack_domain::money::normalize_currency;
use reftrack_store::EventKind;

/// Longest identifier accepted (`transaction_id`, `customer_key`, `click_id`, ...).
pub const MAX_ID_LEN: usize = 255;
/// Longest free text stored (URLs, titles); longer values are cut, not refused.
pub const MAX_TEXT_LEN: usize = 2048;
/// Largest `amount_cents` accepted: ten billion in major units. Beyond it sums could
/// overflow, and no real sale is that large.
pub const MAX_AMOUNT_CENTS: i64 = 1_000_000_000_000;

/// Cuts `s` to at most `max` bytes without splitting a character.
pub fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

/// Reads a value as `T` or fails with `text`.
fn value_or<'de, D: Deserializer<'de>, T>(
    d: D,
    text: &str,
    read: impl FnOnce(Value) -> Option<T>,
) -> Result<T, D::Error> {
    let value = Value::deserialize(d)?;
    read(value).ok_or_else(|| de::Error::custom(text))
}

/// An identifier: a string, trimmed; blank is absent. Over [`MAX_ID_LEN`] characters,
/// or not a string: refused.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Id(pub Option<String>);

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::Null => Ok(Id(None)),
            Value::String(s) if s.trim().is_empty() => Ok(Id(None)),
            Value::String(s) if s.trim().chars().count() <= MAX_ID_LEN => {
                Ok(Id(Some(s.trim().into())))
            }
            Value::String(_) => Err(de::Error::custom(format!(
                "{{field}} must be at most {MAX_ID_LEN} characters"
            ))),
            _ => Err(de::Error::custom("{field} must be a string")),
        }
    }
}

/// Free text: a string, cut at [`MAX_TEXT_LEN`] bytes; empty is absent.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Text(pub Option<String>);

impl Text {
    /// The text cut to `max` bytes.
    pub fn cut(self, max: usize) -> Option<String> {
        self.0.map(|s| truncate(&s, max))
    }
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        value_or(d, "{field} must be a string", |v| match v {
            Value::Null => Some(Text(None)),
            Value::String(s) if s.is_empty() => Some(Text(None)),
            Value::String(s) => Some(Text(Some(truncate(&s, MAX_TEXT_LEN)))),
            _ => None,
        })
    }
}

/// A required string as sent (the landing URL of a click); anything else, blank
/// included, is "required".
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Required(pub Option<String>);

impl<'de> Deserialize<'de> for Required {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        value_or(d, "{field} is required", |v| match v {
            Value::String(s) if !s.trim().is_empty() => Some(Required(Some(s))),
            _ => None,
        })
    }
}

/// A boolean; null is absent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Flag(pub Option<bool>);

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        value_or(d, "{field} must be a boolean", |v| match v {
            Value::Null => Some(Flag(None)),
            Value::Bool(b) => Some(Flag(Some(b))),
            _ => None,
        })
    }
}

/// A positive integer (an id, a refund amount); null is absent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Positive(pub Option<i64>);

impl<'de> Deserialize<'de> for Positive {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        value_or(d, "{field} must be a positive integer", |v| match v {
            Value::Null => Some(Positive(None)),
            Value::Number(n) => n.as_i64().filter(|n| *n > 0).map(|n| Positive(Some(n))),
            _ => None,
        })
    }
}

/// A field a refund does not take but that names an amount: whether it was sent (not
/// null). The refund refuses it, after its `transaction_id`, because ignoring it would
/// refund everything left of the sale.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NotARefundAmount(pub bool);

impl NotARefundAmount {
    /// The refusal of field `name` when it was sent.
    pub fn refusal(self, name: &str) -> Option<String> {
        self.0.then(|| {
            format!(
                "{name} is not a refund field: send refund_amount_cents for a partial \
                 refund, or leave the amount out to refund all that is left"
            )
        })
    }
}

impl<'de> Deserialize<'de> for NotARefundAmount {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(NotARefundAmount(!Value::deserialize(d)?.is_null()))
    }
}

/// A sale amount in cents: a positive integer up to [`MAX_AMOUNT_CENTS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Amount(pub Option<i64>);

/// The text of a missing or malformed sale amount.
pub const AMOUNT_REQUIRED: &str = "{field} is required and must be a positive integer";

impl<'de> Deserialize<'de> for Amount {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let amount = value_or(d, AMOUNT_REQUIRED, |v| match v {
            Value::Number(n) => n.as_i64().filter(|n| *n > 0),
            _ => None,
        })?;
        if amount > MAX_AMOUNT_CENTS {
            return Err(de::Error::custom(format!(
                "{{field}} must be at most {MAX_AMOUNT_CENTS}"
            )));
        }
        Ok(Amount(Some(amount)))
    }
}

/// A currency code, normalised to lowercase ISO 4217; null is absent.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Currency(pub Option<String>);

impl<'de> Deserialize<'de> for Currency {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        value_or(d, "{field} must be a 3-letter currency code", |v| match v {
            Value::Null => Some(Currency(None)),
            Value::String(s) => normalize_currency(&s).map(|c| Currency(Some(c))),
            _ => None,
        })
    }
}

/// What a sale is: a one-off payment (the default) or a subscription payment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SaleType {
    #[default]
    Payment,
    Subscription,
}

impl SaleType {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            SaleType::Payment => "payment",
            SaleType::Subscription => "subscription",
        }
    }
}

impl<'de> Deserialize<'de> for SaleType {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        value_or(
            d,
            "{field} must be \"payment\" or \"subscription\"",
            |v| match v {
                Value::Null => Some(SaleType::Payment),
                Value::String(s) if s == "payment" => Some(SaleType::Payment),
                Value::String(s) if s == "subscription" => Some(SaleType::Subscription),
                _ => None,
            },
        )
    }
}

/// A JSON object kept as sent (sale metadata); null is absent.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Object(pub Option<Map<String, Value>>);

impl<'de> Deserialize<'de> for Object {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        value_or(d, "{field} must be an object", |v| match v {
            Value::Null => Some(Object(None)),
            Value::Object(m) => Some(Object(Some(m))),
            _ => None,
        })
    }
}

/// A positive integer sent as query text (`page=2`); absent when not sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QueryPositive(pub Option<i64>);

impl<'de> Deserialize<'de> for QueryPositive {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        value_or(d, "{field} must be a positive integer", |v| match v {
            Value::String(s) => s
                .parse()
                .ok()
                .filter(|n| *n >= 1)
                .map(|n| QueryPositive(Some(n))),
            _ => None,
        })
    }
}

/// A date or instant sent as query text: `2026-03-01` or an RFC 3339 timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QueryDate(pub Option<IsoValue>);

impl<'de> Deserialize<'de> for QueryDate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        value_or(
            d,
            "{field} must be an ISO 8601 date (YYYY-MM-DD) or timestamp",
            |v| match v {
                Value::String(s) => IsoValue::parse(&s).map(|v| QueryDate(Some(v))),
                _ => None,
            },
        )
    }
}

/// One kind of tracking event sent as query text (`click`, `lead`, `conversion`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QueryEventKind(pub Option<EventKind>);

impl<'de> Deserialize<'de> for QueryEventKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        value_or(
            d,
            "{field} must be one of: click, lead, conversion",
            |v| match v {
                Value::String(s) => EventKind::parse(&s).map(|k| QueryEventKind(Some(k))),
                _ => None,
            },
        )
    }
}

/// Refuses anything but an object or null for a nested request object, with the
/// interface's text; the object itself is read by `T`.
pub fn nested<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    struct Nested<T>(std::marker::PhantomData<T>);

    impl<'de, T: Deserialize<'de>> Visitor<'de> for Nested<T> {
        type Value = Option<T>;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an object")
        }

        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_some<D2: Deserializer<'de>>(self, d: D2) -> Result<Self::Value, D2::Error> {
            d.deserialize_any(self)
        }

        fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            T::deserialize(de::value::MapAccessDeserializer::new(map)).map(Some)
        }

        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Err(E::custom("{field} must be an object"))
        }

        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Err(E::custom("{field} must be an object"))
        }

        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Err(E::custom("{field} must be an object"))
        }

        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Err(E::custom("{field} must be an object"))
        }

        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Err(E::custom("{field} must be an object"))
        }

        fn visit_seq<A: de::SeqAccess<'de>>(self, _: A) -> Result<Self::Value, A::Error> {
            Err(de::Error::custom("{field} must be an object"))
        }
    }

    d.deserialize_option(Nested(std::marker::PhantomData))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read<T: for<'de> Deserialize<'de>>(v: Value) -> Result<T, String> {
        T::deserialize(v).map_err(|e| e.to_string())
    }

    #[test]
    fn ids_are_trimmed_and_bounded() {
        assert_eq!(read::<Id>(json!("  x ")).unwrap().0.as_deref(), Some("x"));
        assert_eq!(read::<Id>(json!("")).unwrap().0, None);
        assert_eq!(
            read::<Id>(json!(5)).unwrap_err(),
            "{field} must be a string"
        );
        assert_eq!(
            read::<Id>(json!("y".repeat(300))).unwrap_err(),
            "{field} must be at most 255 characters"
        );
        // Characters, not bytes: 255 two-byte letters fit, 256 do not.
        assert!(read::<Id>(json!("é".repeat(255))).is_ok());
        assert!(read::<Id>(json!("é".repeat(256))).is_err());
    }

    #[test]
    fn amounts_are_positive_and_bounded() {
        assert_eq!(read::<Amount>(json!(5)).unwrap().0, Some(5));
        for bad in [json!(0), json!(-1), json!(1.5), json!("5")] {
            assert_eq!(read::<Amount>(bad).unwrap_err(), AMOUNT_REQUIRED);
        }
        assert_eq!(
            read::<Amount>(json!(MAX_AMOUNT_CENTS + 1)).unwrap_err(),
            "{field} must be at most 1000000000000"
        );
    }

    #[test]
    fn truncation_keeps_characters_whole() {
        assert_eq!(truncate("héllo", 2), "h");
        assert_eq!(truncate("héllo", 3), "hé");
        assert_eq!(truncate("abc", 10), "abc");
    }

    #[test]
    fn currencies_and_sale_types() {
        assert_eq!(
            read::<Currency>(json!("EUR")).unwrap().0.as_deref(),
            Some("eur")
        );
        assert!(read::<Currency>(json!("euro")).is_err());
        assert_eq!(
            read::<SaleType>(json!("subscription")).unwrap(),
            SaleType::Subscription
        );
        assert!(read::<SaleType>(json!("gift")).is_err());
    }
}
