-- Dashboard sessions manage their workspace's programs: a partner remembers the
-- workspace that created it (which sees it before adding it to a program), and the
-- management lists read program partners and links page by page.
ALTER TABLE partners ADD COLUMN workspace_id BIGINT REFERENCES workspaces(id);
CREATE INDEX partners_workspace ON partners (workspace_id) WHERE workspace_id IS NOT NULL;
CREATE INDEX partner_programs_list ON partner_programs (program_id, partner_id);
CREATE INDEX referral_links_program ON referral_links (program_id, id);
CREATE INDEX referral_links_partner ON referral_links (partner_id, id);
