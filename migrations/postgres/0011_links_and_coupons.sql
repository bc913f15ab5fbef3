-- Redirect links, coupon codes and self-referrals (docs/links-and-coupons.md).
-- Where a redirect link sends a visitor: the program's destination, or the link's own.
ALTER TABLE programs ADD COLUMN destination_url TEXT;
ALTER TABLE referral_links ADD COLUMN destination_url TEXT;

-- Coupon codes of a link: a sale naming one is attributed to the link's partner when no
-- click or customer attributes it. `code_key` is the code as compared (lowercase); an
-- archived coupon no longer attributes and frees its code and promotion code.
CREATE TABLE coupons (
    id                    BIGSERIAL PRIMARY KEY,
    program_id            BIGINT NOT NULL REFERENCES programs(id),
    link_id               BIGINT NOT NULL REFERENCES referral_links(id),
    code                  TEXT NOT NULL,
    code_key              TEXT NOT NULL,
    stripe_promotion_code TEXT,
    created_at            BIGINT NOT NULL,
    archived_at           BIGINT
);
CREATE UNIQUE INDEX coupons_code ON coupons (program_id, code_key) WHERE archived_at IS NULL;
CREATE UNIQUE INDEX coupons_promotion_code ON coupons (program_id, stripe_promotion_code)
    WHERE archived_at IS NULL AND stripe_promotion_code IS NOT NULL;
CREATE INDEX coupons_link ON coupons (link_id, id);

-- Commission flags (`self_referral`), and whether the commission waits for an owner's
-- approval whatever the program's hold period.
ALTER TABLE commissions ADD COLUMN flags TEXT;
ALTER TABLE commissions ADD COLUMN manual_approval BOOLEAN NOT NULL DEFAULT FALSE;

-- Emails as the self-referral rule compares them (lowercase, without a `+tag`), written
-- by the service with every email. A row whose email predates this column has no key:
-- its sales are checked one by one.
ALTER TABLE customers ADD COLUMN email_key TEXT;
ALTER TABLE partners ADD COLUMN email_key TEXT;
ALTER TABLE partners ADD COLUMN account_email_key TEXT;
