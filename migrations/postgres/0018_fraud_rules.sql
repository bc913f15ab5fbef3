-- Fraud rules: the program's action per rule (JSON; NULL reads as the defaults), the IP
-- each click came from, whether a customer's lead email is at a disposable-mail domain
-- (NULL: not known, so a set-based sale leaves the customer to its own flow), the IPs
-- each partner's customers converted from and the partner's portal sign-in IPs. The IPs
-- are purged after their retention period (docs/privacy.md).
ALTER TABLE programs ADD COLUMN fraud_rules TEXT;
ALTER TABLE affiliate_click_events ADD COLUMN ip TEXT;
CREATE INDEX click_events_ip_age ON affiliate_click_events (click_timestamp)
    WHERE ip IS NOT NULL;
ALTER TABLE customers ADD COLUMN email_disposable BOOLEAN;

CREATE TABLE conversion_ips (
    id           BIGSERIAL PRIMARY KEY,
    partner_id   BIGINT NOT NULL,
    customer_id  BIGINT NOT NULL,
    ip           TEXT NOT NULL,
    converted_at BIGINT NOT NULL
);
CREATE INDEX conversion_ips_lookup ON conversion_ips (partner_id, ip, converted_at);
CREATE INDEX conversion_ips_age ON conversion_ips (converted_at);

CREATE TABLE partner_sign_in_ips (
    partner_id   BIGINT NOT NULL,
    ip           TEXT NOT NULL,
    signed_in_at BIGINT NOT NULL,
    PRIMARY KEY (partner_id, ip)
);
CREATE INDEX partner_sign_in_ips_age ON partner_sign_in_ips (signed_in_at);

-- The review queue: commissions waiting for an owner.
CREATE INDEX commissions_review ON commissions (program_id, id)
    WHERE status = 'pending' AND manual_approval;
