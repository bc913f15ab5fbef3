-- Paying partners: a hold period and a payout threshold per program, payout details per
-- partner, the commission lifecycle (approved, paid, rejected; clawbacks after payment)
-- and payouts with their items. docs/paying-partners.md describes the rules.
ALTER TABLE programs ADD COLUMN commission_hold_days INTEGER NOT NULL DEFAULT 30;
ALTER TABLE programs ADD COLUMN min_payout_cents INTEGER NOT NULL DEFAULT 5000;
ALTER TABLE partners ADD COLUMN payout_method TEXT;
ALTER TABLE partners ADD COLUMN payout_email TEXT;

CREATE TABLE payouts (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    program_id   INTEGER NOT NULL REFERENCES programs(id),
    status       TEXT NOT NULL,
    currency     TEXT NOT NULL,
    total_cents  INTEGER NOT NULL,
    reference    TEXT,
    created_at   INTEGER NOT NULL,
    paid_at      INTEGER,
    cancelled_at INTEGER
);
CREATE INDEX payouts_program ON payouts (program_id, id);

-- What each partner is paid by a payout, as it was when the payout was created.
CREATE TABLE payout_items (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    payout_id        INTEGER NOT NULL REFERENCES payouts(id),
    partner_id       INTEGER NOT NULL REFERENCES partners(id),
    partner_name     TEXT NOT NULL,
    payout_method    TEXT,
    payout_email     TEXT NOT NULL,
    amount_cents     INTEGER NOT NULL,
    commission_count INTEGER NOT NULL
);
CREATE INDEX payout_items_payout ON payout_items (payout_id, partner_id);
CREATE INDEX payout_items_partner ON payout_items (partner_id);

-- A clawback is a commission of its own on the same sale, so the one-commission-per-sale
-- rule becomes one *sale* commission per sale. SQLite drops a UNIQUE column constraint
-- only by rebuilding the table.
CREATE TABLE commissions_new (
    id                     INTEGER PRIMARY KEY AUTOINCREMENT,
    program_id             INTEGER NOT NULL REFERENCES programs(id),
    sale_id                INTEGER NOT NULL REFERENCES affiliate_sale_events(id),
    partner_id             INTEGER NOT NULL REFERENCES partners(id),
    partner_program_id     INTEGER NOT NULL REFERENCES partner_programs(id),
    kind                   TEXT NOT NULL DEFAULT 'sale',
    original_commission_id INTEGER REFERENCES commissions_new(id),
    amount_cents           INTEGER NOT NULL,
    reversed_cents         INTEGER NOT NULL DEFAULT 0,
    currency               TEXT NOT NULL,
    status                 TEXT NOT NULL,
    payout_id              INTEGER REFERENCES payouts(id),
    reject_reason          TEXT,
    approved_at            INTEGER,
    paid_at                INTEGER,
    created_at             INTEGER NOT NULL,
    updated_at             INTEGER NOT NULL
);
INSERT INTO commissions_new (id, program_id, sale_id, partner_id, partner_program_id,
    amount_cents, reversed_cents, currency, status, created_at, updated_at)
SELECT id, program_id, sale_id, partner_id, partner_program_id, amount_cents,
    reversed_cents, currency, CASE WHEN status = 'refunded' THEN 'pending' ELSE status END,
    created_at, updated_at
FROM commissions;
DROP TABLE commissions;
ALTER TABLE commissions_new RENAME TO commissions;
CREATE UNIQUE INDEX commissions_sale ON commissions (sale_id) WHERE kind = 'sale';
CREATE INDEX commissions_list ON commissions (program_id, id);
CREATE INDEX commissions_partner ON commissions (program_id, partner_id, id);
-- The minute job that records approvals after the hold reads only pending commissions.
CREATE INDEX commissions_pending ON commissions (program_id, created_at)
    WHERE status = 'pending';
CREATE INDEX commissions_payout ON commissions (payout_id) WHERE payout_id IS NOT NULL;
CREATE INDEX commissions_original ON commissions (original_commission_id)
    WHERE original_commission_id IS NOT NULL;
