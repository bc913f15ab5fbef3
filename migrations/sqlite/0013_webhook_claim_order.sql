-- The worker claims due deliveries in (next_attempt_at, id) order: an index in that
-- order lets a claim read its first rows instead of sorting every due delivery (a
-- backlog of tens of thousands made each claim sort them all on PostgreSQL).
DROP INDEX webhook_deliveries_due;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at, id)
    WHERE status = 'pending';
