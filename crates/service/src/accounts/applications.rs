//! Programs open to applications, and applying to them.

use super::*;

impl App {
    /// A program that takes applications: its id, name and terms for the page that
    /// applies to it; 404 otherwise, as for an unknown program.
    pub async fn open_program(&self, program_id: i64) -> Result<OpenProgram> {
        match self.store.program(program_id).await {
            Ok(p) if p.applications_open => {
                // An applicant joins the default group: its reward is what it would earn.
                let (rewards, hold) = self.group_rewards(p.id, None).await?;
                Ok(OpenProgram {
                    terms: ProgramTerms::of(&p, &rewards, hold),
                    id: p.id,
                    name: p.name,
                    workspace_id: p.workspace_id,
                })
            }
            Ok(_) | Err(StoreError::NotFound(_)) => {
                Err(Error::NotFound("Program not found".into()))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// An application to a program that takes them (404 otherwise). Without a session it
    /// creates the applicant's partner account; with one (`partner_id`), it adds the
    /// signed-in partner.
    pub async fn apply(
        &self,
        program_id: i64,
        partner_id: Option<i64>,
        b: ApplyBody,
    ) -> Result<Application> {
        let program = self.open_program(program_id).await?;
        let website = note("website", b.website, 500)?;
        let message = note("message", b.message, 2000)?;
        let at = self.now_ms();
        let applicant = match partner_id {
            Some(id) => Err(id),
            None => {
                let name = name("name", b.name.as_deref().unwrap_or(""), 200)?;
                let email = email("email", b.email.as_deref().unwrap_or(""))?.to_ascii_lowercase();
                let password = b.password.unwrap_or_default();
                check_password("password", &password)?;
                if self.store.partner_credentials(&email).await?.is_some() {
                    return Err(Error::Conflict(
                        "A partner account with this email already exists: sign in to apply".into(),
                    ));
                }
                Ok((name, email, hashed_password(password).await?))
            }
        };
        let workspace_id = program.workspace_id;
        let noted = (website.clone(), message.clone());
        let partner_id = self
            .write(move |tx, deltas| {
                Box::pin(async move {
                    let partner_id = match &applicant {
                        Err(id) => {
                            // A signed-in partner needs no invite; one made earlier by
                            // a workspace must not reach this program's.
                            tx.end_invites(*id, at).await?;
                            *id
                        }
                        Ok((name, email, hash)) => {
                            let code = applicant_code(name);
                            let new = NewApplicant {
                                name,
                                code: &code,
                                email,
                                password_hash: hash,
                                workspace_id,
                            };
                            tx.insert_applicant(&new, at).await.map_err(|e| match e {
                                StoreError::Conflict("invited email") => {
                                    Error::Conflict(INVITED_EMAIL.into())
                                }
                                StoreError::Conflict(_) => Error::Conflict(
                                    "A partner account with this email already exists: \
                                     sign in to apply"
                                        .into(),
                                ),
                                other => other.into(),
                            })?
                        }
                    };
                    tx.insert_partner_program(
                        program_id,
                        partner_id,
                        PartnerStatus::Pending,
                        None,
                        at,
                    )
                    .await
                    .map_err(|e| match e {
                        StoreError::Conflict(_) => Error::Conflict(
                            "You have already applied to or joined this program".into(),
                        ),
                        other => other.into(),
                    })?;
                    tx.set_application(
                        program_id,
                        partner_id,
                        website.as_deref(),
                        message.as_deref(),
                    )
                    .await?;
                    let applied = Event::new(
                        EventType::PartnerApplied,
                        Subject::ProgramPartner(partner_id),
                    );
                    tx.record_events(program_id, at, &[applied]).await?;
                    deltas.count_partner_joined(program_id, at);
                    Ok(partner_id)
                })
            })
            .await?;
        self.notify_application(&program, partner_id, noted).await;
        Ok(Application {
            partner_id,
            program_id,
            status: PartnerStatus::Pending,
        })
    }

    /// Mails the program's active owners and admins that `partner_id` applied, when the
    /// server mails. The application is committed: a notice that cannot be sent is
    /// logged, and the mails go out after the answer.
    pub(crate) async fn notify_application(
        &self,
        program: &OpenProgram,
        partner_id: i64,
        (website, message): (Option<String>, Option<String>),
    ) {
        if self.mailer.is_none() {
            return;
        }
        let found = async {
            let members = self.store.workspace_members(program.workspace_id).await?;
            let account = self.store.partner_account(partner_id).await?;
            Ok::<_, StoreError>((members, account))
        };
        let (members, account) = match found.await {
            Ok(found) => found,
            Err(e) => {
                tracing::warn!(partner_id, error = %e, "reading who to tell of an application failed");
                return;
            }
        };
        let review_url = self
            .address_for_notices()
            .await
            .map(|u| format!("{u}/app/programs/{}/partners?status=pending", program.id));
        let applicant_email = account
            .account_email
            .or(account.partner.email)
            .unwrap_or_default();
        let notice = ApplicationNotice {
            program_name: &program.name,
            applicant_name: &account.partner.name,
            applicant_email: &applicant_email,
            website: website.as_deref(),
            message: message.as_deref(),
            review_url: review_url.as_deref(),
        };
        let mails = members
            .iter()
            .filter(|m| m.status == MembershipStatus::Active && m.role.allows(Access::Change))
            .map(|m| application_mail(&m.email, &notice))
            .collect();
        self.notify_later("an application notice", mails);
    }
}
