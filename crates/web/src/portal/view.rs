//! The portal's part of the page frame: its site, the partner's navigation and program
//! tabs, and its fixed texts. The rest of the page layer is shared ([`crate::pages`]).

pub(super) use crate::pages::view::{
    ok, place_error, place_errors, render, show_refused, Chrome, Field, Moment, NavItem,
    PageResult, Posted, ProgramId, Query, Site,
};

use reftrack_domain::status::PartnerStatus;
use reftrack_service::accounts::PartnerMe;

/// The partner portal.
pub(super) const PORTAL: Site = Site {
    brand: "Partners",
    title: "Reftrack Partners",
    home: "/partner",
    home_label: "Go to your overview",
    logout: "/partner/logout",
    footer: "Reftrack partner portal",
};

/// Which item of the main navigation a page belongs to.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Section {
    Overview,
    Settings,
    TwoFactor,
    None,
}

/// The frame of a page for signed-out visitors.
pub(super) fn public(title: impl Into<String>) -> Chrome {
    Chrome::public(PORTAL, title)
}

/// The frame of a page of the signed-in partner `me`.
pub(super) fn signed_in(title: impl Into<String>, me: &PartnerMe, section: Section) -> Chrome {
    let items = vec![
        NavItem {
            href: "/partner".into(),
            label: "Overview".into(),
            current: section == Section::Overview,
        },
        NavItem {
            href: "/partner/settings".into(),
            label: "Settings".into(),
            current: section == Section::Settings,
        },
        NavItem {
            href: "/partner/two-factor".into(),
            label: "Two-factor".into(),
            current: section == Section::TwoFactor,
        },
    ];
    Chrome::signed_in(PORTAL, title, me.name.clone(), items)
}

/// The tabs of a program's pages; `current` is the href of the page shown.
pub(super) fn program_tabs(program_id: i64, current: &str) -> Vec<NavItem> {
    [
        (format!("/partner?program={program_id}"), "Overview"),
        (format!("/partner/programs/{program_id}/links"), "Links"),
        (
            format!("/partner/programs/{program_id}/commissions"),
            "Commissions",
        ),
        (format!("/partner/programs/{program_id}/payouts"), "Payouts"),
    ]
    .into_iter()
    .map(|(href, label)| NavItem::new(href, label, current))
    .collect()
}

/// A standing that keeps a partner from a program's data, in its words.
pub(super) fn standing_text(status: PartnerStatus) -> &'static str {
    match status {
        PartnerStatus::Approved => "Approved: you are promoting this program.",
        PartnerStatus::Pending => {
            "Your application is pending. The program's team will review it; once you are \
             approved, you will see your links here and earn commission on the sales they \
             bring."
        }
        PartnerStatus::Rejected => "Your application to this program was not accepted.",
        PartnerStatus::Banned => "You can no longer promote this program.",
    }
}

/// The confirmation a page shows after the change named by its `done` parameter (a
/// fixed text: nothing of the address is shown).
pub(super) fn notice(done: Option<&str>) -> Option<&'static str> {
    Some(match done? {
        "welcome" => "Your password is set and you are signed in.",
        "applied" => "Thanks for applying! The program's team will review your application.",
        "created" => "Your new link is ready to share.",
        "profile" => "Your details are saved.",
        "password" => "Your password is changed. Other browsers signed in as you are signed out.",
        _ => return None,
    })
}
