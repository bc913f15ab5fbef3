-- A customer's latest click (what the fraud rules read for each sale) comes from the last
-- entry of this index for the customer, whatever the planner knows of the table; it
-- replaces the index on the customer alone, which it covers.
CREATE INDEX click_events_customer_latest ON affiliate_click_events (customer_id, id);
DROP INDEX click_events_customer;
