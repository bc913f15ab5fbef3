//! Commission rules of a program and the recurring-commission limit.

use serde::{Deserialize, Serialize};

use super::status::PartnerStatus;

/// The largest flat commission an owner may set, in minor units: one owner's setting must
/// never be able to overflow the counters a server's programs share a write batch with.
pub const MAX_FLAT_CENTS: i64 = 100_000_000;

/// How a program pays its partners for a sale.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommissionRule {
    /// A share of the sale amount, in basis points (30 % = 3000).
    Percentage { bps: i64 },
    /// A fixed amount per sale, in the smallest currency unit.
    Flat { amount_cents: i64 },
}

/// The wire form of a commission rule: `{"type":"percentage","percent":30}` or
/// `{"type":"flat","amount_cents":500}`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[serde(
    tag = "type",
    rename_all = "lowercase",
    deny_unknown_fields,
    try_from = "CommissionWire"
)]
pub enum CommissionSpec {
    /// A percentage of each sale, 0 to 100 with at most two decimals.
    Percentage { percent: f64 },
    /// A fixed amount per sale in the smallest currency unit.
    Flat { amount_cents: i64 },
}

/// [`CommissionSpec`] as read: an internally tagged enum buffers its fields before
/// reading them, so an error in one would name only `commission`; a plain struct lets
/// the body's error name `commission.percent`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CommissionWire {
    #[serde(rename = "type")]
    kind: CommissionKind,
    percent: Option<f64>,
    amount_cents: Option<i64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum CommissionKind {
    Percentage,
    Flat,
}

impl TryFrom<CommissionWire> for CommissionSpec {
    type Error = String;

    fn try_from(w: CommissionWire) -> Result<Self, String> {
        // The texts serde gives the tagged enum for a missing or a foreign field.
        match (w.kind, w.percent, w.amount_cents) {
            (CommissionKind::Percentage, Some(percent), None) => {
                Ok(CommissionSpec::Percentage { percent })
            }
            (CommissionKind::Flat, None, Some(amount_cents)) => {
                Ok(CommissionSpec::Flat { amount_cents })
            }
            (CommissionKind::Percentage, _, Some(_)) => {
                Err("unknown field `amount_cents`, expected `percent`".into())
            }
            (CommissionKind::Flat, Some(_), _) => {
                Err("unknown field `percent`, expected `amount_cents`".into())
            }
            (CommissionKind::Percentage, None, None) => Err("missing field `percent`".into()),
            (CommissionKind::Flat, None, None) => Err("missing field `amount_cents`".into()),
        }
    }
}

impl CommissionSpec {
    /// What a sale earns, in words: `30 % of each sale` (a no-break space before the sign,
    /// so it never starts a line; decimals as set), `$5.00 per sale` in `currency`.
    pub fn words(&self, currency: &str) -> String {
        match *self {
            CommissionSpec::Percentage { percent } => format!("{percent}\u{a0}% of each sale"),
            CommissionSpec::Flat { amount_cents } => {
                format!(
                    "{} per sale",
                    super::money::display_amount(amount_cents, currency)
                )
            }
        }
    }
}

impl Default for CommissionRule {
    /// 20 % unless the program says otherwise.
    fn default() -> Self {
        CommissionRule::Percentage { bps: 2000 }
    }
}

impl CommissionRule {
    /// Validates the wire form.
    pub fn from_spec(spec: &CommissionSpec) -> Result<Self, String> {
        match *spec {
            CommissionSpec::Percentage { percent } => {
                let bps = percent * 100.0;
                if !(0.0..=10_000.0).contains(&bps) || (bps - bps.round()).abs() > 1e-6 {
                    return Err(
                        "commission.percent must be between 0 and 100 with at most two decimals"
                            .into(),
                    );
                }
                Ok(CommissionRule::Percentage {
                    bps: bps.round() as i64,
                })
            }
            CommissionSpec::Flat { amount_cents }
                if (0..=MAX_FLAT_CENTS).contains(&amount_cents) =>
            {
                Ok(CommissionRule::Flat { amount_cents })
            }
            CommissionSpec::Flat { .. } => Err(format!(
                "commission.amount_cents must be a whole number from 0 to {MAX_FLAT_CENTS}"
            )),
        }
    }

    /// The wire form of this rule.
    pub fn spec(&self) -> CommissionSpec {
        match *self {
            CommissionRule::Percentage { bps } => CommissionSpec::Percentage {
                percent: bps as f64 / 100.0,
            },
            CommissionRule::Flat { amount_cents } => CommissionSpec::Flat { amount_cents },
        }
    }

    /// The commission on a sale of `sale_cents`, rounded half up to a whole cent.
    pub fn amount_for(&self, sale_cents: i64) -> i64 {
        match *self {
            CommissionRule::Percentage { bps } => {
                ((sale_cents as i128 * bps as i128 + 5_000) / 10_000) as i64
            }
            CommissionRule::Flat { amount_cents } => amount_cents,
        }
    }
}

/// Whether a sale earns commission under the program's `recurring_commission_months`.
///
/// A first payment always earns. A renewal earns while it falls within `limit` months of
/// the subscription's first sale (`None`: for ever; `Some(0)`: never).
pub fn recurring_earns(limit: Option<i64>, first_sale_ms: Option<i64>, sale_ms: i64) -> bool {
    match (limit, first_sale_ms) {
        (None, _) | (_, None) => true,
        (Some(months), Some(first)) => {
            months > 0 && sale_ms < super::time::add_months(first, months.min(1200) as u32)
        }
    }
}

/// Whether a partner with `status` in a program earns commission on a new sale. Only an
/// approved partner does: an applicant (`pending`), a `rejected` or a `banned` partner's
/// sales are recorded and counted, without commission.
pub fn partner_earns(status: PartnerStatus) -> bool {
    status == PartnerStatus::Approved
}

/// Why a sale (not in test mode) earns no commission; kept with the sale, so that a sale
/// without commission always says why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unearned {
    /// Its partner was not approved in the program when the sale came.
    PartnerNotApproved,
    /// A renewal past the program's recurring commission months.
    RecurringPeriodEnded,
    /// The partner's group has no sale reward.
    NoReward,
}

impl Unearned {
    /// The stored form.
    pub fn as_str(self) -> &'static str {
        match self {
            Unearned::PartnerNotApproved => "partner_not_approved",
            Unearned::RecurringPeriodEnded => "recurring_period_ended",
            Unearned::NoReward => "no_reward",
        }
    }

    /// What the sale's answer says after "no commission: ".
    pub fn reason(self) -> &'static str {
        match self {
            Unearned::PartnerNotApproved => "the partner is not approved in this program",
            Unearned::RecurringPeriodEnded => "the recurring commission period has ended",
            Unearned::NoReward => "the partner's group has no sale reward",
        }
    }
}

/// Whether a sale earns, from its partner's standing and, for a renewal, whether it is
/// within the recurring limit ([`recurring_earns`]): `None` when it does, else why not.
pub fn unearned(standing: PartnerStatus, within_recurring_limit: bool) -> Option<Unearned> {
    if !partner_earns(standing) {
        Some(Unearned::PartnerNotApproved)
    } else if !within_recurring_limit {
        Some(Unearned::RecurringPeriodEnded)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wire_form_reads_as_the_tagged_enum_did() {
        let read = |s: &str| serde_json::from_str::<CommissionSpec>(s).map_err(|e| e.to_string());
        assert_eq!(
            read(r#"{"percent": 30, "type": "percentage"}"#),
            Ok(CommissionSpec::Percentage { percent: 30.0 })
        );
        assert_eq!(
            read(r#"{"type": "flat", "amount_cents": 500}"#),
            Ok(CommissionSpec::Flat { amount_cents: 500 })
        );
        for bad in [
            r#"{"type": "flat", "percent": 3}"#,
            r#"{"type": "flat", "amount_cents": 1, "percent": 3}"#,
            r#"{"type": "percentage", "amount_cents": 1}"#,
            r#"{"type": "percentage"}"#,
            r#"{"type": "bonus"}"#,
            r#"{"percent": 3}"#,
            r#"{"type": "flat", "amount_cents": 1, "x": 1}"#,
        ] {
            assert!(read(bad).is_err(), "{bad}");
        }
        let spec = CommissionSpec::Flat { amount_cents: 500 };
        assert_eq!(
            serde_json::to_value(&spec).unwrap(),
            serde_json::json!({"type": "flat", "amount_cents": 500})
        );
    }

    #[test]
    fn only_approved_partners_earn() {
        assert!(partner_earns(PartnerStatus::Approved));
        for status in [
            PartnerStatus::Pending,
            PartnerStatus::Rejected,
            PartnerStatus::Banned,
        ] {
            assert!(!partner_earns(status), "{status:?}");
            for within in [true, false] {
                assert_eq!(unearned(status, within), Some(Unearned::PartnerNotApproved));
            }
        }
        assert_eq!(unearned(PartnerStatus::Approved, true), None);
        assert_eq!(
            unearned(PartnerStatus::Approved, false),
            Some(Unearned::RecurringPeriodEnded)
        );
    }

    #[test]
    fn commissions_in_words_keep_their_decimals() {
        let words = |bps| CommissionRule::Percentage { bps }.spec().words("usd");
        assert_eq!(words(3000), "30\u{a0}% of each sale");
        assert_eq!(words(1250), "12.5\u{a0}% of each sale");
        assert_eq!(words(1234), "12.34\u{a0}% of each sale");
        assert_eq!(words(5), "0.05\u{a0}% of each sale");
        assert_eq!(words(0), "0\u{a0}% of each sale");
        assert_eq!(words(10_000), "100\u{a0}% of each sale");
        let flat = CommissionRule::Flat { amount_cents: 500 }.spec();
        assert_eq!(flat.words("eur"), "€5.00 per sale");
    }

    #[test]
    fn percentage_rounds_half_up_to_the_cent() {
        let r = CommissionRule::Percentage { bps: 3000 };
        assert_eq!(r.amount_for(10_000), 3_000);
        assert_eq!(r.amount_for(3_333), 1_000); // 999.9 -> 1000
        assert_eq!(r.amount_for(5), 2); // 1.5 -> 2
        assert_eq!(r.amount_for(1), 0); // 0.3 -> 0
        let r = CommissionRule::Percentage { bps: 1250 }; // 12.5 %
        assert_eq!(r.amount_for(1_004), 126); // 125.5 -> 126
    }

    #[test]
    fn flat_ignores_amount() {
        let r = CommissionRule::Flat { amount_cents: 500 };
        assert_eq!(r.amount_for(1), 500);
        assert_eq!(r.amount_for(1_000_000), 500);
    }

    #[test]
    fn huge_amounts_do_not_overflow() {
        let r = CommissionRule::Percentage { bps: 10_000 };
        assert_eq!(r.amount_for(i64::MAX), i64::MAX);
    }

    #[test]
    fn spec_validation() {
        let ok = |s: CommissionSpec| CommissionRule::from_spec(&s);
        assert_eq!(
            ok(CommissionSpec::Percentage { percent: 12.5 }),
            Ok(CommissionRule::Percentage { bps: 1250 })
        );
        assert!(ok(CommissionSpec::Percentage { percent: 100.01 }).is_err());
        assert!(ok(CommissionSpec::Percentage { percent: -1.0 }).is_err());
        assert!(ok(CommissionSpec::Percentage { percent: 10.001 }).is_err());
        assert!(ok(CommissionSpec::Flat { amount_cents: -1 }).is_err());
        assert_eq!(
            ok(CommissionSpec::Flat {
                amount_cents: MAX_FLAT_CENTS
            }),
            Ok(CommissionRule::Flat {
                amount_cents: MAX_FLAT_CENTS
            })
        );
        assert_eq!(
            ok(CommissionSpec::Flat {
                amount_cents: i64::MAX
            }),
            Err("commission.amount_cents must be a whole number from 0 to 100000000".into())
        );
        assert_eq!(
            CommissionRule::default().spec(),
            CommissionSpec::Percentage { percent: 20.0 }
        );
    }

    #[test]
    fn recurring_limits() {
        let jan1 = 1_767_225_600_000; // 2026-01-01T00:00:00Z
        let day = 86_400_000;
        assert!(recurring_earns(None, Some(jan1), jan1 + 5000 * day));
        assert!(recurring_earns(Some(0), None, jan1)); // the first payment itself
        assert!(!recurring_earns(Some(0), Some(jan1), jan1 + 31 * day));
        assert!(recurring_earns(Some(3), Some(jan1), jan1 + 89 * day)); // before 2026-04-01
        assert!(!recurring_earns(Some(3), Some(jan1), jan1 + 90 * day)); // 2026-04-01
    }
}
