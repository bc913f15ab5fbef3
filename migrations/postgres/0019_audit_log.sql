-- The audit log: one row per change to money, access or settings, written in the
-- transaction of the change. Rows are never changed or deleted: the triggers refuse it.
CREATE TABLE audit_log (
    id           BIGSERIAL PRIMARY KEY,
    workspace_id BIGINT NOT NULL REFERENCES workspaces(id),
    program_id   BIGINT,
    at           BIGINT NOT NULL,
    actor_type   TEXT NOT NULL CHECK (actor_type IN ('user', 'operator', 'partner', 'system')),
    actor_id     BIGINT,
    actor_email  TEXT,
    action       TEXT NOT NULL,
    target_type  TEXT NOT NULL,
    target_id    BIGINT NOT NULL,
    details      TEXT NOT NULL DEFAULT '{}',
    ip           TEXT,
    request_id   TEXT
);

CREATE INDEX audit_log_workspace_at ON audit_log (workspace_id, at DESC, id DESC);
CREATE INDEX audit_log_workspace_action ON audit_log (workspace_id, action, at DESC);
CREATE INDEX audit_log_program_at ON audit_log (program_id, at DESC) WHERE program_id IS NOT NULL;

CREATE FUNCTION audit_log_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit log rows are never changed or deleted';
END;
$$;

CREATE TRIGGER audit_log_no_change BEFORE UPDATE OR DELETE ON audit_log
FOR EACH ROW EXECUTE FUNCTION audit_log_refuse_change();

CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
FOR EACH STATEMENT EXECUTE FUNCTION audit_log_refuse_change();
