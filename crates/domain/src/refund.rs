//! Refund arithmetic: how much of the sale and of its commission a refund reverses.

/// What is known of a sale when a refund arrives.
#[derive(Debug, Clone, Copy)]
pub struct SaleState {
    /// The sale's amount.
    pub amount_cents: i64,
    /// Refunded before this request.
    pub refunded_cents: i64,
    /// The commission's original amount and the part already reversed, if the sale has one.
    pub commission: Option<(i64, i64)>,
}

/// The outcome reported to the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefundStatus {
    /// The commission is fully reversed (the sale is fully refunded).
    Reversed,
    /// The commission is lowered in proportion (partial refund).
    Refunded,
    /// Nothing was left to reverse; nothing changed.
    Skipped,
    /// The sale had no commission; the refund only changed the sale.
    NoCommission,
}

impl RefundStatus {
    /// The wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            RefundStatus::Reversed => "reversed",
            RefundStatus::Refunded => "refunded",
            RefundStatus::Skipped => "skipped",
            RefundStatus::NoCommission => "no_commission",
        }
    }
}

/// What a refund changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefundPlan {
    /// Amount of the sale refunded by this request.
    pub refund_cents: i64,
    /// Commission taken back by this request.
    pub deduction_cents: i64,
    /// Whether the sale is fully refunded afterwards.
    pub fully_refunded: bool,
    /// The status reported.
    pub status: RefundStatus,
}

/// Works out a refund. `requested` is `refund_amount_cents` (None: refund everything left).
pub fn plan(sale: SaleState, requested: Option<i64>) -> Result<RefundPlan, String> {
    let remaining = sale.amount_cents - sale.refunded_cents;
    let refund_cents = match requested {
        // "Omitted or equal to the sale": refund whatever is left, which makes a repeated
        // full refund harmless.
        None => remaining,
        Some(r) if r == sale.amount_cents => remaining,
        Some(r) if r <= 0 => {
            return Err("refund_amount_cents must be a positive integer".into());
        }
        Some(r) if r > remaining => {
            return Err(format!(
                "refund_amount_cents exceeds the amount left to refund ({remaining})"
            ));
        }
        Some(r) => r,
    };
    if refund_cents == 0 {
        return Ok(RefundPlan {
            refund_cents: 0,
            deduction_cents: 0,
            fully_refunded: true,
            status: RefundStatus::Skipped,
        });
    }
    let left = remaining - refund_cents;
    let fully_refunded = left == 0;
    let (deduction_cents, status) = match sale.commission {
        None => (0, RefundStatus::NoCommission),
        Some((original, reversed)) => {
            // Commission kept = original * (sale amount still paid / sale amount), rounded
            // half up; deducting the difference keeps successive partial refunds from
            // drifting, and a final refund always lands on exactly zero.
            let keep = if sale.amount_cents > 0 {
                ((original as i128 * left as i128 * 2 + sale.amount_cents as i128)
                    / (2 * sale.amount_cents as i128)) as i64
            } else {
                0
            };
            let deduction = (original - reversed - keep).max(0);
            let status = if fully_refunded {
                RefundStatus::Reversed
            } else {
                RefundStatus::Refunded
            };
            (deduction, status)
        }
    };
    Ok(RefundPlan {
        refund_cents,
        deduction_cents,
        fully_refunded,
        status,
    })
}

/// A refund sent again under an id the sale already has a refund of (`earlier` cents):
/// it changes nothing (`skipped`), unless it asks for something else, which is refused
/// with the reason. A full refund (no amount, or the sale's) asks for the same as before
/// when the sale is fully refunded now.
pub fn repeated(
    sale: SaleState,
    earlier: i64,
    requested: Option<i64>,
) -> Result<RefundPlan, String> {
    let fully_refunded = sale.refunded_cents >= sale.amount_cents;
    let same = match requested {
        None => fully_refunded,
        Some(r) => r == earlier || (r == sale.amount_cents && fully_refunded),
    };
    if !same {
        return Err(format!(
            "was already used for a refund of {earlier} cents of this sale"
        ));
    }
    Ok(RefundPlan {
        refund_cents: 0,
        deduction_cents: 0,
        fully_refunded,
        status: RefundStatus::Skipped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sale(amount: i64, refunded: i64, commission: Option<(i64, i64)>) -> SaleState {
        SaleState {
            amount_cents: amount,
            refunded_cents: refunded,
            commission,
        }
    }

    #[test]
    fn full_refund_reverses_everything() {
        let p = plan(sale(10_000, 0, Some((3_000, 0))), None).unwrap();
        assert_eq!(p.refund_cents, 10_000);
        assert_eq!(p.deduction_cents, 3_000);
        assert!(p.fully_refunded);
        assert_eq!(p.status, RefundStatus::Reversed);
        let same = plan(sale(10_000, 0, Some((3_000, 0))), Some(10_000)).unwrap();
        assert_eq!(same, p);
    }

    #[test]
    fn partial_refund_is_proportional() {
        let p = plan(sale(10_000, 0, Some((3_000, 0))), Some(2_500)).unwrap();
        assert_eq!(p.refund_cents, 2_500);
        assert_eq!(p.deduction_cents, 750);
        assert!(!p.fully_refunded);
        assert_eq!(p.status, RefundStatus::Refunded);
    }

    #[test]
    fn successive_partials_end_on_zero_without_drift() {
        // 1000 cents sale, 333 commission, refunded in thirds of 333, 333, 334.
        let mut refunded = 0;
        let mut reversed = 0;
        for part in [333, 333, 334] {
            let p = plan(sale(1_000, refunded, Some((333, reversed))), Some(part)).unwrap();
            refunded += p.refund_cents;
            reversed += p.deduction_cents;
        }
        assert_eq!(refunded, 1_000);
        assert_eq!(reversed, 333);
    }

    #[test]
    fn repeated_full_refund_is_skipped() {
        let p = plan(sale(10_000, 10_000, Some((3_000, 3_000))), None).unwrap();
        assert_eq!(p.status, RefundStatus::Skipped);
        assert_eq!(p.deduction_cents, 0);
        let p = plan(sale(10_000, 10_000, Some((3_000, 3_000))), Some(10_000)).unwrap();
        assert_eq!(p.status, RefundStatus::Skipped);
    }

    #[test]
    fn full_refund_after_partial_takes_the_rest() {
        let p = plan(sale(10_000, 2_500, Some((3_000, 750))), None).unwrap();
        assert_eq!(p.refund_cents, 7_500);
        assert_eq!(p.deduction_cents, 2_250);
        assert_eq!(p.status, RefundStatus::Reversed);
    }

    #[test]
    fn over_refund_and_nonpositive_are_rejected() {
        assert!(plan(sale(10_000, 9_000, None), Some(1_001)).is_err());
        assert!(plan(sale(10_000, 0, None), Some(0)).is_err());
        assert!(plan(sale(10_000, 0, None), Some(-5)).is_err());
    }

    #[test]
    fn sale_without_commission() {
        let p = plan(sale(10_000, 0, None), Some(100)).unwrap();
        assert_eq!(p.status, RefundStatus::NoCommission);
        assert_eq!(p.deduction_cents, 0);
        assert_eq!(p.refund_cents, 100);
    }

    #[test]
    fn a_repeated_refund_id_changes_nothing_unless_it_asks_for_more() {
        let after = sale(10_000, 2_500, Some((3_000, 750)));
        let p = repeated(after, 2_500, Some(2_500)).unwrap();
        assert_eq!((p.refund_cents, p.deduction_cents), (0, 0));
        assert_eq!(p.status, RefundStatus::Skipped);
        assert!(!p.fully_refunded);
        for other in [Some(1_000), None, Some(10_000)] {
            let e = repeated(after, 2_500, other).unwrap_err();
            assert_eq!(
                e,
                "was already used for a refund of 2500 cents of this sale"
            );
        }
        // A full refund sent again, with or without its amount.
        let full = sale(10_000, 10_000, Some((3_000, 3_000)));
        for asked in [None, Some(10_000), Some(7_500)] {
            let p = repeated(full, 7_500, asked).unwrap();
            assert_eq!(p.status, RefundStatus::Skipped);
            assert!(p.fully_refunded);
        }
    }
}
