//! Bulk seeding for benchmarks (`reftrack-seed-bench`, used by `scripts/bench`).
//!
//! Creates a workspace, a dashboard user with a live session, and programs whose click,
//! lead and sale events are spread over the last [`SeedOptions::days`] days, with the
//! customers, commissions, link and partner counters and `daily_rollups` the tracking API
//! would have produced for the same events. Metadata (workspace, programs, partners,
//! links, user) goes through the [`Store`](reftrack_store::Store) like any management call;
//! the events go in with multi-row `INSERT`s in large transactions on a connection of
//! its own (`synchronous=OFF` on SQLite, `synchronous_commit=off` on PostgreSQL: a crash
//! mid-seed loses the seed, nothing else), and the counters are added at the end by the
//! group committer's own `counters::apply`.
//!
//! The shape of the generated data: every click creates its customer (no repeat
//! visits); one customer in ten becomes a lead 30 minutes after its click, with
//! `customer_key` `<key_prefix><n>` for the n-th lead (0-based) so that load generators
//! can address them; one lead in five buys 2 hours later (one sale each, a percentage
//! commission). Timestamps increase with ids, as they do when the API records them.
//! A commission whose hold period (the program's `commission_hold_days`) has passed is
//! seeded `approved`, with `approved_at` at the end of its hold, as the server's minute job
//! would have recorded it; the others are `pending`.
//!
//! [`run_payouts`] adds a program for the payouts benchmark ([`PayoutsSpec`]) to a
//! database, seeded or not: one partner per 100 commissions, each approved in the program
//! with a link and PayPal payout details; customers that each click once, sign up 30
//! minutes later and buy ten times; every sale earns a commission that is past its hold
//! (all `approved`).

use std::collections::BTreeMap;
use std::sync::Arc;

use reftrack_domain::commission::CommissionRule;
use reftrack_domain::figures::{Deltas, PartnerDayDelta, RollupDelta};
use reftrack_domain::lifecycle;
use reftrack_domain::time::{day_of, now_ms, DAY_MS};
use reftrack_service::admin::{
    LinkBody, MemberBody, PartnerBody, ProgramBody, UserBody, WorkspaceBody,
};
use reftrack_service::{App, Caller};
pub mod sql;

use reftrack_store::{Store, Workspace};
use sql::{SeedEngine, Seeder};
use sqlx::{Postgres, Sqlite};

/// Milliseconds in a day.
/// Commission of seeded programs: 30 % (basis points).
const COMMISSION_BPS: i64 = 3_000;

/// One program to seed.
#[derive(Debug, Clone)]
pub struct ProgramSpec {
    /// Program name.
    pub name: String,
    /// Click events to create.
    pub clicks: u64,
    /// Partners (each with one approved partner-program record and one link).
    pub partners: u64,
    /// Prefix of the generated short links and partner codes (`<prefix><n>`).
    pub link_prefix: String,
    /// Prefix of the generated lead customers' keys (`<prefix><n>`).
    pub key_prefix: String,
}

/// What to seed.
#[derive(Debug, Clone)]
pub struct SeedOptions {
    /// The programs, in order.
    pub programs: Vec<ProgramSpec>,
    /// Days the events span, ending now.
    pub days: i64,
    /// Password of the created dashboard user (`bench@reftrack.invalid`).
    pub user_password: String,
}

/// What was created, for the load generator.
#[derive(Debug, Clone)]
pub struct SeededProgram {
    /// Program id.
    pub id: i64,
    /// The program's API key.
    pub api_token: String,
    /// Short link of its first partner.
    pub short_link: String,
    /// Id of that link.
    pub link_id: i64,
    /// Click events created.
    pub clicks: u64,
    /// Lead customers created (keys `<key_prefix>0` to `<key_prefix>{leads-1}`).
    pub leads: u64,
    /// Sales created.
    pub sales: u64,
}

/// The program of the payouts benchmark: every partner has a payout email and due
/// commissions, so that a payout takes them all.
#[derive(Debug, Clone)]
pub struct PayoutsSpec {
    /// Program name.
    pub name: String,
    /// Commissions to create, one sale each; the program gets one partner per
    /// [`COMMISSIONS_PER_PARTNER`] of them (at least one).
    pub commissions: u64,
    /// Prefix of the partner codes and short links (`<prefix>-p<n>`) and of the
    /// customers' keys (`<prefix>-c<n>`).
    pub prefix: String,
    /// Days the events span, ending now (more than the program's hold of 30 days).
    pub days: i64,
}

/// Commissions per partner of the payouts program.
pub const COMMISSIONS_PER_PARTNER: u64 = 100;
/// Sales (and commissions) per customer of the payouts program.
pub const SALES_PER_CUSTOMER: u64 = 10;

/// What was created for the payouts benchmark.
#[derive(Debug, Clone)]
pub struct SeededPayouts {
    /// Program id.
    pub id: i64,
    /// Partners, each with a link, an approved membership and a payout email.
    pub partners: u64,
    /// Customers (one click and one lead each).
    pub customers: u64,
    /// Sales, each with its commission (all approved).
    pub commissions: u64,
}

/// The outcome of a seed.
#[derive(Debug, Clone)]
pub struct SeedReport {
    /// One entry per [`SeedOptions::programs`].
    pub programs: Vec<SeededProgram>,
    /// A live dashboard session token of a workspace owner.
    pub session_token: String,
}

/// A customer row, in its final state.
#[derive(Debug, Clone)]
pub struct SeedCustomer {
    pub id: i64,
    pub program_id: i64,
    pub click_id: String,
    pub customer_key: Option<String>,
    pub email: Option<String>,
    pub status: &'static str,
    pub partner_id: i64,
    pub link_id: i64,
    pub signup_date: Option<i64>,
    pub first_purchase_date: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// A click event row; its click id is its customer's.
#[derive(Debug, Clone)]
pub struct SeedClick {
    pub program_id: i64,
    pub customer: usize,
    pub link_id: i64,
    pub partner_id: i64,
    pub session_id: String,
    pub page_url: &'static str,
    pub page_title: &'static str,
    pub referrer_url: &'static str,
    pub screen_resolution: &'static str,
    pub viewport_size: &'static str,
    pub language: &'static str,
    pub timezone: &'static str,
    pub geo_country: &'static str,
    pub geo_region: &'static str,
    pub geo_city: &'static str,
    pub device_type: &'static str,
    pub device_os: &'static str,
    pub browser_name: &'static str,
    pub at: i64,
}

impl SeedClick {
    /// The click of the chunk's customer `customer` through `link_id` at `at`: its
    /// session, page, referrer, device, language and place picked by the hash `h`.
    fn new(
        program_id: i64,
        customer: usize,
        link_id: i64,
        partner_id: i64,
        h: u64,
        at: i64,
    ) -> Self {
        let (g, d, l) = (
            GEO[(h >> 8) as usize % GEO.len()],
            DEVICES[(h >> 16) as usize % DEVICES.len()],
            LANGS[(h >> 24) as usize % LANGS.len()],
        );
        let page = landing_page(h);
        SeedClick {
            program_id,
            customer,
            link_id,
            partner_id,
            session_id: format!("sess_{:x}", h >> 20),
            page_url: PAGES[page],
            page_title: TITLES[page],
            referrer_url: REFERRERS[(h >> 36) as usize % REFERRERS.len()],
            screen_resolution: d.3,
            viewport_size: d.4,
            language: l.0,
            timezone: l.1,
            geo_country: g.0,
            geo_region: g.1,
            geo_city: g.2,
            device_type: d.0,
            device_os: d.1,
            browser_name: d.2,
            at,
        }
    }
}

/// The page a visit of hash `h` lands on (its lead is on the next one).
fn landing_page(h: u64) -> usize {
    (h >> 32) as usize % PAGES.len()
}

/// A lead event row of a customer of the same chunk.
#[derive(Debug, Clone)]
pub struct SeedLead {
    pub customer: usize,
    pub page_url: &'static str,
    pub at: i64,
}

/// A sale event row and its commission, with what it copies from its customer (who may
/// have been inserted by an earlier chunk).
#[derive(Debug, Clone)]
pub struct SeedSale {
    pub id: i64,
    pub program_id: i64,
    pub customer_id: i64,
    pub partner_id: i64,
    pub partner_program_id: i64,
    pub click_id: String,
    pub customer_key: Option<String>,
    pub transaction_id: String,
    pub amount_cents: i64,
    pub commission_cents: i64,
    pub at: i64,
    /// When the commission's hold ended, if it has: it is then recorded `approved`;
    /// otherwise `pending`.
    pub approved_at: Option<i64>,
}

/// Rows inserted together; clicks and leads refer to the chunk's customers by index.
#[derive(Debug, Default)]
pub struct Chunk {
    pub customers: Vec<SeedCustomer>,
    pub clicks: Vec<SeedClick>,
    pub leads: Vec<SeedLead>,
    pub sales: Vec<SeedSale>,
}

/// A partner of a seeded program.
#[derive(Debug, Clone)]
pub struct SeedPartner {
    pub partner_id: i64,
    pub link_id: i64,
    pub partner_program_id: i64,
}

/// A partner of the payouts program, for a bulk insert.
#[derive(Debug, Clone)]
pub struct NewSeedPartner {
    pub name: String,
    pub code: String,
    pub payout_email: String,
}

/// SplitMix64: a fast, fixed pseudo-random mix, so that a seed is reproducible.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

const PAGES: [&str; 4] = [
    "https://shop.example/",
    "https://shop.example/pricing",
    "https://shop.example/blog/launch",
    "https://shop.example/products/widget",
];
const TITLES: [&str; 4] = ["Shop", "Pricing", "We launched", "Widget"];
const REFERRERS: [&str; 3] = [
    "https://www.google.com/",
    "https://news.ycombinator.com/",
    "https://partner-blog.example/review",
];
const GEO: [(&str, &str, &str); 5] = [
    ("US", "CA", "San Francisco"),
    ("DE", "BE", "Berlin"),
    ("FR", "IDF", "Paris"),
    ("GB", "ENG", "London"),
    ("JP", "13", "Tokyo"),
];
const DEVICES: [(&str, &str, &str, &str, &str); 3] = [
    ("desktop", "Windows 10", "Chrome", "1920x1080", "1600x900"),
    ("mobile", "iOS", "Safari", "390x844", "390x664"),
    ("desktop", "Mac OSX", "Firefox", "2560x1440", "1440x820"),
];
const LANGS: [(&str, &str); 3] = [
    ("en-US", "America/Los_Angeles"),
    ("de-DE", "Europe/Berlin"),
    ("fr-FR", "Europe/Paris"),
];

/// Generates one program's events in chunks, keeping the counters they add.
struct Generator<'a> {
    program_id: i64,
    spec: &'a ProgramSpec,
    partners: &'a [SeedPartner],
    start: i64,
    step: f64,
    end: i64,
    next_customer_id: i64,
    next_sale_id: i64,
    /// The program's hold period, in milliseconds.
    hold_ms: i64,
    /// The seed's now: commissions whose hold ended before it are approved.
    now: i64,
    leads: u64,
    sales: u64,
    /// Per UTC day number: the rollup increments.
    days: BTreeMap<i64, RollupDelta>,
    partner_days: PartnerDays,
    deltas: Deltas,
}

/// The partners' daily increments of one program, per partner and UTC day number.
#[derive(Default)]
struct PartnerDays(BTreeMap<(i64, i64), PartnerDayDelta>);

impl PartnerDays {
    /// The increments of `partner_id` on the day of `at`.
    fn at(&mut self, partner_id: i64, at: i64) -> &mut PartnerDayDelta {
        self.0
            .entry((partner_id, at.div_euclid(DAY_MS)))
            .or_default()
    }

    /// Adds them to `deltas`' partner days of `program_id`.
    fn fold(self, program_id: i64, deltas: &mut Deltas) {
        for ((partner_id, day), d) in self.0 {
            *deltas.partner_day(program_id, partner_id, day_of(day * DAY_MS)) = d;
        }
    }
}

impl Generator<'_> {
    fn day(&mut self, at: i64) -> &mut RollupDelta {
        self.days.entry(at.div_euclid(DAY_MS)).or_default()
    }

    /// Rows for clicks `from..to` of the program.
    fn chunk(&mut self, from: u64, to: u64) -> Chunk {
        let mut c = Chunk::default();
        let rule = CommissionRule::Percentage {
            bps: COMMISSION_BPS,
        };
        for i in from..to {
            let h = mix(i ^ (self.program_id as u64) << 40);
            let at = self.start + (i as f64 * self.step) as i64;
            let p = &self.partners[(h % self.partners.len() as u64) as usize];
            let (partner_id, link_id, pp_id) = (p.partner_id, p.link_id, p.partner_program_id);
            let customer_id = self.next_customer_id;
            self.next_customer_id += 1;
            // Fixed-width numbers keep seeded click ids in index order; real ones carry
            // 63 random bits in the same shape.
            let click_id = format!("cust_{}_{at}", 1_000_000_000_000u64 + customer_id as u64);
            let lead_at = (at + 30 * 60_000).min(self.end);
            let sale_at = (lead_at + 2 * 3_600_000).min(self.end);
            let is_lead = h % 10 == 3;
            let is_sale = is_lead && (h / 10) % 5 == 1;
            let idx = c.customers.len();
            let mut customer = SeedCustomer {
                id: customer_id,
                program_id: self.program_id,
                click_id,
                customer_key: None,
                email: None,
                status: "click",
                partner_id,
                link_id,
                signup_date: None,
                first_purchase_date: None,
                created_at: at,
                updated_at: at,
            };
            self.day(at).clicks += 1;
            self.deltas.link_click(link_id, at);
            self.deltas.partner(partner_id, self.program_id).clicks += 1;
            self.partner_days.at(partner_id, at).clicks += 1;
            if is_lead {
                let n = self.leads;
                self.leads += 1;
                customer.customer_key = Some(format!("{}{n}", self.spec.key_prefix));
                customer.email = Some(format!("{}{n}@example.com", self.spec.key_prefix));
                customer.status = "lead";
                customer.signup_date = Some(lead_at);
                customer.updated_at = lead_at;
                c.leads.push(SeedLead {
                    customer: idx,
                    page_url: PAGES[(landing_page(h) + 1) % PAGES.len()],
                    at: lead_at,
                });
                let r = self.day(lead_at);
                r.leads += 1;
                r.lead_events += 1;
                self.deltas.partner(partner_id, self.program_id).leads += 1;
                self.partner_days.at(partner_id, lead_at).leads += 1;
            }
            if is_sale {
                let amount = 1_000 + (h >> 40) as i64 % 20_000;
                let commission = rule.amount_for(amount);
                customer.status = "conversion";
                customer.first_purchase_date = Some(sale_at);
                customer.updated_at = sale_at;
                let due = sale_at + self.hold_ms;
                c.sales.push(SeedSale {
                    id: self.next_sale_id,
                    program_id: self.program_id,
                    customer_id,
                    partner_id,
                    partner_program_id: pp_id,
                    click_id: customer.click_id.clone(),
                    customer_key: customer.customer_key.clone(),
                    transaction_id: format!("seed_{}_{}", self.program_id, self.sales),
                    amount_cents: amount,
                    commission_cents: commission,
                    at: sale_at,
                    approved_at: (due <= self.now).then_some(due),
                });
                self.next_sale_id += 1;
                self.sales += 1;
                let r = self.day(sale_at);
                r.revenue_cents += amount;
                r.sales += 1;
                r.sale_events += 1;
                r.commission_cents += commission;
                r.conversions += 1;
                let pd = self.deltas.partner(partner_id, self.program_id);
                pd.sales += 1;
                pd.revenue_cents += amount;
                pd.commission_cents += commission;
                let d = self.partner_days.at(partner_id, sale_at);
                d.sales += 1;
                d.revenue_cents += amount;
                d.commission_cents += commission;
                d.conversions += 1;
            }
            c.clicks.push(SeedClick::new(
                self.program_id,
                idx,
                link_id,
                partner_id,
                h,
                at,
            ));
            c.customers.push(customer);
        }
        c
    }

    /// The counters of everything generated, as the committer folds them.
    fn into_deltas(mut self) -> Deltas {
        fold_days(
            self.program_id,
            std::mem::take(&mut self.days),
            &mut self.deltas,
        );
        std::mem::take(&mut self.partner_days).fold(self.program_id, &mut self.deltas);
        self.deltas
    }
}

/// Adds rollup increments kept per UTC day number to `deltas`' rollups of `program_id`.
fn fold_days(program_id: i64, days: BTreeMap<i64, RollupDelta>, deltas: &mut Deltas) {
    for (day, d) in days {
        *deltas.rollup(program_id, day_of(day * DAY_MS)) += d;
    }
}

/// Clicks per generated chunk (and per committed transaction group).
const CHUNK: u64 = 20_000;

/// Seeds the database named by `url` (created and migrated if needed). `progress` is
/// called after each chunk with the program index and the clicks done so far.
pub async fn run(
    url: &str,
    opts: &SeedOptions,
    progress: impl FnMut(usize, u64),
) -> anyhow::Result<SeedReport> {
    if url.starts_with("sqlite:") {
        run_on::<Sqlite>(url, opts, progress).await
    } else {
        run_on::<Postgres>(url, opts, progress).await
    }
}

/// Adds the program of the payouts benchmark, in a workspace of its own, to the database
/// named by `url` (created and migrated if needed; it may hold a seed of [`run`] or
/// anything else). `progress` is called after each chunk with the sales done so far.
pub async fn run_payouts(
    url: &str,
    spec: &PayoutsSpec,
    progress: impl FnMut(u64),
) -> anyhow::Result<SeededPayouts> {
    if url.starts_with("sqlite:") {
        run_payouts_on::<Sqlite>(url, spec, progress).await
    } else {
        run_payouts_on::<Postgres>(url, spec, progress).await
    }
}

/// [`run_payouts`] on a database of engine `DB`.
async fn run_payouts_on<DB: SeedEngine>(
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
async fn open_workspace(
    url: &str,
    name: String,
) -> anyhow::Result<(Arc<dyn Store>, App, Workspace)> {
    let store = reftrack_store::open(url).await?;
    let app = App::new(store.clone(), Arc::new(reftrack_domain::time::SystemClock));
    let ws = app
        .create_workspace(&Caller::Operator, WorkspaceBody { name })
        .await?;
    Ok((store, app, ws))
}

/// A program created through the service, as the management API would.
async fn create_program(
    app: &App,
    workspace_id: i64,
    name: &str,
) -> anyhow::Result<reftrack_service::admin::ProgramView> {
    Ok(app
        .create_program(
            &Caller::Operator,
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
async fn run_on<DB: SeedEngine>(
    url: &str,
    opts: &SeedOptions,
    mut progress: impl FnMut(usize, u64),
) -> anyhow::Result<SeedReport> {
    let (store, app, ws) = open_workspace(url, "Benchmark".into()).await?;
    let now = now_ms();
    let start = (now.div_euclid(DAY_MS) - (opts.days - 1)) * DAY_MS;
    let user = app
        .create_user(
            &Caller::Operator,
            UserBody {
                email: "bench@reftrack.invalid".into(),
                password: opts.user_password.clone(),
                name: Some("Bench".into()),
            },
        )
        .await?;
    app.add_member(
        &Caller::Operator,
        ws.id,
        MemberBody {
            user_id: user.id,
            role: "owner".into(),
            status: None,
        },
    )
    .await?;
    let session_token = app
        .login("bench@reftrack.invalid", opts.user_password.clone())
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
                    &Caller::Operator,
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
                    &Caller::Operator,
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

/// Where everything of the payouts program goes in time and to whom: sale `i` (0-based,
/// in time order) is the `i / customers`-th purchase of customer `i % customers`, whose
/// partner is `customer % partners`. A customer clicks 2 h 30 min before its first
/// purchase and signs up 30 minutes after its click; every sale is older than the hold.
struct PayoutsPlan<'a> {
    spec: &'a PayoutsSpec,
    program_id: i64,
    hold_ms: i64,
    partners: u64,
    customers: u64,
    /// The program's creation (and its partners' joining).
    start: i64,
    /// Time of the first sale.
    first: i64,
    /// Milliseconds between sales.
    step: f64,
}

impl<'a> PayoutsPlan<'a> {
    fn new(
        spec: &'a PayoutsSpec,
        program: &reftrack_service::admin::ProgramView,
        start: i64,
        now: i64,
    ) -> anyhow::Result<Self> {
        let n = spec.commissions;
        anyhow::ensure!(n > 0, "the payouts program needs at least one commission");
        let hold_ms = lifecycle::hold_ms(program.commission_hold_days);
        let first = start + 3 * 3_600_000;
        // A day of margin: every commission is due, whenever the benchmark reads it.
        let last = now - hold_ms - DAY_MS;
        anyhow::ensure!(
            last > first,
            "the seeded days do not reach back past the payouts program's hold"
        );
        Ok(PayoutsPlan {
            spec,
            program_id: program.id,
            hold_ms,
            partners: (n / COMMISSIONS_PER_PARTNER).max(1),
            customers: n.div_ceil(SALES_PER_CUSTOMER),
            start,
            first,
            step: (last - first) as f64 / n as f64,
        })
    }

    fn sale_at(&self, i: u64) -> i64 {
        self.first + (i as f64 * self.step) as i64
    }

    fn click_at(&self, customer: u64) -> i64 {
        self.sale_at(customer) - 150 * 60_000
    }

    /// The time of a customer's last purchase.
    fn last_sale_at(&self, customer: u64) -> i64 {
        let n = self.spec.commissions;
        self.sale_at(customer + (n - 1 - customer) / self.customers * self.customers)
    }

    fn click_id(&self, customer_id: i64, customer: u64) -> String {
        format!(
            "cust_{}_{}",
            1_000_000_000_000u64 + customer_id as u64,
            self.click_at(customer)
        )
    }

    fn customer_key(&self, customer: u64) -> String {
        format!("{}-c{customer}", self.spec.prefix)
    }
}

/// Inserts the payouts program's partners, customers, clicks, leads, sales and
/// commissions, then its counters; `progress` gets the sales done so far.
async fn seed_payouts<DB: SeedEngine>(
    conn: &mut Seeder<DB>,
    plan: &PayoutsPlan<'_>,
    mut progress: impl FnMut(u64),
) -> anyhow::Result<SeededPayouts> {
    let program_id = plan.program_id;
    let new_partners: Vec<NewSeedPartner> = (0..plan.partners)
        .map(|n| {
            let code = format!("{}-p{n}", plan.spec.prefix);
            NewSeedPartner {
                name: format!("Partner {code}"),
                payout_email: format!("{code}@payouts.example"),
                code,
            }
        })
        .collect();
    let partners = conn
        .insert_partners(program_id, &new_partners, "paypal", plan.start)
        .await?;
    conn.backdate_program(program_id, plan.start).await?;
    let mut deltas = Deltas::default();
    deltas.rollup(program_id, day_of(plan.start)).partners += partners.len() as i64;
    let mut days: BTreeMap<i64, RollupDelta> = BTreeMap::new();
    let mut partner_days = PartnerDays::default();
    let (first_customer_id, first_sale_id) = conn.next_ids().await?;
    let rule = CommissionRule::Percentage {
        bps: COMMISSION_BPS,
    };
    let partner_of = |customer: u64| &partners[(customer % plan.partners) as usize];

    // Customers in the state their sales leave them, each with its click and lead.
    let mut from = 0;
    while from < plan.customers {
        let to = (from + CHUNK).min(plan.customers);
        let mut c = Chunk::default();
        for j in from..to {
            let p = partner_of(j);
            let id = first_customer_id + j as i64;
            let h = mix(j ^ (program_id as u64) << 40);
            let at = plan.click_at(j);
            let lead_at = at + 30 * 60_000;
            let key = plan.customer_key(j);
            c.customers.push(SeedCustomer {
                id,
                program_id,
                click_id: plan.click_id(id, j),
                email: Some(format!("{key}@example.com")),
                customer_key: Some(key),
                status: "conversion",
                partner_id: p.partner_id,
                link_id: p.link_id,
                signup_date: Some(lead_at),
                first_purchase_date: Some(plan.sale_at(j)),
                created_at: at,
                updated_at: plan.last_sale_at(j),
            });
            let idx = c.customers.len() - 1;
            c.clicks.push(SeedClick::new(
                program_id,
                idx,
                p.link_id,
                p.partner_id,
                h,
                at,
            ));
            c.leads.push(SeedLead {
                customer: idx,
                page_url: PAGES[(landing_page(h) + 1) % PAGES.len()],
                at: lead_at,
            });
            days.entry(at.div_euclid(DAY_MS)).or_default().clicks += 1;
            let r = days.entry(lead_at.div_euclid(DAY_MS)).or_default();
            r.leads += 1;
            r.lead_events += 1;
            deltas.link_click(p.link_id, at);
            let pd = deltas.partner(p.partner_id, program_id);
            pd.clicks += 1;
            pd.leads += 1;
            partner_days.at(p.partner_id, at).clicks += 1;
            partner_days.at(p.partner_id, lead_at).leads += 1;
        }
        conn.insert_chunk(&c).await?;
        from = to;
    }

    // The sales, in time order, each with its approved commission.
    let n = plan.spec.commissions;
    let mut from = 0;
    while from < n {
        let to = (from + CHUNK).min(n);
        let mut c = Chunk::default();
        for i in from..to {
            let j = i % plan.customers;
            let p = partner_of(j);
            let customer_id = first_customer_id + j as i64;
            let h = mix(i ^ (program_id as u64) << 40 ^ 1 << 63);
            let at = plan.sale_at(i);
            let amount = 1_000 + (h >> 40) as i64 % 20_000;
            let commission = rule.amount_for(amount);
            c.sales.push(SeedSale {
                id: first_sale_id + i as i64,
                program_id,
                customer_id,
                partner_id: p.partner_id,
                partner_program_id: p.partner_program_id,
                click_id: plan.click_id(customer_id, j),
                customer_key: Some(plan.customer_key(j)),
                transaction_id: format!("seed_{program_id}_{i}"),
                amount_cents: amount,
                commission_cents: commission,
                at,
                approved_at: Some(at + plan.hold_ms),
            });
            let r = days.entry(at.div_euclid(DAY_MS)).or_default();
            r.revenue_cents += amount;
            r.sales += 1;
            r.sale_events += 1;
            r.commission_cents += commission;
            // A customer's first purchase converts it.
            r.conversions += i64::from(i < plan.customers);
            let pd = deltas.partner(p.partner_id, program_id);
            pd.sales += 1;
            pd.revenue_cents += amount;
            pd.commission_cents += commission;
            let d = partner_days.at(p.partner_id, at);
            d.sales += 1;
            d.revenue_cents += amount;
            d.commission_cents += commission;
            d.conversions += i64::from(i < plan.customers);
        }
        conn.insert_chunk(&c).await?;
        from = to;
        progress(from);
    }
    fold_days(program_id, days, &mut deltas);
    partner_days.fold(program_id, &mut deltas);
    conn.apply_deltas(&deltas).await?;
    Ok(SeededPayouts {
        id: program_id,
        partners: plan.partners,
        customers: plan.customers,
        commissions: n,
    })
}
