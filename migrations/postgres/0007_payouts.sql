-- Paying partners: a hold period and a payout threshold per program, payout details per
-- partner, the commission lifecycle (approved, paid, rejected; clawbacks after payment)
-- and payouts with their items. docs/paying-partners.md describes the rules.
ALTER TABLE programs ADD COLUMN commission_hold_days BIGINT NOT NULL DEFAULT 30;
ALTER TABLE programs ADD COLUMN min_payout_cents BIGINT NOT NULL DEFAULT 5000;
ALTER TABLE partners ADD COLUMN payout_method TEXT;
ALTER TABLE partners ADD COLUMN payout_email TEXT;

CREATE TABLE payouts (
    id           BIGSERIAL PRIMARY KEY,
    program_id   BIGINT NOT NULL REFERENCES programs(id),
    status       TEXT NOT NULL,
    currency     TEXT NOT NULL,
    total_cents  BIGINT NOT NULL,
    reference    TEXT,
    created_at   BIGINT NOT NULL,
    paid_at      BIGINT,
    cancelled_at BIGINT
);
CREATE INDEX payouts_program ON payouts (program_id, id);

-- What each partner is paid by a payout, as it was when the payout was created.
CREATE TABLE payout_items (
    id               BIGSERIAL PRIMARY KEY,
    payout_id        BIGINT NOT NULL REFERENCES payouts(id),
    partner_id       BIGINT NOT NULL REFERENCES partners(id),
    partner_name     TEXT NOT NULL,
    payout_method    TEXT,
    payout_email     TEXT NOT NULL,
    amount_cents     BIGINT NOT NULL,
    commission_count BIGINT NOT NULL
);
CREATE INDEX payout_items_payout ON payout_items (payout_id, partner_id);
CREATE INDEX payout_items_partner ON payout_items (partner_id);

-- A clawback is a commission of its own on the same sale, so the one-commission-per-sale
-- rule becomes one *sale* commission per sale.
ALTER TABLE commissions DROP CONSTRAINT commissions_sale_id_key;
ALTER TABLE commissions
    ADD COLUMN kind TEXT NOT NULL DEFAULT 'sale',
    ADD COLUMN original_commission_id BIGINT REFERENCES commissions(id),
    ADD COLUMN payout_id BIGINT REFERENCES payouts(id),
    ADD COLUMN reject_reason TEXT,
    ADD COLUMN approved_at BIGINT,
    ADD COLUMN paid_at BIGINT;
UPDATE commissions SET status = 'pending' WHERE status = 'refunded';
CREATE UNIQUE INDEX commissions_sale ON commissions (sale_id) WHERE kind = 'sale';
CREATE INDEX commissions_list ON commissions (program_id, id);
CREATE INDEX commissions_partner ON commissions (program_id, partner_id, id);
-- The minute job that records approvals after the hold reads only pending commissions.
CREATE INDEX commissions_pending ON commissions (program_id, created_at)
    WHERE status = 'pending';
CREATE INDEX commissions_payout ON commissions (payout_id) WHERE payout_id IS NOT NULL;
CREATE INDEX commissions_original ON commissions (original_commission_id)
    WHERE original_commission_id IS NOT NULL;
