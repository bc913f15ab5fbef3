-- Per-partner daily figures: what each partner's own links brought to a program each
-- UTC day (clicks, leads, conversions, revenue and sales net of refunds, commissions net
-- of reversals, in hundredths of the major unit), kept by the group committer in the
-- same transaction as the events, for the partner portal's chart. The rows of the events
-- recorded so far are computed here, the way the write path counts them.
CREATE TABLE partner_daily_rollups (
    program_id       BIGINT NOT NULL REFERENCES programs(id),
    partner_id       BIGINT NOT NULL REFERENCES partners(id),
    day              TEXT NOT NULL,
    clicks           BIGINT NOT NULL DEFAULT 0,
    leads            BIGINT NOT NULL DEFAULT 0,
    conversions      BIGINT NOT NULL DEFAULT 0,
    revenue_cents    BIGINT NOT NULL DEFAULT 0,
    sales            BIGINT NOT NULL DEFAULT 0,
    commission_cents BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (program_id, partner_id, day)
);

INSERT INTO partner_daily_rollups (program_id, partner_id, day, clicks)
SELECT program_id, partner_id, to_char(to_timestamp(click_timestamp / 1000) AT TIME ZONE 'UTC', 'YYYY-MM-DD'), COUNT(*)
FROM affiliate_click_events WHERE NOT is_test AND partner_id IS NOT NULL
GROUP BY 1, 2, 3;

-- A lead belongs to the partner its customer had then: the one of the customer's latest
-- click before it or, when none is earlier, of the click that created the customer.
INSERT INTO partner_daily_rollups (program_id, partner_id, day, leads)
SELECT program_id, partner_id, day, COUNT(*) FROM (
    SELECT e.program_id, to_char(to_timestamp(e.lead_timestamp / 1000) AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, COALESCE(
        (SELECT ce.partner_id FROM affiliate_click_events ce
         WHERE ce.customer_id = e.customer_id AND NOT ce.is_test
         AND ce.click_timestamp < e.lead_timestamp
         ORDER BY ce.click_timestamp DESC, ce.id DESC LIMIT 1),
        (SELECT ce.partner_id FROM affiliate_click_events ce
         WHERE ce.customer_id = e.customer_id AND NOT ce.is_test
         ORDER BY ce.id LIMIT 1)) AS partner_id
    FROM affiliate_lead_events e WHERE NOT e.is_test AND e.customer_id IS NOT NULL) l
WHERE partner_id IS NOT NULL GROUP BY 1, 2, 3
ON CONFLICT (program_id, partner_id, day) DO UPDATE SET leads = partner_daily_rollups.leads + excluded.leads;

-- A fully refunded sale no longer counts in `sales`.
INSERT INTO partner_daily_rollups (program_id, partner_id, day, sales, revenue_cents)
SELECT program_id, partner_id, to_char(to_timestamp(sale_date / 1000) AT TIME ZONE 'UTC', 'YYYY-MM-DD'),
    SUM(CASE WHEN payment_status = 'refunded' THEN 0 ELSE 1 END),
    SUM(CASE WHEN LOWER(currency) IN ('bif','clp','djf','gnf','jpy','kmf','krw','mga','pyg','rwf','ugx','vnd','vuv','xaf','xof','xpf') THEN (amount_cents - refunded_cents) * 100 ELSE amount_cents - refunded_cents END)
FROM affiliate_sale_events WHERE NOT is_test AND partner_id IS NOT NULL
GROUP BY 1, 2, 3
ON CONFLICT (program_id, partner_id, day) DO UPDATE SET sales = partner_daily_rollups.sales + excluded.sales, revenue_cents = partner_daily_rollups.revenue_cents + excluded.revenue_cents;

INSERT INTO partner_daily_rollups (program_id, partner_id, day, commission_cents)
SELECT s.program_id, c.partner_id, to_char(to_timestamp(s.sale_date / 1000) AT TIME ZONE 'UTC', 'YYYY-MM-DD'),
    SUM(CASE WHEN LOWER(s.currency) IN ('bif','clp','djf','gnf','jpy','kmf','krw','mga','pyg','rwf','ugx','vnd','vuv','xaf','xof','xpf') THEN (c.amount_cents - c.reversed_cents) * 100 ELSE c.amount_cents - c.reversed_cents END)
FROM commissions c JOIN affiliate_sale_events s ON s.id = c.sale_id
WHERE NOT s.is_test AND c.status <> 'rejected'
GROUP BY 1, 2, 3
ON CONFLICT (program_id, partner_id, day) DO UPDATE SET commission_cents = partner_daily_rollups.commission_cents + excluded.commission_cents;

-- A conversion is a customer's first purchase, counted for that sale's partner.
INSERT INTO partner_daily_rollups (program_id, partner_id, day, conversions)
SELECT s.program_id, s.partner_id, to_char(to_timestamp(s.sale_date / 1000) AT TIME ZONE 'UTC', 'YYYY-MM-DD'), COUNT(*)
FROM affiliate_sale_events s
JOIN (SELECT MIN(id) AS id FROM affiliate_sale_events
      WHERE NOT is_test AND customer_id IS NOT NULL GROUP BY customer_id) f ON f.id = s.id
WHERE s.partner_id IS NOT NULL
GROUP BY 1, 2, 3
ON CONFLICT (program_id, partner_id, day) DO UPDATE SET conversions = partner_daily_rollups.conversions + excluded.conversions;
