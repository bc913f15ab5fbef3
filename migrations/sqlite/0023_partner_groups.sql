-- Partner groups: every approved partner of a program is in exactly one group, whose
-- rewards (`{"sale": …, "lead": …}`, the wire form, validated before it is stored) decide
-- what its sales and leads earn. `version` rises with every change of `rewards`, so a
-- reader can keep the parsed form of a version. A reward's percentage is above 0, so a
-- program's 0 % (which earns nothing either way) becomes a flat 0. A program's default group holds the sale
-- reward its `commission_*` and `recurring_commission_months` columns mirror.
CREATE TABLE partner_groups (
    id                   INTEGER PRIMARY KEY AUTOINCREMENT,
    program_id           INTEGER NOT NULL REFERENCES programs(id),
    name                 TEXT NOT NULL,
    is_default           BOOLEAN NOT NULL DEFAULT 0,
    rewards              TEXT NOT NULL,
    version              INTEGER NOT NULL DEFAULT 1,
    commission_hold_days INTEGER,
    created_at           INTEGER NOT NULL,
    updated_at           INTEGER NOT NULL
);
CREATE UNIQUE INDEX partner_groups_name ON partner_groups (program_id, lower(name));
CREATE UNIQUE INDEX partner_groups_default ON partner_groups (program_id) WHERE is_default;

INSERT INTO partner_groups (program_id, name, is_default, rewards, created_at, updated_at)
SELECT id, 'Default', 1,
    json_object('sale', CASE WHEN commission_type = 'flat'
        OR COALESCE(commission_bps, 0) = 0 THEN json_object('type', 'flat',
            'amount_cents', CASE WHEN commission_type = 'flat'
                THEN COALESCE(commission_amount_cents, 0) ELSE 0 END,
            'max_duration_months', recurring_commission_months)
        ELSE json_object('type', 'percentage', 'percent', COALESCE(commission_bps, 0) / 100.0,
            'max_duration_months', recurring_commission_months) END,
        'lead', NULL),
    created_at, updated_at
FROM programs;

ALTER TABLE partner_programs ADD COLUMN group_id INTEGER REFERENCES partner_groups(id);
UPDATE partner_programs SET group_id = (SELECT g.id FROM partner_groups g
    WHERE g.program_id = partner_programs.program_id AND g.is_default);
CREATE INDEX partner_programs_group ON partner_programs (group_id);

-- The group whose reward made a commission, and what it says about that reward.
ALTER TABLE commissions ADD COLUMN group_id INTEGER;
ALTER TABLE commissions ADD COLUMN description TEXT;
