-- `converted` on click and lead events is derived when events are listed, from their
-- customer's first purchase (docs/decisions.md), instead of being written by each sale:
-- those two writes dirtied two random pages per sale, most of a sale's disk traffic.
ALTER TABLE affiliate_click_events DROP COLUMN converted;
ALTER TABLE affiliate_lead_events DROP COLUMN converted;
