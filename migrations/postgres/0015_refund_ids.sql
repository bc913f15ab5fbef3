-- The integrator's ids of a sale's refunds (the tracking API's optional `refund_id`):
-- a refund sent again under the same id changes nothing.
CREATE TABLE sale_refunds (
    sale_id      BIGINT NOT NULL REFERENCES affiliate_sale_events(id),
    refund_id    TEXT NOT NULL,
    amount_cents BIGINT NOT NULL,
    created_at   BIGINT NOT NULL,
    PRIMARY KEY (sale_id, refund_id)
);
