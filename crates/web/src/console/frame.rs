//! The dashboard's part of the page frame: its site, the header's navigation, the head
//! and tabs of a program's pages with what the signed-in user's role lets it do there,
//! the ids of paths, and the fixed confirmations shown after a change.

use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;
use axum::response::Response;

use askama::Template;

use super::session::{Signed, COOKIE};
use crate::pages::session::see_other;
use crate::pages::view::{Chrome, NavItem, PageError, Posted, Site};
use crate::AppState;
use reftrack_domain::access::Access;
use reftrack_domain::status::{Permission, Role};
use reftrack_service as app;
use reftrack_service::dashboard::Need;
use reftrack_service::programs::ProgramView;
use reftrack_service::Caller;
use reftrack_store::Record;

/// The owner's dashboard.
pub(super) const CONSOLE: Site = Site {
    brand: "Dashboard",
    title: "Reftrack",
    home: "/app",
    home_label: "Go to your programs",
    logout: "/app/logout",
    footer: "Reftrack dashboard",
};

/// The frame of a page for signed-out visitors.
pub(super) fn public(title: impl Into<String>) -> Chrome {
    Chrome::public(CONSOLE, title)
}

/// The frame of a page of the signed-in `user` outside a program.
pub(super) fn signed_in(title: impl Into<String>, user: &Signed, programs_current: bool) -> Chrome {
    // `all`: the list itself, even of a single program (`/app` opens that program).
    let items = vec![
        NavItem {
            href: "/app?all=1".into(),
            label: "Programs".into(),
            current: programs_current,
        },
        NavItem {
            href: "/app/two-factor".into(),
            label: "Two-factor".into(),
            current: false,
        },
    ];
    Chrome::signed_in(CONSOLE, title, user.who.clone(), items)
}

/// A page of a program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tab {
    Overview,
    Setup,
    Events,
    Partners,
    Commissions,
    Review,
    Payouts,
    Settings,
}

impl Tab {
    const ALL: [Tab; 8] = [
        Tab::Overview,
        Tab::Setup,
        Tab::Events,
        Tab::Partners,
        Tab::Commissions,
        Tab::Review,
        Tab::Payouts,
        Tab::Settings,
    ];

    fn label(self) -> &'static str {
        match self {
            Tab::Overview => "Overview",
            Tab::Setup => "Setup",
            Tab::Events => "Events",
            Tab::Partners => "Partners",
            Tab::Commissions => "Commissions",
            Tab::Review => "Review",
            Tab::Payouts => "Payouts",
            Tab::Settings => "Settings",
        }
    }

    /// The tab's page of program `id`.
    pub(super) fn href(self, id: i64) -> String {
        match self {
            Tab::Overview => format!("/app/programs/{id}"),
            other => format!("/app/programs/{id}/{}", other.label().to_ascii_lowercase()),
        }
    }

    /// What the dashboard endpoints ask of the user's membership for the tab's data:
    /// the events list needs `tracking:list`, the setup status `tracking:read`, the rest
    /// an active membership (their management reads then check the role themselves).
    fn need(self) -> Need {
        match self {
            Tab::Events => Need::Permission(Permission::TrackingList),
            Tab::Setup => Need::Permission(Permission::TrackingRead),
            _ => Need::ActiveMember,
        }
    }
}

/// The head of a program's pages: its name, tabs, and what the user may do there.
pub(super) struct Head {
    pub program_id: i64,
    pub program_name: String,
    pub tabs: Vec<NavItem>,
    /// The user's role in the program's workspace.
    pub role: &'static str,
    /// Owners and admins: every change to the program and its partners, commissions
    /// and payouts.
    pub can_change: bool,
    /// Owners: the workspace's members.
    pub can_manage_members: bool,
}

/// What every page of a program has: the frame, the head, the caller of its use cases
/// and the program.
pub(super) struct Frame {
    pub chrome: Chrome,
    pub head: Head,
    /// The signed-in user as the management use cases know it.
    pub caller: Caller,
    pub program: ProgramView,
}

impl Frame {
    /// The frame of `tab` of program `program_id` for `user`: 404 when the program is not
    /// one of the user's workspaces', 403 when its membership is suspended or its role
    /// does not allow the tab's data.
    pub(super) async fn load(
        s: &AppState,
        user: &Signed,
        program_id: i64,
        tab: Tab,
        done: Option<&str>,
    ) -> app::Result<Frame> {
        // The management read first: a program of another workspace is not found (as on
        // the management API), rather than refused (as on the dashboard endpoints).
        let caller = user.caller(s).await?;
        let program = s.app.program_view(&caller, program_id).await?;
        let access = s
            .app
            .authorize(user.user_id, program_id, tab.need())
            .await?;
        let role = access.member_role.unwrap_or(Role::Viewer);
        let can_list_events = role.grants(Permission::TrackingList);
        let current = tab.href(program_id);
        // The review tab counts the commissions waiting for an owner.
        let waiting = s.app.review_count(&caller, program_id).await?;
        let tabs = Tab::ALL
            .into_iter()
            .filter(|t| *t != Tab::Events || can_list_events)
            .map(|t| match t {
                Tab::Review if waiting > 0 => NavItem::new(
                    t.href(program_id),
                    format!("{} ({waiting})", t.label()),
                    &current,
                ),
                _ => NavItem::new(t.href(program_id), t.label(), &current),
            })
            .collect();
        let title = format!("{} · {}", tab.label(), program.name);
        let chrome = signed_in(title, user, false).with_notice(notice(done));
        Ok(Frame {
            chrome,
            head: Head {
                program_id,
                program_name: program.name.clone(),
                tabs,
                role: role.as_str(),
                can_change: role.allows(Access::Change),
                can_manage_members: role.allows(Access::ManageMembers),
            },
            caller,
            program,
        })
    }

    /// Refuses (403, or 404 for a record out of its reach) a user whose role may not
    /// change `record`, as the use case that changes it would.
    pub(super) async fn allow_change(&self, s: &AppState, record: Record) -> app::Result<()> {
        s.app.allow(&self.caller, record, Access::Change).await
    }
}

/// The page that asks before a change that cannot be undone (or not easily): the form
/// posts again to `action` with `fields` and `confirm=yes`.
#[derive(Template)]
#[template(path = "console/confirm.html")]
pub(super) struct Confirm {
    pub chrome: Chrome,
    pub head: Head,
    pub question: String,
    pub consequence: String,
    pub action: String,
    pub fields: Vec<(&'static str, String)>,
    pub button: &'static str,
    pub cancel: String,
}

impl Confirm {
    /// The question in `frame`.
    pub(super) fn new(
        frame: Frame,
        question: String,
        consequence: &str,
        action: String,
    ) -> Confirm {
        let cancel = format!("/app/programs/{}", frame.head.program_id);
        Confirm {
            chrome: frame.chrome,
            head: frame.head,
            question,
            consequence: consequence.into(),
            action,
            fields: Vec::new(),
            button: "Confirm",
            cancel,
        }
    }
}

/// Whether a form was confirmed on the [`Confirm`] page.
pub(super) fn confirmed(form: &Posted) -> bool {
    form.get("confirm") == "yes"
}

/// A form's `back` field: the page it was on, when that is a page of the dashboard.
pub(super) fn back(form: &Posted) -> Option<String> {
    form.text("back")
        .filter(|b| COOKIE.local_next(Some(b)) == b.as_str())
}

/// Where a form's `back` field sends the user after the change named `done`: a page of
/// the dashboard (else `fallback`), with `done` in its query for the confirmation.
pub(super) fn back_to(form: &Posted, fallback: &str, done: &str) -> String {
    let back = back(form).unwrap_or_else(|| fallback.to_string());
    let (path, query) = back.split_once('?').unwrap_or((&back, ""));
    let mut kept: Vec<&str> = query
        .split('&')
        .filter(|p| !p.is_empty() && !p.starts_with("done="))
        .collect();
    let done = format!("done={done}");
    kept.push(&done);
    format!("{path}?{}", kept.join("&"))
}

/// The answer to a change: off to `page` (an address without a query), which confirms
/// the change named `change` ([`notice`]).
pub(super) fn done(page: &str, change: &str) -> Response {
    see_other(&format!("{page}?done={change}"))
}

/// The query of the page a form was on (its `back` field, else `fallback`), read like a
/// page's: for showing that page again with the form's refusal.
pub(super) fn back_query(form: &Posted, fallback: &str) -> Posted {
    let back = back(form).unwrap_or_else(|| fallback.to_string());
    let query = back.split_once('?').map_or("", |(_, q)| q);
    let kept: Vec<&str> = query
        .split('&')
        .filter(|p| !p.is_empty() && !p.starts_with("done="))
        .collect();
    Posted::parse(kept.join("&").as_bytes())
}

/// The confirmation a page shows after the change named by its `done` parameter (a
/// fixed text: nothing of the address is shown).
pub(super) fn notice(done: Option<&str>) -> Option<&'static str> {
    Some(match done? {
        "welcome" => "Your workspace, account and program are ready. Install the tracker below.",
        "program" => "The program is created. Install the tracker below.",
        "partner" => "The partner is added.",
        "status" => "The partner's status is changed.",
        "group" => "The partner is moved: its later sales earn its new group's reward.",
        "group-created" => "The group is created with the default group's reward. Set its own below.",
        "group-saved" => "The group is saved: its reward applies to the sales recorded from now on.",
        "group-deleted" => "The group is deleted.",
        "bounty-created" => "The bounty is created: it counts what partners do from now on.",
        "bounty-saved" => "The bounty is saved: the change applies from now on.",
        "bounty-archived" => "The bounty is archived: it makes no new awards.",
        "bonus" => "The bonus is given: it is due now and goes with the partner's next payout.",
        "link" => "The link is created.",
        "link-status" => "The link's status is changed.",
        "partner-saved" => "The partner's details are saved.",
        "approved" => "The commission is approved.",
        "rejected" => "The commission is rejected.",
        "payout" => "The payout is created. Download its file, send the money, then mark it paid.",
        "paid" => "The payout is marked paid.",
        "cancelled" => "The payout is cancelled; its commissions are due again.",
        "settings" => "The program's settings are saved.",
        "fraud-rules" => "The fraud rules are saved: they apply to the sales recorded from now on.",
        "token" => "The API token is rotated: the old one no longer works. Copy the new one below and update your servers.",
        "token-kept" => "The API token is rotated. Copy the new one below and update your servers: the old one keeps working for the time you chose, as Settings shows.",
        "two-factor" => "The workspace's two-factor setting is saved.",
        "address" => "The server's address is saved: the links Reftrack hands out and mails name it now.",
        "member" => "The member is added.",
        "member-saved" => "The membership is changed.",
        "member-removed" => "The member is removed from the workspace.",
        "webhook-saved" => "The endpoint is saved.",
        "webhook-enabled" => "The endpoint is enabled: its pending messages are sent now.",
        "webhook-disabled" => "The endpoint is disabled: nothing is sent to it until you enable it again.",
        "webhook-deleted" => "The endpoint is deleted with its delivery log.",
        "retry" => "The delivery is due now: it is sent again in a moment, with the same message id.",
        "webhook-test" => "A test message (webhook.test) is due now: it is sent in a moment and listed here with its attempts.",
        "coupon" => "The coupon code is added.",
        "coupon-archived" => "The coupon code is archived: it attributes no more sales.",
        _ => return None,
    })
}

/// The ids of a path's parameters, each a positive integer; anything else (or another
/// number of them) is the 404 page.
async fn path_ids<const N: usize>(parts: &mut Parts) -> Result<[i64; N], PageError> {
    let Path(raw) = Path::<Vec<String>>::from_request_parts(parts, &())
        .await
        .map_err(|_| PageError::not_yours())?;
    let ids: Vec<i64> = raw
        .iter()
        .map(|r| r.parse::<i64>().ok().filter(|id| *id > 0))
        .collect::<Option<_>>()
        .ok_or_else(PageError::not_yours)?;
    ids.try_into().map_err(|_| PageError::not_yours())
}

/// The two ids of a path like `/app/programs/{id}/payouts/{payout_id}`; anything but
/// positive integers is the 404 page.
pub(super) struct Ids(pub i64, pub i64);

impl<S: Send + Sync> FromRequestParts<S> for Ids {
    type Rejection = PageError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, PageError> {
        let [a, b] = path_ids(parts).await?;
        Ok(Ids(a, b))
    }
}

/// The three ids of a path like
/// `/app/programs/{id}/settings/webhooks/{webhook_id}/deliveries/{delivery_id}/retry`;
/// anything but positive integers is the 404 page.
pub(super) struct Ids3(pub i64, pub i64, pub i64);

impl<S: Send + Sync> FromRequestParts<S> for Ids3 {
    type Rejection = PageError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, PageError> {
        let [a, b, c] = path_ids(parts).await?;
        Ok(Ids3(a, b, c))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn back_keeps_the_page_and_names_the_change() {
        let form = Posted::parse(
            b"back=%2Fapp%2Fprograms%2F3%2Fpartners%3Fstatus%3Dpending%26done%3Dstatus",
        );
        assert_eq!(
            back_to(&form, "/app", "status"),
            "/app/programs/3/partners?status=pending&done=status"
        );
        let form = Posted::parse(b"back=https%3A%2F%2Fevil.example%2Fapp");
        assert_eq!(
            back_to(&form, "/app/programs/3", "paid"),
            "/app/programs/3?done=paid"
        );
        assert_eq!(back_to(&Posted::parse(b""), "/app/x", "a"), "/app/x?done=a");
    }
}
