-- Sales are looked up by subscription, payment intent and charge only with a value, and
-- most sales (those reported through the API without a subscription) have none: partial
-- indexes leave them out, so such a sale writes three index entries fewer.
DROP INDEX sale_events_subscription;
CREATE INDEX sale_events_subscription ON affiliate_sale_events (program_id, subscription_id)
    WHERE subscription_id IS NOT NULL;
DROP INDEX sale_events_payment_intent;
CREATE INDEX sale_events_payment_intent ON affiliate_sale_events (program_id, payment_intent_id)
    WHERE payment_intent_id IS NOT NULL;
DROP INDEX sale_events_charge;
CREATE INDEX sale_events_charge ON affiliate_sale_events (program_id, charge_id)
    WHERE charge_id IS NOT NULL;
