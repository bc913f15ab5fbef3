-- Money in every currency.
--
-- Exchange rates, server-wide: on `rate_date` (YYYY-MM-DD), `rate` units of `quote` for
-- one unit of `base` (lower-case ISO 4217 codes), kept as exact decimal text.
CREATE TABLE exchange_rates (
    rate_date  TEXT NOT NULL,
    base       TEXT NOT NULL,
    quote      TEXT NOT NULL,
    rate       TEXT NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (rate_date, base, quote)
);

-- A sale in a currency other than its program's: its amount in the program's currency,
-- the rate it was converted at (program-currency units for one unit of the sale's) and
-- that rate's date; or, while no rate is known, `awaiting_rate`. A sale in the program's
-- currency leaves the three empty.
ALTER TABLE affiliate_sale_events ADD COLUMN converted_amount_cents INTEGER;
ALTER TABLE affiliate_sale_events ADD COLUMN exchange_rate TEXT;
ALTER TABLE affiliate_sale_events ADD COLUMN rate_date TEXT;
ALTER TABLE affiliate_sale_events ADD COLUMN awaiting_rate BOOLEAN NOT NULL DEFAULT 0;
CREATE INDEX sale_events_awaiting_rate ON affiliate_sale_events (id) WHERE awaiting_rate;

-- The commission of a sale awaiting a rate: amount 0 until the rate arrives, with what
-- the reward decision knew at the sale (JSON) to decide its amount then.
ALTER TABLE commissions ADD COLUMN awaiting_rate BOOLEAN NOT NULL DEFAULT 0;
ALTER TABLE commissions ADD COLUMN reward_facts TEXT;

-- Figures were kept in hundredths of the major unit whatever the currency; they are now
-- in minor units of the program's currency: a hundredth of a yen is no unit of its own,
-- and a three-decimal currency counts thousandths.
UPDATE daily_rollups SET revenue_cents = revenue_cents / 100,
    commission_cents = commission_cents / 100
WHERE program_id IN (SELECT id FROM programs WHERE currency IN ('bif', 'clp', 'djf', 'gnf',
    'jpy', 'kmf', 'krw', 'mga', 'pyg', 'rwf', 'ugx', 'vnd', 'vuv', 'xaf', 'xof', 'xpf'));
UPDATE partner_daily_rollups SET revenue_cents = revenue_cents / 100,
    commission_cents = commission_cents / 100
WHERE program_id IN (SELECT id FROM programs WHERE currency IN ('bif', 'clp', 'djf', 'gnf',
    'jpy', 'kmf', 'krw', 'mga', 'pyg', 'rwf', 'ugx', 'vnd', 'vuv', 'xaf', 'xof', 'xpf'));
UPDATE partner_programs SET total_revenue_cents = total_revenue_cents / 100,
    total_commission_cents = total_commission_cents / 100
WHERE program_id IN (SELECT id FROM programs WHERE currency IN ('bif', 'clp', 'djf', 'gnf',
    'jpy', 'kmf', 'krw', 'mga', 'pyg', 'rwf', 'ugx', 'vnd', 'vuv', 'xaf', 'xof', 'xpf'));
UPDATE daily_rollups SET revenue_cents = revenue_cents * 10,
    commission_cents = commission_cents * 10
WHERE program_id IN (SELECT id FROM programs WHERE currency IN ('bhd', 'jod', 'kwd', 'omr', 'tnd'));
UPDATE partner_daily_rollups SET revenue_cents = revenue_cents * 10,
    commission_cents = commission_cents * 10
WHERE program_id IN (SELECT id FROM programs WHERE currency IN ('bhd', 'jod', 'kwd', 'omr', 'tnd'));
UPDATE partner_programs SET total_revenue_cents = total_revenue_cents * 10,
    total_commission_cents = total_commission_cents * 10
WHERE program_id IN (SELECT id FROM programs WHERE currency IN ('bhd', 'jod', 'kwd', 'omr', 'tnd'));
