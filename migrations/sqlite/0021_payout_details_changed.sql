-- When a partner's payout details (method or payout email) last changed, and who changed
-- them (`partner`, `user` or `operator`): the owner's partner page shows it, since
-- changing where the money goes is what an account thief does first.
ALTER TABLE partners ADD COLUMN payout_details_changed_at INTEGER;
ALTER TABLE partners ADD COLUMN payout_details_changed_by TEXT;
