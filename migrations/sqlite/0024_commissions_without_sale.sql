-- Lead and bonus commissions have no sale: sale_id becomes nullable, and a lead
-- commission names its lead event. SQLite drops a NOT NULL constraint only by rebuilding
-- the table; its indexes and trigger are made again as they were.
CREATE TABLE commissions_new (
    id                     INTEGER PRIMARY KEY AUTOINCREMENT,
    program_id             INTEGER NOT NULL REFERENCES programs(id),
    sale_id                INTEGER REFERENCES affiliate_sale_events(id),
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
    updated_at             INTEGER NOT NULL,
    flags                  TEXT,
    manual_approval        BOOLEAN NOT NULL DEFAULT 0,
    group_id               INTEGER,
    description            TEXT,
    lead_id                INTEGER REFERENCES affiliate_lead_events(id)
);
INSERT INTO commissions_new (id, program_id, sale_id, partner_id, partner_program_id, kind,
    original_commission_id, amount_cents, reversed_cents, currency, status, payout_id,
    reject_reason, approved_at, paid_at, created_at, updated_at, flags, manual_approval,
    group_id, description)
SELECT id, program_id, sale_id, partner_id, partner_program_id, kind,
    original_commission_id, amount_cents, reversed_cents, currency, status, payout_id,
    reject_reason, approved_at, paid_at, created_at, updated_at, flags, manual_approval,
    group_id, description
FROM commissions;
DROP TABLE commissions;
ALTER TABLE commissions_new RENAME TO commissions;
CREATE UNIQUE INDEX commissions_sale ON commissions (sale_id) WHERE kind = 'sale';
CREATE UNIQUE INDEX commissions_lead ON commissions (lead_id) WHERE kind = 'lead';
CREATE INDEX commissions_list ON commissions (program_id, id);
CREATE INDEX commissions_partner ON commissions (program_id, partner_id, id);
CREATE INDEX commissions_pending ON commissions (program_id, created_at)
    WHERE status = 'pending';
CREATE INDEX commissions_payout ON commissions (payout_id) WHERE payout_id IS NOT NULL;
CREATE INDEX commissions_original ON commissions (original_commission_id)
    WHERE original_commission_id IS NOT NULL;
CREATE INDEX commissions_review ON commissions (program_id, id)
    WHERE status = 'pending' AND manual_approval;
CREATE TRIGGER commission_reversals_whole BEFORE UPDATE OF reversed_cents ON commissions
WHEN typeof(NEW.reversed_cents) <> 'integer'
BEGIN SELECT RAISE(ABORT, 'counter overflow'); END;
