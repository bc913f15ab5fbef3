-- The audit log: one row per change to money, access or settings, written in the
-- transaction of the change. Rows are never changed or deleted: the triggers refuse it.
CREATE TABLE audit_log (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    workspace_id INTEGER NOT NULL REFERENCES workspaces(id),
    program_id   INTEGER,
    at           INTEGER NOT NULL,
    actor_type   TEXT NOT NULL CHECK (actor_type IN ('user', 'operator', 'partner', 'system')),
    actor_id     INTEGER,
    actor_email  TEXT,
    action       TEXT NOT NULL,
    target_type  TEXT NOT NULL,
    target_id    INTEGER NOT NULL,
    details      TEXT NOT NULL DEFAULT '{}',
    ip           TEXT,
    request_id   TEXT
);

CREATE INDEX audit_log_workspace_at ON audit_log (workspace_id, at DESC, id DESC);
CREATE INDEX audit_log_workspace_action ON audit_log (workspace_id, action, at DESC);
CREATE INDEX audit_log_program_at ON audit_log (program_id, at DESC) WHERE program_id IS NOT NULL;

CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN SELECT RAISE(ABORT, 'audit log rows are never changed'); END;

CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN SELECT RAISE(ABORT, 'audit log rows are never deleted'); END;
