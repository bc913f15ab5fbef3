-- The two tables every click writes carry no foreign keys on PostgreSQL: their
-- references come from the link the same request looked up, Reftrack never deletes
-- programs, partners, links or customers, and `reftrack verify` reports any customer or
-- click event whose references do not resolve (docs/decisions.md). The seven checks cost
-- 40 % of the click path's time in PostgreSQL (docs/benchmarks.md).
ALTER TABLE customers
    DROP CONSTRAINT IF EXISTS customers_program_id_fkey,
    DROP CONSTRAINT IF EXISTS customers_partner_id_fkey,
    DROP CONSTRAINT IF EXISTS customers_link_id_fkey;
ALTER TABLE affiliate_click_events
    DROP CONSTRAINT IF EXISTS affiliate_click_events_program_id_fkey,
    DROP CONSTRAINT IF EXISTS affiliate_click_events_customer_id_fkey,
    DROP CONSTRAINT IF EXISTS affiliate_click_events_link_id_fkey,
    DROP CONSTRAINT IF EXISTS affiliate_click_events_partner_id_fkey;
