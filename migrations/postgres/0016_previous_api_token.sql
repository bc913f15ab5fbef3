-- A rotated API token may keep working for a while (`keep_old_for_hours`), so servers
-- can be switched to the new one without refused calls: the old token's hash and when
-- it stops working.
ALTER TABLE programs ADD COLUMN previous_token_hash TEXT;
ALTER TABLE programs ADD COLUMN previous_token_expires_at BIGINT;
CREATE INDEX programs_previous_token ON programs (previous_token_hash)
    WHERE previous_token_hash IS NOT NULL;
