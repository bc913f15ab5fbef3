-- Outbound webhooks. A program's endpoints (`webhook_endpoints`) subscribe to event
-- types, stored as their names, comma-separated; the secret is kept as issued
-- (`whsec_…`), since signing needs it. Each event is written, in the transaction of the
-- change it reports, as one delivery per subscribed endpoint (`webhook_deliveries`,
-- the outbox: the message's id, type and body, its status and when it is next due);
-- `lease_until` and `lease_token` reserve a delivery for the process sending it. Every
-- attempt is logged in `webhook_attempts`.
CREATE TABLE webhook_endpoints (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    program_id      INTEGER NOT NULL REFERENCES programs(id),
    url             TEXT NOT NULL,
    secret          TEXT NOT NULL,
    events          TEXT NOT NULL,
    enabled         BOOLEAN NOT NULL DEFAULT 1,
    disabled_reason TEXT,
    failing_since   INTEGER,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
);
CREATE INDEX webhook_endpoints_program ON webhook_endpoints (program_id, id);

CREATE TABLE webhook_deliveries (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    endpoint_id     INTEGER NOT NULL REFERENCES webhook_endpoints(id),
    message_id      TEXT NOT NULL,
    event_type      TEXT NOT NULL,
    payload         TEXT NOT NULL,
    status          TEXT NOT NULL DEFAULT 'pending',
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER,
    lease_until     INTEGER,
    lease_token     INTEGER,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at)
    WHERE status = 'pending';
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, id);
CREATE INDEX webhook_deliveries_lease ON webhook_deliveries (lease_token)
    WHERE lease_token IS NOT NULL;

CREATE TABLE webhook_attempts (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    delivery_id INTEGER NOT NULL REFERENCES webhook_deliveries(id),
    at          INTEGER NOT NULL,
    status_code INTEGER,
    error       TEXT
);
CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id, id);
