-- Reftrack schema, SQLite flavour. Timestamps are epoch milliseconds (INTEGER),
-- calendar days are 'YYYY-MM-DD' text in UTC, money is integer cents.

CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE workspaces (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    name       TEXT NOT NULL,
    created_at INTEGER NOT NULL
);

CREATE TABLE programs (
    id                          INTEGER PRIMARY KEY AUTOINCREMENT,
    workspace_id                INTEGER NOT NULL REFERENCES workspaces(id),
    name                        TEXT NOT NULL,
    api_token_hash              TEXT NOT NULL UNIQUE,
    api_token_prefix            TEXT NOT NULL,
    cookie_window_days          INTEGER NOT NULL,
    currency                    TEXT NOT NULL,
    commission_type             TEXT NOT NULL,
    commission_bps              INTEGER,
    commission_amount_cents     INTEGER,
    recurring_commission_months INTEGER,
    allowed_origins             TEXT NOT NULL,
    stripe_webhook_secret       TEXT,
    payment_status              TEXT NOT NULL DEFAULT 'not_connected',
    payment_account_id          TEXT,
    charges_enabled             BOOLEAN NOT NULL DEFAULT 0,
    payouts_enabled             BOOLEAN NOT NULL DEFAULT 0,
    details_submitted           BOOLEAN NOT NULL DEFAULT 0,
    connection_date             INTEGER,
    created_at                  INTEGER NOT NULL,
    updated_at                  INTEGER NOT NULL
);

CREATE TABLE partners (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    name       TEXT NOT NULL,
    code       TEXT NOT NULL UNIQUE,
    email      TEXT,
    created_at INTEGER NOT NULL
);

CREATE TABLE partner_programs (
    id                     INTEGER PRIMARY KEY AUTOINCREMENT,
    partner_id             INTEGER NOT NULL REFERENCES partners(id),
    program_id             INTEGER NOT NULL REFERENCES programs(id),
    status                 TEXT NOT NULL,
    total_clicks           INTEGER NOT NULL DEFAULT 0,
    total_leads            INTEGER NOT NULL DEFAULT 0,
    total_sales            INTEGER NOT NULL DEFAULT 0,
    total_revenue_cents    INTEGER NOT NULL DEFAULT 0,
    total_commission_cents INTEGER NOT NULL DEFAULT 0,
    created_at             INTEGER NOT NULL,
    UNIQUE (partner_id, program_id)
);
CREATE INDEX partner_programs_program ON partner_programs (program_id, status);

CREATE TABLE referral_links (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    program_id   INTEGER NOT NULL REFERENCES programs(id),
    partner_id   INTEGER REFERENCES partners(id),
    short_link   TEXT NOT NULL UNIQUE,
    status       TEXT NOT NULL,
    clicks       INTEGER NOT NULL DEFAULT 0,
    last_clicked INTEGER,
    created_at   INTEGER NOT NULL
);

CREATE TABLE customers (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    program_id          INTEGER NOT NULL REFERENCES programs(id),
    click_id            TEXT NOT NULL UNIQUE,
    customer_key        TEXT,
    email               TEXT,
    customer_status     TEXT NOT NULL,
    partner_id          INTEGER REFERENCES partners(id),
    link_id             INTEGER REFERENCES referral_links(id),
    signup_date         INTEGER,
    first_purchase_date INTEGER,
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL,
    UNIQUE (program_id, customer_key)
);

CREATE TABLE affiliate_click_events (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    program_id        INTEGER NOT NULL REFERENCES programs(id),
    customer_id       INTEGER REFERENCES customers(id),
    link_id           INTEGER REFERENCES referral_links(id),
    partner_id        INTEGER REFERENCES partners(id),
    click_id          TEXT,
    session_id        TEXT,
    page_url          TEXT,
    page_title        TEXT,
    referrer_url      TEXT,
    screen_resolution TEXT,
    viewport_size     TEXT,
    language          TEXT,
    timezone          TEXT,
    geo_country       TEXT,
    geo_region        TEXT,
    geo_city          TEXT,
    device_type       TEXT,
    device_os         TEXT,
    browser_name      TEXT,
    converted         BOOLEAN NOT NULL DEFAULT 0,
    is_test           BOOLEAN NOT NULL,
    click_timestamp   INTEGER NOT NULL,
    created_at        INTEGER NOT NULL
);
CREATE INDEX click_events_list ON affiliate_click_events (program_id, is_test, click_timestamp DESC, id DESC);
CREATE INDEX click_events_customer ON affiliate_click_events (customer_id);

CREATE TABLE affiliate_lead_events (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    program_id     INTEGER NOT NULL REFERENCES programs(id),
    customer_id    INTEGER REFERENCES customers(id),
    click_id       TEXT,
    customer_key   TEXT,
    email          TEXT,
    session_id     TEXT,
    page_url       TEXT,
    event_name     TEXT,
    converted      BOOLEAN NOT NULL DEFAULT 0,
    is_test        BOOLEAN NOT NULL,
    lead_timestamp INTEGER NOT NULL,
    created_at     INTEGER NOT NULL
);
CREATE INDEX lead_events_list ON affiliate_lead_events (program_id, is_test, lead_timestamp DESC, id DESC);
CREATE INDEX lead_events_customer ON affiliate_lead_events (customer_id);
-- One real lead per customer key and program: lead dedupe, race-safe.
CREATE UNIQUE INDEX lead_events_key ON affiliate_lead_events (program_id, customer_key) WHERE is_test = 0;

CREATE TABLE affiliate_sale_events (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    program_id         INTEGER NOT NULL REFERENCES programs(id),
    customer_id        INTEGER REFERENCES customers(id),
    partner_id         INTEGER REFERENCES partners(id),
    click_id           TEXT,
    customer_key       TEXT,
    processor_event_id TEXT NOT NULL UNIQUE,
    amount_cents       INTEGER NOT NULL,
    refunded_cents     INTEGER NOT NULL DEFAULT 0,
    currency           TEXT NOT NULL,
    sale_type          TEXT NOT NULL,
    payment_status     TEXT NOT NULL,
    is_recurring       BOOLEAN NOT NULL,
    subscription_id    TEXT,
    product_id         TEXT,
    metadata           TEXT,
    refund_reason      TEXT,
    is_test            BOOLEAN NOT NULL,
    sale_date          INTEGER NOT NULL,
    created_at         INTEGER NOT NULL
);
CREATE INDEX sale_events_list ON affiliate_sale_events (program_id, is_test, sale_date DESC, id DESC);
CREATE INDEX sale_events_subscription ON affiliate_sale_events (program_id, subscription_id);

CREATE TABLE commissions (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    program_id         INTEGER NOT NULL REFERENCES programs(id),
    sale_id            INTEGER NOT NULL UNIQUE REFERENCES affiliate_sale_events(id),
    partner_id         INTEGER NOT NULL REFERENCES partners(id),
    partner_program_id INTEGER NOT NULL REFERENCES partner_programs(id),
    amount_cents       INTEGER NOT NULL,
    reversed_cents     INTEGER NOT NULL DEFAULT 0,
    currency           TEXT NOT NULL,
    status             TEXT NOT NULL,
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL
);

-- Daily per-program figures, kept in the same transaction as the events they count.
CREATE TABLE daily_rollups (
    program_id       INTEGER NOT NULL REFERENCES programs(id),
    day              TEXT NOT NULL,
    clicks           INTEGER NOT NULL DEFAULT 0,
    leads            INTEGER NOT NULL DEFAULT 0,
    conversions      INTEGER NOT NULL DEFAULT 0,
    revenue_cents    INTEGER NOT NULL DEFAULT 0,
    sales            INTEGER NOT NULL DEFAULT 0,
    commission_cents INTEGER NOT NULL DEFAULT 0,
    partners         INTEGER NOT NULL DEFAULT 0,
    -- Real lead and sale events of the day, whatever became of them: the events list's totals.
    lead_events      INTEGER NOT NULL DEFAULT 0,
    sale_events      INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (program_id, day)
);

CREATE TABLE users (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    email         TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL,
    name          TEXT,
    created_at    INTEGER NOT NULL
);

CREATE TABLE memberships (
    workspace_id INTEGER NOT NULL REFERENCES workspaces(id),
    user_id      INTEGER NOT NULL REFERENCES users(id),
    role         TEXT NOT NULL,
    status       TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (workspace_id, user_id)
);
