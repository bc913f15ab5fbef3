-- Outbound webhooks. A program's endpoints (`webhook_endpoints`) subscribe to event
-- types, stored as their names, comma-separated; the secret is kept as issued
-- (`whsec_…`), since signing needs it. Each event is written, in the transaction of the
-- change it reports, as one delivery per subscribed endpoint (`webhook_deliveries`,
-- the outbox: the message's id, type and body, its status and when it is next due);
-- `lease_until` and `lease_token` reserve a delivery for the process sending it. Every
-- attempt is logged in `webhook_attempts`.
CREATE TABLE webhook_endpoints (
    id              BIGSERIAL PRIMARY KEY,
    program_id      BIGINT NOT NULL REFERENCES programs(id),
    url             TEXT NOT NULL,
    secret          TEXT NOT NULL,
    events          TEXT NOT NULL,
    enabled         BOOLEAN NOT NULL DEFAULT TRUE,
    disabled_reason TEXT,
    failing_since   BIGINT,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL
);
CREATE INDEX webhook_endpoints_program ON webhook_endpoints (program_id, id);

CREATE TABLE webhook_deliveries (
    id              BIGSERIAL PRIMARY KEY,
    endpoint_id     BIGINT NOT NULL REFERENCES webhook_endpoints(id),
    message_id      TEXT NOT NULL,
    event_type      TEXT NOT NULL,
    payload         TEXT NOT NULL,
    status          TEXT NOT NULL DEFAULT 'pending',
    attempts        BIGINT NOT NULL DEFAULT 0,
    next_attempt_at BIGINT,
    lease_until     BIGINT,
    lease_token     BIGINT,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at)
    WHERE status = 'pending';
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, id);
CREATE INDEX webhook_deliveries_lease ON webhook_deliveries (lease_token)
    WHERE lease_token IS NOT NULL;

CREATE TABLE webhook_attempts (
    id          BIGSERIAL PRIMARY KEY,
    delivery_id BIGINT NOT NULL REFERENCES webhook_deliveries(id),
    at          BIGINT NOT NULL,
    status_code BIGINT,
    error       TEXT
);
CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id, id);
