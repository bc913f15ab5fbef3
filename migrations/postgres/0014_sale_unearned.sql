-- Why a sale earns no commission ('partner_not_approved', 'recurring_period_ended'),
-- kept with the sale; NULL when it earns or is a test sale. Sales recorded before this
-- column that have no commission get the reason their kind allows.
ALTER TABLE affiliate_sale_events ADD COLUMN unearned TEXT;
UPDATE affiliate_sale_events SET unearned = CASE WHEN is_recurring
        THEN 'recurring_period_ended' ELSE 'partner_not_approved' END
    WHERE NOT is_test AND payment_status IN ('paid', 'refunded')
      AND NOT EXISTS (SELECT 1 FROM commissions c
                      WHERE c.sale_id = affiliate_sale_events.id AND c.kind = 'sale');
