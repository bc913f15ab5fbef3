use super::*;

#[test]
fn made_up_codes_and_links_are_lowercase_and_distinct() {
    let a = applicant_code("Ana María O'Neil");
    assert!(a.starts_with("anamaraoneil-"), "{a}");
    assert_eq!(a.len(), "anamaraoneil-".len() + 6);
    assert_ne!(applicant_code("x"), applicant_code("x"));
    assert!(applicant_code("日本").starts_with("partner-"));
    let l = generated_short_link("ALICE");
    assert!(l.starts_with("alice-") && l.len() == 12, "{l}");
}

#[test]
fn notes_are_trimmed_and_bounded() {
    assert_eq!(
        note("m", Some("  hi ".into()), 5).unwrap(),
        Some("hi".into())
    );
    assert_eq!(note("m", Some("   ".into()), 5).unwrap(), None);
    assert!(note("m", Some("toolong".into()), 5).is_err());
}

#[test]
fn invite_refusals_say_why() {
    use reftrack_store::partners::InviteRow;
    let used = InviteRow {
        expires_at: 10,
        used_at: Some(5),
    };
    let expired = InviteRow {
        expires_at: 10,
        used_at: None,
    };
    assert!(invite_refused(Some(used), 0)
        .to_string()
        .contains("already been used"));
    assert!(invite_refused(Some(expired), 20)
        .to_string()
        .contains("expired"));
    assert!(invite_refused(None, 0).to_string().contains("not valid"));
}
