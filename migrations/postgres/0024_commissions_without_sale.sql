-- Lead and bonus commissions have no sale; a lead commission names its lead event.
ALTER TABLE commissions ALTER COLUMN sale_id DROP NOT NULL;
ALTER TABLE commissions ADD COLUMN lead_id BIGINT REFERENCES affiliate_lead_events(id);
CREATE UNIQUE INDEX commissions_lead ON commissions (lead_id) WHERE kind = 'lead';
