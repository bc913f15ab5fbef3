//! What an approved partner reads and makes in a program: links, terms, balance,
//! commissions and payouts.

use super::*;

impl App {
    /// The partner's record in a program where it is approved: 404 when it is not in the
    /// program, 403 naming its standing otherwise.
    pub(crate) async fn approved_in(
        &self,
        partner_id: i64,
        program_id: i64,
    ) -> Result<PartnerProgram> {
        let pp = self
            .store
            .partner_program(program_id, partner_id)
            .await
            .map_err(|e| match e {
                StoreError::NotFound(_) => Error::NotFound("Program not found".into()),
                other => other.into(),
            })?;
        match pp.status {
            PartnerStatus::Approved => Ok(pp),
            PartnerStatus::Pending => Err(Error::Forbidden(
                "Your application to this program is pending".into(),
            )),
            PartnerStatus::Rejected => Err(Error::Forbidden(
                "Your application to this program was not accepted".into(),
            )),
            PartnerStatus::Banned => Err(Error::Forbidden(
                "You can no longer promote this program".into(),
            )),
        }
    }

    /// The partner's links in a program, newest first; `public_url` is where the server
    /// is reached, for their redirect addresses. The links' coupon codes come with them,
    /// in the same statement.
    pub async fn partner_links(
        &self,
        partner_id: i64,
        program_id: i64,
        page: &PageParams,
        public_url: &str,
    ) -> Result<Listed<PartnerLink>> {
        self.partner_links_in(partner_id, program_id, None, page, public_url)
            .await
    }

    /// The partner's active links in a program, newest first, one page of them: the
    /// addresses it shares now, for its overview.
    pub async fn partner_active_links(
        &self,
        partner_id: i64,
        program_id: i64,
        page: &PageParams,
        public_url: &str,
    ) -> Result<Listed<PartnerLink>> {
        let active = Some(LinkStatus::Active);
        self.partner_links_in(partner_id, program_id, active, page, public_url)
            .await
    }

    /// The partner's links in a program with `status` (any when `None`), newest first.
    pub(crate) async fn partner_links_in(
        &self,
        partner_id: i64,
        program_id: i64,
        status: Option<LinkStatus>,
        page: &PageParams,
        public_url: &str,
    ) -> Result<Listed<PartnerLink>> {
        let page = page.page()?;
        self.approved_in(partner_id, program_id).await?;
        let destination = self.store.program(program_id).await?.destination_url;
        let filter = LinkFilter {
            program_id: Some(program_id),
            partner_id: Some(partner_id),
            status,
        };
        let rows = self.store.list_links(None, filter, probe(page)).await?;
        let Listed { data, next_cursor } = listed(rows, page, |l| l.id);
        Ok(Listed {
            data: data
                .into_iter()
                .map(|link| partner_link(link, destination.as_deref(), public_url))
                .collect(),
            next_cursor,
        })
    }

    /// A link the partner makes in a program that allows it.
    pub async fn create_partner_link(
        &self,
        partner_id: i64,
        program_id: i64,
        b: PartnerLinkBody,
        public_url: &str,
    ) -> Result<PartnerLink> {
        let wanted = b.short_link.as_deref().map(short_link).transpose()?;
        self.approved_in(partner_id, program_id).await?;
        let program = self.store.program(program_id).await?;
        if !program.partner_links_allowed {
            return Err(Error::Forbidden(
                "This program does not let partners create links".into(),
            ));
        }
        let short_link = match wanted {
            Some(s) => s.to_string(),
            None => {
                generated_short_link(&self.store.partner_account(partner_id).await?.partner.code)
            }
        };
        let done = self
            .store
            .create_partner_link(
                program_id,
                partner_id,
                &short_link,
                MAX_PARTNER_LINKS,
                self.now_ms(),
            )
            .await;
        self.changed();
        Ok(partner_link(
            done?,
            program.destination_url.as_deref(),
            public_url,
        ))
    }

    /// What an approved partner sees of a program: its name, currency, origins, whether
    /// it may make links, and its terms (404 when not in it, 403 naming its standing
    /// otherwise).
    pub async fn partner_program(
        &self,
        partner_id: i64,
        program_id: i64,
    ) -> Result<PartnerProgramView> {
        self.approved_in(partner_id, program_id).await?;
        let p = self.store.program(program_id).await?;
        let record = self.store.partner_program(program_id, partner_id).await?;
        let (rewards, hold) = self
            .group_rewards(program_id, Some(record.group_id))
            .await?;
        Ok(PartnerProgramView {
            terms: ProgramTerms::of(&p, &rewards, hold),
            id: p.id,
            name: p.name,
            currency: p.currency,
            allowed_origins: p.allowed_origins,
            partner_links_allowed: p.partner_links_allowed,
        })
    }

    /// The partner's earnings in a program where it is approved: pending (in the hold
    /// period), approved (due, not yet paid) and paid, net of refunds.
    pub async fn partner_balance(&self, partner_id: i64, program_id: i64) -> Result<Balance> {
        self.approved_in(partner_id, program_id).await?;
        Ok(self
            .store
            .partner_balance(program_id, partner_id, self.now_ms())
            .await?)
    }

    /// One page of the partner's commissions in a program (`params.partner_id` is
    /// ignored: it is always the partner's own).
    pub async fn partner_commissions(
        &self,
        partner_id: i64,
        program_id: i64,
        params: &CommissionParams,
        page: &PageParams,
    ) -> Result<Listed<CommissionRow>> {
        let mut filter = params.filter()?;
        filter.partner_id = Some(partner_id);
        let page = page.page()?;
        self.approved_in(partner_id, program_id).await?;
        self.commission_page(program_id, &filter, page).await
    }

    /// Every commission of the partner in a program matching `params`, in chunks.
    pub async fn export_partner_commissions(
        &self,
        partner_id: i64,
        program_id: i64,
        params: &CommissionParams,
    ) -> Result<BoxStream<'static, Result<Vec<CommissionRow>>>> {
        let mut filter = params.filter()?;
        filter.partner_id = Some(partner_id);
        self.approved_in(partner_id, program_id).await?;
        Ok(self.commission_chunks(program_id, filter))
    }

    /// One page of what the program's payouts pay the partner, newest first.
    pub async fn partner_payouts(
        &self,
        partner_id: i64,
        program_id: i64,
        page: &PageParams,
    ) -> Result<Listed<PartnerPayoutItem>> {
        let page = page.page()?;
        self.approved_in(partner_id, program_id).await?;
        let rows = self
            .store
            .partner_payout_items(program_id, partner_id, probe(page))
            .await?;
        Ok(listed(rows, page, |i| i.payout_id))
    }
}

impl App {
    /// The rewards and own hold (days; `None`: the program's) of a program's group
    /// `group_id`, or of its default group.
    pub(crate) async fn group_rewards(
        &self,
        program_id: i64,
        group_id: Option<i64>,
    ) -> Result<(Rewards, Option<i64>)> {
        let groups = self.store.groups(program_id).await?;
        let group = groups
            .iter()
            .find(|g| Some(g.id) == group_id)
            .or_else(|| groups.iter().find(|g| g.is_default))
            .ok_or_else(|| Error::NotFound("Program not found".into()))?;
        let rewards = Rewards::from_json(&group.rewards, "rewards").map_err(|e| {
            Error::Internal(
                "Internal server error",
                anyhow::anyhow!("stored rewards: {e}"),
            )
        })?;
        Ok((rewards, group.commission_hold_days))
    }
}
