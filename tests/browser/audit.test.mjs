// Headless Chromium test of the audit log under a program's Settings: an owner's changes
// (made through the API and on the dashboard's pages) listed newest first with who made
// them, filtered by action in the GET form, a bad date shown beside its field, and the
// CSV download of the filter. Screenshots at 1280 and 375 px (app-audit-*.png); no page
// may log a console error or fail a request.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setup, api, admin, browse, shoot, seed } from './harness.mjs';

setup();

const PASSWORD = 'correct horse battery';

test('the audit log page: entries, the action filter, a refused date, the CSV link', async () => {
  const s = await seed({ partners: ['alice', 'bob'] });
  const user = await admin('POST', '/users', { email: 'owner@audit.test', password: PASSWORD });
  await admin('POST', `/workspaces/${s.workspace}/members`, { user_id: user.id, role: 'owner' });
  // Changes by the operator: a setting, a partner's standing.
  await admin('PATCH', `/programs/${s.program}`, { name: 'Audited Partners', stripe_webhook_secret: 'whsec_never_shown' });
  await admin('PATCH', `/programs/${s.program}/partners/${s.partners.bob}`, { status: 'rejected' });

  const { page, problems, expecting } = await browse();
  await page.goto(`${api}/app/login`);
  await page.getByLabel('Email').fill('owner@audit.test');
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(/\/app/);

  // A change on a page: the owner renames the program in Settings.
  await page.goto(`${api}/app/programs/${s.program}/settings`);
  await page.getByLabel('Program name').fill('Audited Program');
  await page.getByRole('button', { name: 'Save settings' }).click();
  await page.waitForURL(/settings/);

  await page.getByRole('link', { name: 'See the audit log' }).click();
  await page.waitForURL(/\/settings\/audit$/);
  const rows = page.locator('table.audit tbody tr');
  const actions = await rows.locator('td[data-label="Action"]').allTextContents();
  assert.equal(actions[0], 'program.updated', 'newest first');
  assert.ok(actions.includes('partner.status_changed') && actions.includes('program.created'), actions.join());
  assert.match(await rows.first().locator('td[data-label="Who"]').textContent(), /owner@audit\.test/);
  assert.match(await rows.first().locator('td[data-label="Details"]').textContent(), /Audited Program/);
  const html = await page.content();
  assert.ok(!html.includes('whsec_never_shown'), 'no secret on the page');
  await shoot(page, 'app-audit');

  // The action filter, by keyboard: the form is a GET, its link the CSV of the same filter.
  await page.getByLabel('Action').selectOption('partner.status_changed');
  await page.getByRole('button', { name: 'Filter' }).focus();
  await page.keyboard.press('Enter');
  await page.waitForURL(/action=partner\.status_changed/);
  assert.deepEqual(await rows.locator('td[data-label="Action"]').allTextContents(), ['partner.status_changed']);
  const csv = page.getByRole('link', { name: 'Download CSV' });
  const href = await csv.getAttribute('href');
  assert.equal(href, `/app/programs/${s.program}/settings/audit.csv?action=partner.status_changed`);
  const [download] = await Promise.all([page.waitForEvent('download'), csv.click()]);
  const body = await (await import('node:fs/promises')).readFile(await download.path(), 'utf8');
  const lines = body.trim().split('\n');
  assert.equal(lines[0], 'id,at,actor_type,actor_id,actor_email,action,program_id,target_type,target_id,details,ip,request_id');
  assert.equal(lines.length, 2);
  assert.match(lines[1], /partner\.status_changed/);
  await shoot(page, 'app-audit-filtered');

  // A date that is not one: shown beside its field, the page still answers.
  await page.goto(`${api}/app/programs/${s.program}/settings/audit?from=2026-02-30`);
  assert.ok(await page.locator('#f-from-error').isVisible());
  await shoot(page, 'app-audit-error');

  assert.deepEqual(problems(), []);
  void expecting;
});
