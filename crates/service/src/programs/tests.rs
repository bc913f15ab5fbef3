use super::*;

#[test]
fn partner_bodies_name_every_wrong_field_in_form_order() {
    let b = PartnerBody {
        name: " ".into(),
        code: "no spaces".into(),
        email: Some("nobody".into()),
        workspace_id: None,
    };
    let problems = b.problems();
    assert_eq!(problems.len(), 3, "{problems:?}");
    assert!(problems[1].starts_with("code must be"), "{problems:?}");
    assert_eq!(problems[2], "email must be an email address");

    let b = PartnerPatchBody {
        name: None,
        email: Some(None),
        payout_method: Some(Some("cheque".into())),
        payout_email: Some(Some("x".into())),
    };
    let problems = b.problems();
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(problems[0].starts_with("payout_method"), "{problems:?}");
    assert_eq!(problems[1], "payout_email must be an email address");
}
