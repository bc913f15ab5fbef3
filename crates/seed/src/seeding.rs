//! Seeding a database: its workspace, user and programs, then each program's events.

use super::*;

/// [`run_payouts`] on a database of engine `DB`.
pub(crate) async fn run_payouts_on<DB: SeedEngine>(
    url: &str,
    spec: &PayoutsSpec,
    progress: impl FnMut(u64),
) -> anyhow::Result<SeededPayouts> {
    let (store, app, ws) = open_workspace(url, format!("{} workspace", spec.name)).await?;
    let now = now_ms();
    let start = (now.div_euclid(DAY_MS) - (spec.days - 1)) * DAY_MS;
    let program = create_program(&app, ws.id, &spec.name).await?;
    store.close().await;
    let plan = PayoutsPlan::new(spec, &program, start, now)?;
    let mut conn = Seeder::<DB>::connect(url).await?;
    let seeded = seed_payouts::<DB>(&mut conn, &plan, progress).await?;
    conn.finish().await?;
    Ok(seeded)
}

/// The store at `url`, the service over it and a new workspace `name` made through it.
pub(crate) async fn open_workspace(
    url: &str,
    name: String,
) -> anyhow::Result<(Arc<dyn Store>, App, Workspace)> {
    let store = reftrack_store::open(url).await?;
    let app = App::new(store.clone(), Arc::new(reftrack_domain::time::SystemClock));
    let ws = app
        .create_workspace(&Caller::operator(), WorkspaceBody { name })
        .await?;
    Ok((store, app, ws))
}

/// A program created through the service, as the management API would.
pub(crate) async fn create_program(
    app: &App,
    workspace_id: i64,
    name: &str,
) -> anyhow::Result<reftrack_service::programs::ProgramView> {
    Ok(app
        .create_program(
            &Caller::operator(),
            ProgramBody {
                commission_hold_days: None,
                min_payout_cents: None,
                applications_open: None,
                partner_links_allowed: None,
                destination_url: None,
                workspace_id,
                name: name.to_string(),
                cookie_window_days: Some(60),
                currency: Some("usd".into()),
                commission: Some(
                    CommissionRule::Percentage {
                        bps: COMMISSION_BPS,
                    }
                    .spec(),
                ),
                recurring_commission_months: None,
                allowed_origins: None,
                stripe_webhook_secret: None,
            },
        )
        .await?)
}

/// [`run`] on a database of engine `DB`.
pub(crate) async fn run_on<DB: SeedEngine>(
    url: &str,
    opts: &SeedOptions,
    mut progress: impl FnMut(usize, u64),
) -> anyhow::Result<SeedReport> {
    let (store, app, ws) = open_workspace(url, "Benchmark".into()).await?;
    let now = now_ms();
    let start = (now.div_euclid(DAY_MS) - (opts.days - 1)) * DAY_MS;
    let user = app
        .create_user(
            &Caller::operator(),
            UserBody {
                email: "bench@reftrack.invalid".into(),
                password: opts.user_password.clone(),
                name: Some("Bench".into()),
            },
        )
        .await?;
    app.add_member(
        &Caller::operator(),
        ws.id,
        MemberBody {
            user_id: user.id,
            role: "owner".into(),
            status: None,
        },
    )
    .await?;
    let session_token = app
        .login(
            "bench@reftrack.invalid",
            opts.user_password.clone(),
            &Default::default(),
        )
        .await?
        .token;

    let mut made = Vec::new();
    let mut plans = Vec::new();
    for spec in &opts.programs {
        let program = create_program(&app, ws.id, &spec.name).await?;
        let api_token = program.api_token.clone().unwrap_or_default();
        let mut partners = Vec::new();
        for n in 0..spec.partners.max(1) {
            let code = format!("{}{n}", spec.link_prefix);
            let partner = app
                .create_partner(
                    &Caller::operator(),
                    PartnerBody {
                        name: format!("Partner {code}"),
                        code: code.clone(),
                        email: None,
                        workspace_id: None,
                    },
                )
                .await?;
            let link = app
                .create_link(
                    &Caller::operator(),
                    LinkBody {
                        program_id: program.id,
                        partner_id: Some(partner.id),
                        short_link: code.clone(),
                        status: None,
                        destination_url: None,
                    },
                )
                .await?;
            partners.push((partner.id, link.id));
        }
        made.push((
            program.id,
            api_token,
            format!("{}0", spec.link_prefix),
            partners[0].1,
            lifecycle::hold_ms(program.commission_hold_days),
        ));
        plans.push(partners);
    }
    store.close().await;

    let mut conn = Seeder::<DB>::connect(url).await?;
    let mut report = SeedReport {
        programs: vec![],
        session_token,
    };
    for (k, spec) in opts.programs.iter().enumerate() {
        let (program_id, api_token, short_link, link_id, hold_ms) = made[k].clone();
        let mut deltas = Deltas::default();
        let mut partners = Vec::new();
        for (partner_id, link_id) in &plans[k] {
            let pp = conn
                .insert_partner_program(*partner_id, program_id, start)
                .await?;
            partners.push(SeedPartner {
                partner_id: *partner_id,
                link_id: *link_id,
                partner_program_id: pp,
            });
        }
        deltas.rollup(program_id, day_of(start)).partners += partners.len() as i64;
        conn.backdate_program(program_id, start).await?;
        let (next_customer_id, next_sale_id) = conn.next_ids().await?;
        let step = (now - 60_000 - start) as f64 / spec.clicks.max(1) as f64;
        let mut gen = Generator {
            program_id,
            spec,
            partners: &partners,
            start,
            step,
            end: now - 60_000,
            next_customer_id,
            next_sale_id,
            hold_ms,
            now,
            leads: 0,
            sales: 0,
            days: BTreeMap::new(),
            partner_days: PartnerDays::default(),
            deltas,
        };
        let mut done = 0;
        while done < spec.clicks {
            let to = (done + CHUNK).min(spec.clicks);
            let chunk = gen.chunk(done, to);
            conn.insert_chunk(&chunk).await?;
            done = to;
            progress(k, done);
        }
        let (leads, sales) = (gen.leads, gen.sales);
        let deltas = gen.into_deltas();
        conn.apply_deltas(&deltas).await?;
        report.programs.push(SeededProgram {
            id: program_id,
            api_token,
            short_link,
            link_id,
            clicks: spec.clicks,
            leads,
            sales,
        });
    }
    conn.finish().await?;
    Ok(report)
}
