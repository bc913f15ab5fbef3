-- Stripe webhooks: each event is processed once per program, recorded in the same
-- transaction as its effect; sales remember the payment ids that refunds refer to.
CREATE TABLE stripe_events (
    program_id  INTEGER NOT NULL REFERENCES programs(id),
    event_id    TEXT NOT NULL,
    event_type  TEXT NOT NULL,
    outcome     TEXT NOT NULL,
    received_at INTEGER NOT NULL,
    PRIMARY KEY (program_id, event_id)
);

ALTER TABLE affiliate_sale_events ADD COLUMN payment_intent_id TEXT;
ALTER TABLE affiliate_sale_events ADD COLUMN charge_id TEXT;
CREATE INDEX sale_events_payment_intent ON affiliate_sale_events (program_id, payment_intent_id);
CREATE INDEX sale_events_charge ON affiliate_sale_events (program_id, charge_id);
