-- Bounties: a one-off reward for reaching a goal. `group_ids` is a JSON list of the
-- groups whose partners may earn it (empty: every group).
CREATE TABLE bounties (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    program_id   INTEGER NOT NULL REFERENCES programs(id),
    name         TEXT NOT NULL,
    metric       TEXT NOT NULL,
    threshold    INTEGER NOT NULL,
    amount_cents INTEGER NOT NULL,
    group_ids    TEXT NOT NULL DEFAULT '[]',
    starts_at    INTEGER,
    ends_at      INTEGER,
    archived     BOOLEAN NOT NULL DEFAULT 0,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
);
CREATE INDEX bounties_program ON bounties (program_id, id);

-- Each partner's value of each bounty, kept in the transaction of every event it counts,
-- and whether the partner earned it.
CREATE TABLE bounty_progress (
    bounty_id  INTEGER NOT NULL REFERENCES bounties(id),
    partner_id INTEGER NOT NULL REFERENCES partners(id),
    value      INTEGER NOT NULL DEFAULT 0,
    earned     BOOLEAN NOT NULL DEFAULT 0,
    PRIMARY KEY (bounty_id, partner_id)
);

-- A bounty's commission names it; a partner earns each bounty once.
ALTER TABLE commissions ADD COLUMN bounty_id INTEGER REFERENCES bounties(id);
CREATE UNIQUE INDEX commissions_bounty ON commissions (bounty_id, partner_id)
    WHERE kind = 'bounty';
