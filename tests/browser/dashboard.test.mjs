// Headless Chromium tests of the owner's dashboard (/app/…) served by the real reftrack
// binary on a fresh database: the first run, the install snippets, events arriving on the
// checklist, the overview's chart and the events table, an application approved, a
// payout created, exported and paid, a viewer who can change nothing, and a session that
// expires. Every page is photographed at 1280 and 375 px into target/screenshots/
// (app-*.png), must not scroll sideways at 375 px, and no page may log a console error or
// fail a request.
//
// The tests run in order on one server: the first one sets it up.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setup, api, admin, browse, shoot, track, sql } from './harness.mjs';

setup();

const PASSWORD = 'correct horse battery';
const SHOP = 'https://shop.example';
/** Set by the first test. */
let program, token;

/** Leaves a page whose checklist refreshes itself only once no refresh is under way. */
async function settle(page) {
  await page.evaluate(() => window.reftrackStopRefresh && window.reftrackStopRefresh());
}

/** The total a chart's caption shows. */
const chartTotal = (page, key) => page.locator(`.chart-${key} .chart-total`).textContent();

test('first run: setup, the install snippets, and a click, lead and sale on the checklist, chart and events', async () => {
  const { context, page, problems, expecting } = await browse();

  await page.goto(`${api}/`);
  await page.waitForURL(/\/app\/setup$/);
  await shoot(page, 'app-first-run');
  await page.getByLabel('Company or team').fill('Acme Inc');
  await page.getByLabel('Your name').fill('Ann Owner');
  await page.getByLabel('Email').fill('ann@acme.test');
  await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
  await page.getByLabel('Repeat the password').fill('not the same');
  await page.getByLabel('Program name').fill('Acme Partners');
  await page.getByLabel('Your site').fill(SHOP);
  await page.getByLabel('Currency').fill('usd');
  await expecting(400, () => Promise.all([page.waitForURL(/\/app\/setup$/), page.getByRole('button', { name: 'Create and sign in' }).click()]));
  assert.equal(await page.locator('#f-confirm-error').textContent(), 'The two passwords are not the same');
  assert.equal(await page.getByLabel('Program name').inputValue(), 'Acme Partners', 'nothing typed is lost');
  await shoot(page, 'app-first-run-error');
  await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
  await page.getByLabel('Repeat the password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Create and sign in' }).click();
  await page.locator('#checklist').waitFor();
  assert.match(await page.locator('.notice').textContent(), /ready/);
  const cookie = (await context.cookies()).find((c) => c.name === 'rt_session');
  assert.ok(cookie.httpOnly && cookie.sameSite === 'Lax' && cookie.path === '/app', JSON.stringify(cookie));

  // The token is shown once, in the snippets too.
  token = await page.locator('#api-token').inputValue();
  assert.match(token, /^rtk_/);
  assert.match(await page.locator('#snippet-sale-curl').textContent(), new RegExp(`Bearer ${token}`));
  program = Number(await page.locator('#tracker-tag').textContent().then((t) => t.match(/data-program-id="(\d+)"/)[1]));

  // The tracker tag, copied with its button.
  await page.locator('.snippet', { has: page.locator('#tracker-tag') }).getByRole('button', { name: 'Copy' }).click();
  const copied = await page.evaluate(() => navigator.clipboard.readText());
  assert.equal(copied, `<script src="${api}/tracker.js" data-program-id="${program}" async></script>`);
  // The Python sale snippet opens and copies too.
  await page.getByText('Python').nth(1).click();
  await page.locator('.snippet', { has: page.locator('#snippet-sale-python') }).getByRole('button', { name: 'Copy' }).click();
  assert.match(await page.evaluate(() => navigator.clipboard.readText()), /requests\.post\(/);
  assert.match(await page.locator('[data-step="pageview"]').textContent(), /Waiting for your first click/);
  await shoot(page, 'app-setup');

  // A partner with a link, added on the partners page.
  await settle(page);
  await page.getByRole('link', { name: 'Partners' }).click();
  await page.getByLabel('Name', { exact: true }).fill('Alice Example');
  await page.getByLabel('Email').fill('alice@acme.test');
  await page.getByLabel('Code', { exact: true }).fill('alice');
  await page.getByRole('button', { name: 'Add partner' }).click();
  await page.locator('#invite-url').waitFor();
  assert.match(await page.locator('#invite-url').inputValue(), /\/partner\/invite\?token=rti_/);
  assert.equal(await page.locator('#share-1').inputValue(), `${SHOP}/?aff=alice`);

  // Back on the setup page, the checklist fills in by itself as events arrive.
  await page.getByRole('link', { name: 'Setup' }).click();
  await page.locator('#checklist[data-refresh]').waitFor();
  const click = await track('click', { affiliate_url: `${SHOP}/?aff=alice`, page_url: `${SHOP}/` });
  await page.locator('[data-step="pageview"].done').waitFor({ timeout: 15000 });
  await track('lead', { click_id: click.click_id, customer_key: 'cust-1', email: 'buyer@example.com' }, token);
  await track('sale', { transaction_id: 'order-1001', amount_cents: 4900, currency: 'usd', customer_key: 'cust-1' }, token);
  await page.locator('[data-step="sales"].done').waitFor({ timeout: 15000 });
  assert.equal(await page.locator('[data-step="referrals"].done').count(), 1);
  await page.locator('#checklist:not([data-refresh])').waitFor();
  assert.equal(await page.locator('#api-token').count(), 0, 'a later visit does not show the token');
  await shoot(page, 'app-setup-done');

  // The overview: the chart and totals of the last 30 days, and the top partner.
  await page.getByRole('link', { name: 'Overview' }).click();
  await page.waitForURL(new RegExp(`/app/programs/${program}$`));
  assert.equal(await chartTotal(page, 'clicks'), '1');
  assert.equal(await chartTotal(page, 'leads'), '1');
  assert.equal(await chartTotal(page, 'sales'), '1');
  assert.equal(await chartTotal(page, 'revenue'), '$49.00');
  assert.equal(await chartTotal(page, 'earnings'), '$9.80', '20 % by default');
  assert.equal(await page.locator('.chart-sales svg rect').count(), 1);
  assert.match(await page.locator('.chart-clicks svg').getAttribute('aria-label'), /^Clicks: 1 in total/);
  assert.equal(await page.locator('table.data tbody tr').first().locator('th').textContent(), 'Alice Example');
  await page.getByText('The figures as a table').click();
  await shoot(page, 'app-overview');
  await page.getByRole('link', { name: '7 days' }).click();
  await page.waitForURL(/period=7d/);
  assert.equal(await chartTotal(page, 'sales'), '1');
  // A custom range the wrong way round: the error beside the dates.
  await page.getByLabel('From', { exact: true }).fill('2026-02-10');
  await page.getByLabel('To', { exact: true }).fill('2026-02-01');
  await page.getByRole('button', { name: 'Show' }).click();
  await page.waitForURL(/from=2026-02-10/);
  assert.match(await page.locator('#range-error').textContent(), /must not be after/);
  // Test mode: a test sale shows there, and not in the live figures.
  await track('sale', { amount_cents: 1500, customer_key: 'cust-1', additional_data: { test_mode: true } }, token);
  await page.getByRole('link', { name: 'Test', exact: true }).click();
  await page.waitForURL(/mode=test/);
  assert.equal(await chartTotal(page, 'sales'), '1');
  assert.equal(await chartTotal(page, 'revenue'), '$15.00');
  await shoot(page, 'app-overview-test');

  // The events table, filtered.
  await page.getByRole('link', { name: 'Events' }).click();
  await page.waitForURL(/\/events$/);
  assert.match(await page.locator('#events-count').textContent(), /^3 events/);
  assert.deepEqual(await page.locator('table.events tbody tr').evaluateAll((rows) => rows.map((r) => r.dataset.kind)), ['sale', 'lead', 'click']);
  assert.match(await page.locator('tr[data-kind="sale"]').textContent(), /\$49\.00/);
  await shoot(page, 'app-events');
  await page.getByLabel('Kind').selectOption('lead');
  await page.getByRole('button', { name: 'Filter' }).click();
  await page.waitForURL(/type=lead/);
  assert.equal(await page.locator('table.events tbody tr').count(), 1);
  assert.match(await page.locator('table.events').textContent(), /cust-1/);

  // Keyboard: the first Tab reaches the skip link.
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement.textContent), 'Skip to content');

  assert.deepEqual(problems(), []);
  await context.close();
});

test('the owner opens applications, approves one, and makes and archives a link', async () => {
  const { context, page, problems } = await browse();
  await page.goto(`${api}/`);
  await page.waitForURL(/\/app\/login$/);
  await shoot(page, 'app-login');
  await page.getByLabel('Email').fill('ann@acme.test');
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByLabel('Password').press('Enter');
  await page.waitForURL(new RegExp(`/app/programs/${program}$`));

  await page.getByRole('link', { name: 'Settings' }).click();
  await page.getByLabel('Anyone may apply to join').check();
  await page.getByRole('button', { name: 'Save settings' }).click();
  await page.waitForURL(/done=settings/);

  const applied = await fetch(`${api}/api/partner/apply/${program}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'Bea Applicant', email: 'bea@acme.test', password: PASSWORD, website: 'https://bea.example' }),
  });
  assert.equal(applied.status, 201);

  await page.getByRole('link', { name: 'Partners' }).click();
  await page.getByRole('link', { name: 'Applications' }).click();
  await page.waitForURL(/status=pending/);
  const row = page.locator('tr', { hasText: 'Bea Applicant' });
  assert.equal(await row.locator('.badge').textContent(), 'pending');
  await row.getByRole('button', { name: 'Approve Bea Applicant' }).click();
  await page.waitForURL(/status=pending&done=status/);
  assert.match(await page.locator('.notice').textContent(), /status is changed/);
  assert.equal(await page.locator('tr', { hasText: 'Bea Applicant' }).count(), 0, 'no longer waiting');
  await page.getByRole('link', { name: 'All', exact: true }).click();
  assert.equal(await page.locator('tr', { hasText: 'Bea Applicant' }).locator('.badge').textContent(), 'approved');
  await shoot(page, 'app-partners');

  // Her page: a link of her own, then archived.
  await page.getByRole('link', { name: 'Bea Applicant' }).click();
  await page.getByLabel('Short link').fill('bea-blog');
  await page.getByRole('button', { name: 'Create link' }).click();
  await page.waitForURL(/done=link$/);
  const card = page.locator('.link-card', { hasText: 'bea-blog' });
  assert.equal(await card.locator('input.share-text').inputValue(), `${SHOP}/?aff=bea-blog`);
  await card.getByRole('button', { name: 'Archive bea-blog' }).click();
  await page.waitForURL(/done=link-status$/);
  assert.equal(await page.locator('.link-card', { hasText: 'bea-blog' }).locator('.badge').textContent(), 'archived');
  await page.getByRole('button', { name: 'Make an invite link' }).click();
  await page.locator('#invite-url').waitFor();
  await shoot(page, 'app-partner');

  // Banning asks first.
  await page.getByRole('button', { name: 'Ban' }).click();
  assert.match(await page.locator('h2#confirm-title').textContent(), /Ban Bea Applicant\?/);
  await shoot(page, 'app-confirm');
  await page.getByRole('link', { name: 'Cancel' }).click();
  assert.equal(await page.locator('h2 .badge').textContent(), 'approved');

  assert.deepEqual(problems(), []);
  await context.close();
});

test('a payout is created, exported and marked paid', async () => {
  const { context, page, problems, expecting } = await browse();
  await page.goto(`${api}/app/login`);
  await page.getByLabel('Email').fill('ann@acme.test');
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(new RegExp(`/app/programs/${program}$`));

  // The first sale's commission is in its 30-day hold: approved early here.
  await page.goto(`${api}/app/programs/${program}/partners`);
  await page.getByRole('link', { name: 'Alice Example' }).click();
  await page.getByRole('link', { name: 'Its commissions' }).click();
  await page.waitForURL(/partner_id=/);
  const first = page.locator('tr', { hasText: 'order-1001' });
  assert.equal(await first.locator('.badge').textContent(), 'pending');
  await first.getByRole('button', { name: /^Approve commission/ }).click();
  await page.waitForURL(/done=approved/);
  assert.equal(await page.locator('tr', { hasText: 'order-1001' }).locator('.badge').textContent(), 'approved');
  await shoot(page, 'app-commissions');

  // No hold from now on, a $10.00 minimum: an error first, beside its field, with the
  // rest kept.
  await page.goto(`${api}/app/programs/${program}/settings`);
  await page.getByLabel('Hold period (days)').fill('0');
  await page.getByLabel('Minimum payout').fill('ten dollars');
  await expecting(400, () => Promise.all([page.waitForURL(/\/settings$/), page.getByRole('button', { name: 'Save settings' }).click()]));
  assert.equal(await page.locator('#f-min_payout_cents-error').textContent(), 'Minimum payout must be an amount like 50.00');
  assert.equal(await page.getByLabel('Hold period (days)').inputValue(), '0');
  await shoot(page, 'app-settings-error');
  await page.getByLabel('Minimum payout').fill('10.00');
  await page.getByRole('button', { name: 'Save settings' }).click();
  await page.waitForURL(/done=settings/);
  await shoot(page, 'app-settings');

  // Alice's payout details, and two more sales through her link.
  await page.goto(`${api}/app/programs/${program}/partners`);
  await page.getByRole('link', { name: 'Alice Example' }).click();
  await page.getByLabel('Payout method').selectOption('paypal');
  await page.getByLabel('Payout email').fill('pay@alice.test');
  await page.getByRole('button', { name: 'Save details' }).click();
  await page.waitForURL(/done=partner-saved$/);
  for (const [n, cents] of [[2, 25000], [3, 12500]]) {
    const click = await track('click', { affiliate_url: `${SHOP}/?aff=alice` });
    await track('sale', { transaction_id: `order-100${n}`, amount_cents: cents, click_id: click.click_id }, token);
  }

  // The payout: $9.80 + $50.00 + $25.00.
  await page.getByRole('link', { name: 'Payouts' }).click();
  assert.match(await page.locator('tr', { hasText: 'Alice Example' }).textContent(), /\$84\.80/);
  await page.getByRole('button', { name: 'Create payout' }).click();
  await page.waitForURL(/\/payouts\/\d+\?done=payout$/);
  assert.match(await page.locator('.figures-grid').textContent(), /\$84\.80/);
  assert.match(await page.locator('tr', { hasText: 'Alice Example' }).textContent(), /pay@alice\.test/);
  for (const [label, name] of [['CSV', /^payout-\d+\.csv$/], ['PayPal bulk file', /^payout-\d+-paypal\.csv$/], ['Wise batch file', /^payout-\d+-wise\.csv$/]]) {
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: label }).click()]);
    assert.match(download.suggestedFilename(), name);
    if (label === 'PayPal bulk file') {
      const text = await new Promise((resolve, reject) => {
        download.createReadStream().then((s) => { let t = ''; s.on('data', (c) => { t += c; }); s.on('end', () => resolve(t)); s.on('error', reject); });
      });
      assert.match(text, /^pay@alice\.test,84\.80,USD,/);
    }
  }
  await shoot(page, 'app-payout');
  await page.getByLabel('Reference').fill('PAYPAL-BATCH-1');
  await page.getByRole('button', { name: 'Mark paid' }).click();
  await page.waitForURL(/done=paid$/);
  assert.equal(await page.locator('h2 .badge').textContent(), 'paid');
  assert.equal(await page.getByRole('button', { name: 'Cancel payout' }).count(), 0);
  await page.getByRole('link', { name: 'All payouts' }).click();
  assert.match(await page.locator('#payouts + .table-wrap').textContent(), /paid/);
  assert.match(await page.locator('tr', { hasText: 'Alice Example' }).textContent(), /\$84\.80/, 'paid balance');
  await shoot(page, 'app-payouts');

  assert.deepEqual(problems(), []);
  await context.close();
});

test('a viewer sees everything but the events and can change nothing; an expired session comes back', async () => {
  const user = await admin('POST', '/users', { email: 'vic@acme.test', password: PASSWORD, name: 'Vic Viewer' });
  const workspace = (await admin('GET', `/programs/${program}`)).workspace_id;
  await admin('POST', `/workspaces/${workspace}/members`, { user_id: user.id, role: 'viewer' });

  const { context, page, problems, expecting } = await browse();
  await page.goto(`${api}/app/programs/${program}/partners`);
  await page.waitForURL(/\/app\/login\?next=/);
  await page.getByLabel('Email').fill('vic@acme.test');
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(new RegExp(`/app/programs/${program}/partners$`));

  const tabs = await page.locator('nav.tabs a').allTextContents();
  assert.deepEqual(tabs, ['Overview', 'Setup', 'Partners', 'Commissions', 'Payouts', 'Settings']);
  const pages = ['', '/setup', '/partners', '/partners/1', '/commissions', '/payouts', '/payouts/1', '/settings'];
  for (const p of pages) {
    await page.goto(`${api}/app/programs/${program}${p}`);
    const forms = await page.locator('main form[method="post"]').count();
    assert.equal(forms, 0, `a form on ${p}`);
    await settle(page);
  }
  await page.goto(`${api}/app/programs/${program}`);
  await shoot(page, 'app-viewer-overview');
  await page.goto(`${api}/app/programs/${program}/settings`);
  await shoot(page, 'app-viewer-settings');
  await expecting(403, () => page.goto(`${api}/app/programs/${program}/events`));
  assert.equal(await page.locator('h1').textContent(), 'Not available to you');
  await shoot(page, 'app-forbidden');

  // The server refuses a change even when it is sent without a form.
  await page.goto(`${api}/app/programs/${program}/partners`);
  const status = await page.evaluate(async (p) => {
    const r = await fetch(`/app/programs/${p}/partners/1/status`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'status=banned&confirm=yes',
    });
    await r.text();
    return r.status;
  }, program);
  assert.equal(status, 403);
  const partners = await admin('GET', `/programs/${program}/partners`);
  assert.ok(partners.data.every((p) => p.status === 'approved'));

  // The session expires: sign-in, and back to the page.
  sql('UPDATE sessions SET expires_at = 0');
  await page.goto(`${api}/app/programs/${program}/commissions?status=paid`);
  await page.waitForURL(/\/app\/login\?next=%2Fapp%2Fprograms%2F\d+%2Fcommissions%3Fstatus%3Dpaid$/);
  await page.getByLabel('Email').fill('vic@acme.test');
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(new RegExp(`/app/programs/${program}/commissions\\?status=paid$`));

  await expecting(404, () => page.goto(`${api}/app/programs/999`));
  assert.equal(await page.locator('h1').textContent(), 'Page not found');
  await shoot(page, 'app-not-found');

  // The programs page, with the program listed.
  await page.goto(`${api}/app?all=1`);
  assert.match(await page.locator('.program-card').textContent(), /Acme Partners/);
  await shoot(page, 'app-programs');

  // The fetch above answered 403: declared, it is not a problem.
  assert.deepEqual(problems().filter((p) => !p.startsWith('403 for ')), []);
  await context.close();
});
