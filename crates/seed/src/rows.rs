//! The rows the seeder writes, and the fixed tables their values are drawn from.

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
    pub(crate) fn new(
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
pub(crate) fn landing_page(h: u64) -> usize {
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
pub(crate) fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

pub(crate) const PAGES: [&str; 4] = [
    "https://shop.example/",
    "https://shop.example/pricing",
    "https://shop.example/blog/launch",
    "https://shop.example/products/widget",
];
pub(crate) const TITLES: [&str; 4] = ["Shop", "Pricing", "We launched", "Widget"];
pub(crate) const REFERRERS: [&str; 3] = [
    "https://www.google.com/",
    "https://news.ycombinator.com/",
    "https://partner-blog.example/review",
];
pub(crate) const GEO: [(&str, &str, &str); 5] = [
    ("US", "CA", "San Francisco"),
    ("DE", "BE", "Berlin"),
    ("FR", "IDF", "Paris"),
    ("GB", "ENG", "London"),
    ("JP", "13", "Tokyo"),
];
pub(crate) const DEVICES: [(&str, &str, &str, &str, &str); 3] = [
    ("desktop", "Windows 10", "Chrome", "1920x1080", "1600x900"),
    ("mobile", "iOS", "Safari", "390x844", "390x664"),
    ("desktop", "Mac OSX", "Firefox", "2560x1440", "1440x820"),
];
pub(crate) const LANGS: [(&str, &str); 3] = [
    ("en-US", "America/Los_Angeles"),
    ("de-DE", "Europe/Berlin"),
    ("fr-FR", "Europe/Paris"),
];
