//! A click's flow, its set-based write, and how long a caller waits for its commit.

use super::*;

/// A click: reuses the customer of `existing` when it is in the click's program, else
/// creates one with the click's id; stores the event and counts it.
pub(super) async fn click_flow(
    tx: &mut dyn Tx,
    deltas: &mut Deltas,
    c: NewClick,
    existing: Option<String>,
) -> Result<String> {
    let mut reused = None;
    if let Some(existing) = existing {
        if let Some(found) = tx.customer_by_click_id(&existing).await? {
            if attribution::reuse_customer(Some(found.program_id), c.program_id) {
                tx.repoint_customer(found.id, c.partner_id, c.link_id, c.at)
                    .await?;
                reused = Some((found.id, existing));
            }
        }
    }
    let (customer_id, click_id) = match reused {
        Some(found) => found,
        None => {
            let customer = NewCustomer {
                program_id: c.program_id,
                click_id: &c.click_id,
                customer_key: None,
                partner_id: c.partner_id,
                link_id: c.link_id,
                at: c.at,
            };
            (tx.insert_customer(&customer).await?, c.click_id.clone())
        }
    };
    let row = ClickEventRow {
        program_id: c.program_id,
        customer_id: Some(customer_id),
        link_id: Some(c.link_id),
        partner_id: Some(c.partner_id),
        click_id: Some(&click_id),
        details: &c.details,
        is_test: false,
        at: c.at,
    };
    tx.insert_click_event(&row).await?;
    deltas.count_click(c.program_id, c.partner_id, c.link_id, c.at);
    Ok(click_id)
}

/// A new click that the committer may insert with its batch.
pub(super) struct NewClickWrite {
    pub(super) click: NewClick,
    pub(super) answer: oneshot::Sender<Result<String>>,
}

impl ClickWrite for NewClickWrite {
    fn click(&self) -> &NewClick {
        &self.click
    }

    fn on_commit(self: Box<Self>) -> OnCommit {
        write::answer_with(self.answer, self.click.click_id)
    }

    fn one_by_one(self: Box<Self>) -> Job {
        let NewClickWrite { click, answer } = *self;
        click_job(answer, click, None)
    }
}

/// Records `click` through the group committer and answers its click id once committed;
/// runs it again alone when its batch failed through another write.
pub(super) async fn record_click(
    store: Arc<dyn Store>,
    click: NewClick,
    existing: Option<String>,
) -> Result<String> {
    let (again, again_existing) = (click.clone(), existing.clone());
    answer_or_alone(
        &*store,
        |answer| match &existing {
            // A click that creates its customer may go in set-based with its batch.
            None => Write::Click(Box::new(NewClickWrite { click, answer })),
            Some(_) => Write::Job(click_job(answer, click, existing)),
        },
        |answer| click_job(answer, again, again_existing),
    )
    .await
}

/// Most click recordings that may go on in tasks of their own after their wait ran out:
/// as many as the committer's queue holds. Beyond it a click waits for its commit, so
/// that a database that stopped answering cannot pile up tasks without bound.
pub(super) const MAX_DETACHED_CLICKS: usize = 8192;

/// Waits for `recording` (of the click `click_id`) at most `wait` (`None`: until it
/// ends): its answer and `true`, or `click_id` and `false` when the wait ran out first.
/// The recording then goes on in a task of its own, counted in `detached`, and commits
/// with its batch.
pub(super) async fn recorded_within(
    detached: &Arc<AtomicUsize>,
    wait: Option<Duration>,
    click_id: String,
    recording: impl Future<Output = Result<String>> + Send + 'static,
) -> Result<(String, bool)> {
    let wait = wait.filter(|_| detached.load(Ordering::Relaxed) < MAX_DETACHED_CLICKS);
    let Some(wait) = wait else {
        return Ok((recording.await?, true));
    };
    detached.fetch_add(1, Ordering::Relaxed);
    let count = detached.clone();
    let task = tokio::spawn(async move {
        let answered = recording.await;
        count.fetch_sub(1, Ordering::Relaxed);
        answered
    });
    match tokio::time::timeout(wait, task).await {
        Ok(Ok(answered)) => Ok((answered?, true)),
        Ok(Err(e)) => Err(Error::Internal("Click tracking failed", e.into())),
        Err(_) => Ok((click_id, false)),
    }
}

/// A click's flow as a job, answering `answer` with its click id.
pub(super) fn click_job(
    answer: oneshot::Sender<Result<String>>,
    click: NewClick,
    existing: Option<String>,
) -> Job {
    write::job(answer, move |tx, deltas| {
        click_flow(tx, deltas, click, existing).boxed()
    })
}
