-- SQLite stores an integer sum that overflows 64 bits as a REAL instead of failing, and a
-- counter that became a REAL breaks every read of it. These triggers refuse such an update
-- with the error `counter overflow`, which the store reads as "too large" and refuses
-- alone (PostgreSQL raises `bigint out of range` by itself, so it needs none).
CREATE TRIGGER partner_programs_counters_whole BEFORE UPDATE ON partner_programs
WHEN typeof(NEW.total_clicks) <> 'integer' OR typeof(NEW.total_leads) <> 'integer'
  OR typeof(NEW.total_sales) <> 'integer' OR typeof(NEW.total_revenue_cents) <> 'integer'
  OR typeof(NEW.total_commission_cents) <> 'integer'
BEGIN SELECT RAISE(ABORT, 'counter overflow'); END;

CREATE TRIGGER referral_links_counters_whole BEFORE UPDATE ON referral_links
WHEN typeof(NEW.clicks) <> 'integer'
BEGIN SELECT RAISE(ABORT, 'counter overflow'); END;

CREATE TRIGGER daily_rollups_counters_whole BEFORE UPDATE ON daily_rollups
WHEN typeof(NEW.clicks) <> 'integer' OR typeof(NEW.leads) <> 'integer'
  OR typeof(NEW.conversions) <> 'integer' OR typeof(NEW.revenue_cents) <> 'integer'
  OR typeof(NEW.sales) <> 'integer' OR typeof(NEW.commission_cents) <> 'integer'
  OR typeof(NEW.partners) <> 'integer' OR typeof(NEW.lead_events) <> 'integer'
  OR typeof(NEW.sale_events) <> 'integer'
BEGIN SELECT RAISE(ABORT, 'counter overflow'); END;

CREATE TRIGGER partner_daily_rollups_counters_whole BEFORE UPDATE ON partner_daily_rollups
WHEN typeof(NEW.clicks) <> 'integer' OR typeof(NEW.leads) <> 'integer'
  OR typeof(NEW.conversions) <> 'integer' OR typeof(NEW.revenue_cents) <> 'integer'
  OR typeof(NEW.sales) <> 'integer' OR typeof(NEW.commission_cents) <> 'integer'
BEGIN SELECT RAISE(ABORT, 'counter overflow'); END;

CREATE TRIGGER sale_refunds_whole BEFORE UPDATE OF refunded_cents ON affiliate_sale_events
WHEN typeof(NEW.refunded_cents) <> 'integer'
BEGIN SELECT RAISE(ABORT, 'counter overflow'); END;

CREATE TRIGGER commission_reversals_whole BEFORE UPDATE OF reversed_cents ON commissions
WHEN typeof(NEW.reversed_cents) <> 'integer'
BEGIN SELECT RAISE(ABORT, 'counter overflow'); END;
