//! The management lists (workspaces, programs, partners, a program's partners, links)
//! and a partner's standing in a program. A dashboard user's lists hold only its own
//! workspaces' records; the operator's hold everything.

use std::collections::HashMap;

use futures::stream::BoxStream;
use futures::FutureExt;
use serde::Deserialize;
use utoipa::ToSchema;

use crate::access::Caller;
use crate::notice_mail::approval_mail;
use crate::pages::{chunks, id_filter, listed, named_filter, probe, PageParams};
use crate::programs::{program_view, ProgramView};
use crate::{App, Error, Listed, Result};
use reftrack_domain::access::Access;
use reftrack_domain::audit::{moved, Action, Scope, Target};
use reftrack_domain::lifecycle;
use reftrack_domain::status::{PartnerStatus, UnknownValue};
use reftrack_domain::webhooks::EventType;
use reftrack_store::webhooks::{Event, Subject};
use reftrack_store::{
    Link, LinkFilter, Partner, PartnerProgram, ProgramPartnerFilter, ProgramPartnerRow, Record,
    User, Workspace,
};

/// The body of the call that changes a partner's standing in a program.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PartnerStatusBody {
    /// `approved`, `pending`, `rejected` or `banned`.
    pub status: Option<String>,
    /// A group of the program to move the partner to; its later sales and leads earn
    /// that group's rewards.
    pub group_id: Option<i64>,
}

/// The answer to a `group_id` that is not a group of the program.
pub(crate) fn not_a_group() -> Error {
    Error::invalid("group_id must be a group of this program")
}

/// The event of a partner approved in a program.
pub(crate) fn partner_approved(partner_id: i64) -> Event {
    Event::new(
        EventType::PartnerApproved,
        Subject::ProgramPartner(partner_id),
    )
}

/// The filters of the link list.
#[derive(Debug, Default, Clone)]
pub struct LinkParams {
    pub program_id: Option<String>,
    pub partner_id: Option<String>,
    pub status: Option<String>,
}

/// The filters of a program's partner list: `status` and `group_id`, as sent.
#[derive(Debug, Clone, Default)]
pub struct ProgramPartnerParams {
    pub status: Option<String>,
    pub group_id: Option<String>,
}

impl ProgramPartnerParams {
    /// The filter, each value checked.
    fn filter(&self) -> Result<ProgramPartnerFilter> {
        Ok(ProgramPartnerFilter {
            status: named_filter("status", self.status.as_deref())?,
            group_id: id_filter("group_id", self.group_id.as_deref())?,
        })
    }
}

impl App {
    /// One page of the workspaces the caller may see.
    pub async fn list_workspaces(
        &self,
        caller: &Caller,
        page: &PageParams,
    ) -> Result<Listed<Workspace>> {
        let page = page.page()?;
        let rows = self
            .store
            .list_workspaces(caller.member(), probe(page))
            .await?;
        Ok(listed(rows, page, |w| w.id))
    }

    /// One page of the programs the caller may see, of one workspace if asked.
    pub async fn list_programs(
        &self,
        caller: &Caller,
        workspace_id: Option<&str>,
        page: &PageParams,
    ) -> Result<Listed<ProgramView>> {
        let workspace_id = id_filter("workspace_id", workspace_id)?;
        let page = page.page()?;
        if let Some(id) = workspace_id {
            let record = Record::Workspace(id);
            self.allow(caller, record, Access::Read).await?;
            if self.store.workspaces_of(record).await?.is_empty() {
                return Err(Error::NotFound(record.not_found()));
            }
        } else {
            caller.two_factor_complete()?;
        }
        let rows = self
            .store
            .list_programs(caller.member(), workspace_id, probe(page))
            .await?;
        let rows = rows.iter().map(|p| program_view(p, None)).collect();
        Ok(listed(rows, page, |p: &ProgramView| p.id))
    }

    /// One page of the partners the caller may see whose name, email or code contains
    /// `q` (any case).
    pub async fn list_partners(
        &self,
        caller: &Caller,
        q: Option<&str>,
        page: &PageParams,
    ) -> Result<Listed<Partner>> {
        let q = search_text(q)?;
        let page = page.page()?;
        caller.two_factor_complete()?;
        let rows = self
            .store
            .list_partners(caller.member(), q.as_deref(), probe(page))
            .await?;
        Ok(listed(rows, page, |p| p.id))
    }

    /// One page of the server's dashboard users whose email or name contains `q` (any
    /// case), newest first: the operator's alone.
    pub async fn list_users(
        &self,
        caller: &Caller,
        q: Option<&str>,
        page: &PageParams,
    ) -> Result<Listed<User>> {
        caller.operator_only("list users")?;
        let q = search_text(q)?;
        let page = page.page()?;
        let rows = self.store.list_users(q.as_deref(), probe(page)).await?;
        Ok(listed(rows, page, |u| u.id))
    }

    /// One page of a program's partners with their totals there, of a standing and a
    /// group when `filter` names them.
    pub async fn program_partners(
        &self,
        caller: &Caller,
        program_id: i64,
        filter: &ProgramPartnerParams,
        page: &PageParams,
    ) -> Result<Listed<ProgramPartnerRow>> {
        let filter = filter.filter()?;
        let page = page.page()?;
        self.readable_program(caller, program_id).await?;
        let rows = self
            .store
            .program_partners(program_id, filter, probe(page))
            .await?;
        Ok(listed(rows, page, |r| r.record_id))
    }

    /// Every partner of a program `filter` names, in chunks (see
    /// [`Self::export_commissions`]).
    pub async fn export_program_partners(
        &self,
        caller: &Caller,
        program_id: i64,
        filter: &ProgramPartnerParams,
    ) -> Result<BoxStream<'static, Result<Vec<ProgramPartnerRow>>>> {
        let filter = filter.filter()?;
        self.readable_program(caller, program_id).await?;
        Ok(chunks(
            self.store.clone(),
            move |store, page| {
                async move { store.program_partners(program_id, filter, page).await }.boxed()
            },
            |r: &ProgramPartnerRow| r.record_id,
        ))
    }

    /// Moves a partner's standing in a program, by the rule of
    /// [`lifecycle::partner_status`], and its group when the body names one.
    pub async fn set_program_partner_status(
        &self,
        caller: &Caller,
        program_id: i64,
        partner_id: i64,
        b: PartnerStatusBody,
    ) -> Result<PartnerProgram> {
        self.allow(caller, Record::Program(program_id), Access::Change)
            .await?;
        if b.status.is_none() && b.group_id.is_none() {
            return Err(Error::invalid("status or group_id is required"));
        }
        let to: Option<PartnerStatus> = b
            .status
            .as_deref()
            .map(|s| {
                s.trim()
                    .parse()
                    .map_err(|e: UnknownValue| Error::invalid(e.message("status")))
            })
            .transpose()?;
        let mut current = self.store.partner_program(program_id, partner_id).await?;
        if let Some(group_id) = b.group_id {
            current = self
                .move_partner(caller, program_id, partner_id, current.group_id, group_id)
                .await?;
        }
        let Some(to) = to else {
            return Ok(current);
        };
        lifecycle::partner_status(current.status, to).map_err(|c| Error::Conflict(c.0))?;
        if current.status == to {
            return Ok(current);
        }
        let from = current.status;
        let at = self.now_ms();
        let entry = self
            .entry(
                caller,
                Action::PartnerStatusChanged,
                Scope::Program(program_id),
                Target::partner(partner_id),
            )
            .with_details(moved("status", &from, &to));
        let changed = self
            .write(move |tx, _| {
                async move {
                    let changed = tx
                        .set_partner_status(program_id, partner_id, from, to)
                        .await?;
                    if changed.is_some() {
                        tx.record_audit(&[entry]).await?;
                    }
                    if changed.is_some() && to == PartnerStatus::Approved {
                        tx.record_events(program_id, at, &[partner_approved(partner_id)])
                            .await?;
                    }
                    Ok(changed)
                }
                .boxed()
            })
            .await?;
        self.changed();
        let changed = changed.ok_or_else(|| {
            Error::Conflict("The partner's status changed while this call ran; try again".into())
        })?;
        if to == PartnerStatus::Approved {
            self.notify_approval(program_id, partner_id).await;
        }
        Ok(changed)
    }

    /// Moves a partner of a program to another of its groups; a group of another
    /// program is a 400.
    async fn move_partner(
        &self,
        caller: &Caller,
        program_id: i64,
        partner_id: i64,
        from: i64,
        to: i64,
    ) -> Result<PartnerProgram> {
        let entry = self
            .entry(
                caller,
                Action::PartnerGroupChanged,
                Scope::Program(program_id),
                Target::partner(partner_id),
            )
            .with_details(moved("group_id", &from, &to));
        let moved = self
            .write(move |tx, _| {
                async move {
                    let moved = match tx.set_partner_group(program_id, partner_id, to).await {
                        Err(reftrack_store::StoreError::NotFound("group")) => {
                            return Err(not_a_group())
                        }
                        other => other?,
                    };
                    if moved.is_some() && from != to {
                        tx.record_audit(&[entry]).await?;
                    }
                    Ok(moved)
                }
                .boxed()
            })
            .await?;
        moved.ok_or_else(|| Error::NotFound(Record::Partner(partner_id).not_found()))
    }

    /// Mails a partner with an account that it is approved in a program, when the server
    /// mails; after the answer, and a failure is only logged (the approval is committed).
    async fn notify_approval(&self, program_id: i64, partner_id: i64) {
        if self.mailer.is_none() {
            return;
        }
        let found = async {
            let account = self.store.partner_account(partner_id).await?;
            let program = self.program(program_id).await?;
            Ok::<_, Error>((account, program))
        };
        let (account, program) = match found.await {
            Ok(found) => found,
            Err(e) => {
                tracing::warn!(partner_id, error = %e, "reading an approval's partner failed");
                return;
            }
        };
        // A partner without an account cannot sign in yet: the owner's invite tells it.
        let Some(to) = account.account_email else {
            return;
        };
        let portal = self
            .address_for_notices()
            .await
            .map(|u| format!("{u}/partner/login"));
        let mail = approval_mail(&to, &account.partner.name, &program.name, portal.as_deref());
        self.notify_later("an approval", vec![mail]);
    }

    /// One page of the links the caller may see that match `params`.
    pub async fn list_links(
        &self,
        caller: &Caller,
        params: &LinkParams,
        page: &PageParams,
    ) -> Result<Listed<Link>> {
        let filter = LinkFilter {
            program_id: id_filter("program_id", params.program_id.as_deref())?,
            partner_id: id_filter("partner_id", params.partner_id.as_deref())?,
            status: named_filter("status", params.status.as_deref())?,
        };
        let page = page.page()?;
        if let Some(id) = filter.program_id {
            self.allow(caller, Record::Program(id), Access::Read)
                .await?;
            self.program(id).await?;
        } else {
            caller.two_factor_complete()?;
        }
        let rows = self
            .store
            .list_links(caller.member(), filter, probe(page))
            .await?;
        Ok(listed(rows, page, |l| l.id))
    }

    /// A program's partner with its totals there; 404 when it is not in the program.
    pub async fn program_partner(
        &self,
        caller: &Caller,
        program_id: i64,
        partner_id: i64,
    ) -> Result<ProgramPartnerRow> {
        self.allow(caller, Record::Program(program_id), Access::Read)
            .await?;
        self.store
            .program_partner(program_id, partner_id)
            .await?
            .ok_or_else(|| Error::NotFound("Partner not found".into()))
    }

    /// A partner's record (name, emails, payout details).
    pub async fn partner(&self, caller: &Caller, partner_id: i64) -> Result<Partner> {
        self.allow(caller, Record::Partner(partner_id), Access::Read)
            .await?;
        Ok(self.store.partner_account(partner_id).await?.partner)
    }

    /// The names of those of `ids` that are partners of the program, by id.
    pub async fn partner_names(
        &self,
        caller: &Caller,
        program_id: i64,
        ids: &[i64],
    ) -> Result<HashMap<i64, String>> {
        self.allow(caller, Record::Program(program_id), Access::Read)
            .await?;
        let mut ids = ids.to_vec();
        ids.sort_unstable();
        ids.dedup();
        Ok(self
            .store
            .partner_names(program_id, &ids)
            .await?
            .into_iter()
            .collect())
    }
}

/// A list's search text `q`: trimmed and lower-cased, `None` when blank; at most 200
/// characters.
fn search_text(q: Option<&str>) -> Result<Option<String>> {
    let q = q.map(str::trim).filter(|q| !q.is_empty());
    if q.is_some_and(|q| q.chars().count() > 200) {
        return Err(Error::invalid("q must be at most 200 characters"));
    }
    Ok(q.map(str::to_lowercase))
}
