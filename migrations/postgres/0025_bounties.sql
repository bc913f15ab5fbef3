-- Bounties: a one-off reward for reaching a goal. `group_ids` is a JSON list of the
-- groups whose partners may earn it (empty: every group).
CREATE TABLE bounties (
    id           BIGSERIAL PRIMARY KEY,
    program_id   BIGINT NOT NULL REFERENCES programs(id),
    name         TEXT NOT NULL,
    metric       TEXT NOT NULL,
    threshold    BIGINT NOT NULL,
    amount_cents BIGINT NOT NULL,
    group_ids    TEXT NOT NULL DEFAULT '[]',
    starts_at    BIGINT,
    ends_at      BIGINT,
    archived     BOOLEAN NOT NULL DEFAULT FALSE,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL
);
CREATE INDEX bounties_program ON bounties (program_id, id);

-- Each partner's value of each bounty, kept in the transaction of every event it counts,
-- and whether the partner earned it.
CREATE TABLE bounty_progress (
    bounty_id  BIGINT NOT NULL REFERENCES bounties(id),
    partner_id BIGINT NOT NULL REFERENCES partners(id),
    value      BIGINT NOT NULL DEFAULT 0,
    earned     BOOLEAN NOT NULL DEFAULT FALSE,
    PRIMARY KEY (bounty_id, partner_id)
);

-- A bounty's commission names it; a partner earns each bounty once.
ALTER TABLE commissions ADD COLUMN bounty_id BIGINT REFERENCES bounties(id);
CREATE UNIQUE INDEX commissions_bounty ON commissions (bounty_id, partner_id)
    WHERE kind = 'bounty';
