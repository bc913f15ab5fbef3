// Headless Chromium tests of the review queue in the owner's dashboard: commissions a
// fraud rule flagged, with their reasons in words and the customer's click; one approved,
// one rejected (a reason first refused beside its field), the count in the program's
// navigation following; the fraud rules' form on the settings page; a viewer who sees
// the queue and can change nothing. Pages are photographed at 1280 and 375 px
// (app-review-*.png); no page may log a console error or fail a request.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setup, admin, browse, shoot, track, api } from './harness.mjs';

setup();

const PASSWORD = 'correct horse battery';
let program, token, workspace;

/** The label of the Review tab. */
const reviewTab = (page) => page.locator('nav.tabs a', { hasText: 'Review' }).textContent();

/** A customer who clicked, signed up with `email` and bought as `txn`. */
async function flaggedSale(code, key, email, txn) {
  const click = await track('click', { affiliate_url: `https://shop.example/?aff=${code}`, page_url: 'https://shop.example/', referrer_url: 'https://news.example/deals' });
  await track('lead', { click_id: click.click_id, customer_key: key, email }, token);
  await track('sale', { transaction_id: txn, amount_cents: 12000, customer_key: key }, token);
}

async function signIn(page, email) {
  await page.goto(`${api}/app/login`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(/\/app/);
}

test('an owner approves one held commission and rejects another; the count follows', async () => {
  const ws = await admin('POST', '/workspaces', { name: 'Review Co' });
  workspace = ws.id;
  const created = await admin('POST', '/programs', { workspace_id: ws.id, name: 'Review Partners', commission_hold_days: 0 });
  program = created.id;
  token = created.api_token;
  const partner = await admin('POST', '/partners', { name: 'Pat Partner', code: 'pat' });
  await admin('POST', `/programs/${program}/partners`, { partner_id: partner.id });
  await admin('POST', '/links', { program_id: program, partner_id: partner.id, short_link: 'pat' });
  const owner = await admin('POST', '/users', { email: 'owner@review.test', password: PASSWORD, name: 'Olive Owner' });
  await admin('POST', `/workspaces/${ws.id}/members`, { user_id: owner.id, role: 'owner' });

  // Two disposable-mail customers (flagged by default) and one ordinary one.
  await flaggedSale('pat', 'c1', 'first@mailinator.com', 'order-1');
  await flaggedSale('pat', 'c2', 'second@yopmail.com', 'order-2');
  await flaggedSale('pat', 'c3', 'third@example.com', 'order-3');

  const { page, problems, expecting } = await browse();
  await signIn(page, 'owner@review.test');
  await page.goto(`${api}/app/programs/${program}/review`);
  assert.equal(await reviewTab(page), 'Review (2)');
  const items = page.locator('.review-item');
  assert.equal(await items.count(), 2);
  const first = items.first();
  assert.match(await first.textContent(), /disposable-mail domain/);
  assert.match(await first.textContent(), /order-1/);
  assert.match(await first.textContent(), /news\.example\/deals/, 'the click\'s referrer');
  assert.match(await first.textContent(), /first@mailinator\.com/);
  await shoot(page, 'app-review');

  // Approve the first.
  await first.getByRole('button', { name: /^Approve/ }).click();
  await page.waitForURL(/done=approved/);
  assert.match(await page.locator('.notice').textContent(), /approved/);
  assert.equal(await reviewTab(page), 'Review (1)');
  assert.equal(await items.count(), 1);

  // Reject the second: a reason is needed, and its refusal shows beside the field.
  const second = items.first();
  await expecting(400, () => second.getByRole('button', { name: /^Reject/ }).click());
  await page.locator('.review-item .field-error').waitFor();
  assert.match(await page.locator('.review-item .field-error').textContent(), /1 to 500 characters/);
  await shoot(page, 'app-review-reason-refused');
  await page.getByLabel(/Reason to reject commission/).fill('Throw-away address, no real customer');
  await page.getByRole('button', { name: /^Reject/ }).click();
  await page.waitForURL(/done=rejected/);
  assert.equal(await reviewTab(page), 'Review');
  assert.match(await page.locator('main').textContent(), /Nothing is waiting for review/);
  await shoot(page, 'app-review-empty');

  // The commissions agree.
  const list = await admin('GET', `/programs/${program}/commissions`);
  const byTxn = Object.fromEntries(list.data.map((c) => [c.transaction_id, c]));
  assert.equal(byTxn['order-1'].status, 'approved');
  assert.deepEqual(byTxn['order-1'].flags, ['disposable_email']);
  assert.equal(byTxn['order-2'].status, 'rejected');
  assert.equal(byTxn['order-2'].reject_reason, 'Throw-away address, no real customer');
  assert.deepEqual(byTxn['order-3'].flags, []);
  assert.deepEqual((await admin('GET', `/programs/${program}/commissions?flagged=true`)).data, []);

  // The fraud rules' form on the settings page: one select per rule.
  await page.goto(`${api}/app/programs/${program}/settings#fraud-rules`);
  assert.equal(await page.getByLabel('Disposable email').inputValue(), 'flag');
  await page.getByLabel('Disposable email').selectOption('reject');
  await page.getByLabel('Fast conversion').selectOption('flag');
  await shoot(page, 'app-review-settings');
  await page.getByRole('button', { name: 'Save fraud rules' }).click();
  await page.waitForURL(/done=fraud-rules/);
  assert.match(await page.locator('.notice').textContent(), /fraud rules are saved/);
  const rules = (await admin('GET', `/programs/${program}`)).fraud_rules;
  assert.equal(rules.disposable_email, 'reject');
  assert.equal(rules.fast_conversion, 'flag');
  assert.equal(rules.self_referral, 'flag', 'the others are kept');
  assert.deepEqual(problems(), []);
});

test('a viewer sees the held commissions and cannot act on them', async () => {
  await admin('PATCH', `/programs/${program}`, { fraud_rules: { disposable_email: 'flag', fast_conversion: 'off' } });
  await flaggedSale('pat', 'c4', 'fourth@mailinator.com', 'order-4');
  const viewer = await admin('POST', '/users', { email: 'viewer@review.test', password: PASSWORD, name: 'Vic Viewer' });
  await admin('POST', `/workspaces/${workspace}/members`, { user_id: viewer.id, role: 'viewer' });
  const { page, problems } = await browse();
  await signIn(page, 'viewer@review.test');
  await page.goto(`${api}/app/programs/${program}/review`);
  assert.equal(await reviewTab(page), 'Review (1)');
  assert.equal(await page.locator('.review-item').count(), 1);
  assert.equal(await page.getByRole('button', { name: /^Approve/ }).count(), 0);
  assert.equal(await page.getByRole('button', { name: /^Reject/ }).count(), 0);
  await shoot(page, 'app-review-viewer');
  // The settings page shows the rules as text.
  await page.goto(`${api}/app/programs/${program}/settings`);
  assert.equal(await page.getByRole('button', { name: 'Save fraud rules' }).count(), 0);
  assert.deepEqual(problems(), []);
});
