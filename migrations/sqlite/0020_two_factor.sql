-- Two-factor sign-in (TOTP) of dashboard users and partner accounts, told apart by
-- `account_kind` ('user' or 'partner'). `pending_secret` is the secret of a setup not yet
-- confirmed with a code; `secret` the one in use once enabled; `last_step` the 30-second
-- step of the last code accepted, so that a code works once. Recovery codes are stored as
-- SHA-256 hashes and work once each. A pending sign-in is the second step of the sign-in
-- pages: the hash of a short-lived token that stands for a password already checked.
-- A workspace may require its members to have two-factor on.
CREATE TABLE two_factor (
    account_kind   TEXT NOT NULL,
    account_id     INTEGER NOT NULL,
    secret         TEXT,
    pending_secret TEXT,
    enabled_at     INTEGER,
    last_step      INTEGER,
    PRIMARY KEY (account_kind, account_id)
);

CREATE TABLE two_factor_recovery_codes (
    account_kind TEXT NOT NULL,
    account_id   INTEGER NOT NULL,
    code_hash    TEXT NOT NULL,
    used_at      INTEGER,
    PRIMARY KEY (account_kind, account_id, code_hash)
);

CREATE TABLE two_factor_pending_logins (
    token_hash   TEXT PRIMARY KEY,
    account_kind TEXT NOT NULL,
    account_id   INTEGER NOT NULL,
    email        TEXT NOT NULL,
    expires_at   INTEGER NOT NULL
);

ALTER TABLE workspaces ADD COLUMN require_two_factor BOOLEAN NOT NULL DEFAULT 0;
