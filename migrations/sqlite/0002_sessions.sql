-- Dashboard sessions. The token itself is never stored: only its
-- SHA-256 hash. Sessions last 7 days from login (fixed, not sliding); logout deletes
-- the row, expired rows are purged at the next login.

CREATE TABLE sessions (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id    INTEGER NOT NULL REFERENCES users(id),
    token_hash TEXT NOT NULL UNIQUE,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);
CREATE INDEX sessions_user ON sessions (user_id);
CREATE INDEX sessions_expiry ON sessions (expires_at);
