//! A partner joining a program, and redirect links.

use super::*;

impl App {
    /// Adds a partner to a program; the day's partner count rises with it.
    pub async fn add_program_partner(
        &self,
        caller: &Caller,
        program_id: i64,
        b: ProgramPartnerBody,
    ) -> Result<PartnerProgram> {
        self.allow(caller, Record::Program(program_id), Access::Change)
            .await?;
        self.allow(caller, Record::Partner(b.partner_id), Access::Read)
            .await?;
        let status: PartnerStatus = one_of("status", b.status.as_deref().unwrap_or("approved"))?;
        let partner_id = b.partner_id;
        let group_id = b.group_id;
        if let Some(group_id) = group_id {
            match self.store.group(group_id).await {
                Ok(g) if g.program_id == program_id => {}
                Ok(_) | Err(StoreError::NotFound(_)) => {
                    return Err(crate::programs::management::not_a_group())
                }
                Err(e) => return Err(e.into()),
            }
        }
        let at = self.now_ms();
        let entry = self
            .entry(
                caller,
                Action::PartnerAdded,
                Scope::Program(program_id),
                Target::partner(partner_id),
            )
            .with_details(serde_json::json!({ "status": status }));
        self.write(move |tx, deltas| {
            async move {
                match tx.program_and_partner_exist(program_id, partner_id).await? {
                    (false, _) => return Err(StoreError::NotFound("program").into()),
                    (_, false) => return Err(StoreError::NotFound("partner").into()),
                    _ => {}
                }
                let pp = tx
                    .insert_partner_program(program_id, partner_id, status, group_id, at)
                    .await?;
                tx.record_audit(&[entry]).await?;
                if status == PartnerStatus::Approved {
                    let approved = crate::programs::management::partner_approved(partner_id);
                    tx.record_events(program_id, at, &[approved]).await?;
                }
                deltas.count_partner_joined(program_id, at);
                Ok(pp)
            }
            .boxed()
        })
        .await
    }

    /// Creates a referral link.
    pub async fn create_link(&self, caller: &Caller, b: LinkBody) -> Result<Link> {
        self.allow(caller, Record::Program(b.program_id), Access::Change)
            .await?;
        if let Some(partner_id) = b.partner_id {
            self.allow(caller, Record::Partner(partner_id), Access::Read)
                .await?;
        }
        let short_link = short_link(&b.short_link)?;
        let status: LinkStatus = one_of("status", b.status.as_deref().unwrap_or("active"))?;
        let destination = b
            .destination_url
            .as_deref()
            .map(destination_url)
            .transpose()?;
        let done = self
            .store
            .create_link(
                b.program_id,
                b.partner_id,
                short_link,
                status,
                destination.as_deref(),
                self.now_ms(),
            )
            .await;
        self.changed();
        Ok(done?)
    }

    /// One link.
    pub async fn link(&self, caller: &Caller, id: i64) -> Result<Link> {
        self.allow(caller, Record::Link(id), Access::Read).await?;
        Ok(self.store.link(id).await?)
    }

    /// Changes a link's status or destination.
    pub async fn update_link(&self, caller: &Caller, id: i64, b: LinkPatchBody) -> Result<Link> {
        self.allow(caller, Record::Link(id), Access::Change).await?;
        let patch = LinkPatch {
            status: b.status.map(|s| one_of("status", &s)).transpose()?,
            destination_url: b
                .destination_url
                .map(|d| d.as_deref().map(destination_url).transpose())
                .transpose()?,
        };
        let done = self.store.update_link(id, &patch).await;
        self.changed();
        Ok(done?)
    }
}
