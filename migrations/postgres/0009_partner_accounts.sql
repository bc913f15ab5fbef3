-- Partner accounts: a partner signs in with its account email and a password, set when
-- it accepts an invite (which also resets a forgotten password) or applies to a program,
-- and holds sessions of its own, apart from dashboard sessions. Programs say whether
-- they take applications and whether approved partners make their own links; an
-- application keeps the applicant's website and message. Tokens are stored as SHA-256
-- hashes only.
ALTER TABLE partners ADD COLUMN account_email TEXT;
ALTER TABLE partners ADD COLUMN password_hash TEXT;
CREATE UNIQUE INDEX partners_account_email ON partners (account_email);
ALTER TABLE programs ADD COLUMN applications_open BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE programs ADD COLUMN partner_links_allowed BOOLEAN NOT NULL DEFAULT TRUE;
ALTER TABLE partner_programs ADD COLUMN website TEXT;
ALTER TABLE partner_programs ADD COLUMN message TEXT;

CREATE TABLE partner_invites (
    id         BIGSERIAL PRIMARY KEY,
    partner_id BIGINT NOT NULL REFERENCES partners(id),
    token_hash TEXT NOT NULL UNIQUE,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    used_at    BIGINT
);
CREATE INDEX partner_invites_partner ON partner_invites (partner_id);

CREATE TABLE partner_sessions (
    id         BIGSERIAL PRIMARY KEY,
    partner_id BIGINT NOT NULL REFERENCES partners(id),
    token_hash TEXT NOT NULL UNIQUE,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX partner_sessions_partner ON partner_sessions (partner_id);
CREATE INDEX partner_sessions_expiry ON partner_sessions (expires_at);
