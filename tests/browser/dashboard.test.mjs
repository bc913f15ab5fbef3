// Headless Chromium tests of the owner's dashboard (/app/…) served by the real reftrack
// binary on a fresh database: the first run, the install snippets, events arriving on the
// checklist, the overview's chart and the events table, an application approved, a
// payout created, exported and paid, a webhook endpoint that receives a sale's message
// (sent again by hand), coupon codes of a link, a viewer who can change nothing, and a
// session that expires. Every page is photographed at 1280 and 375 px into
// target/screenshots/ (app-*.png), must not scroll sideways at 375 px, and no page may
// log a console error or fail a request.
//
// The tests run in order on one server: the first one sets it up.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { setup, api, admin, browse, shoot, track, sql, ADMIN } from './harness.mjs';

// The webhook receiver of these tests listens on 127.0.0.1, which the server refuses as a
// target unless told otherwise.
setup({ env: { REFTRACK_WEBHOOK_ALLOW_PRIVATE: '1' } });

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
  // The server's address is suggested from the address the browser used.
  assert.equal(await page.getByLabel('Address of this server').inputValue(), api);
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
  assert.match(await page.locator('#f-admin_token-error').textContent(), /^Admin token is required/);
  // A wrong token: refused beside its field, nothing made.
  await page.getByLabel('Admin token').fill('rta_not_the_token_of_this_server');
  await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
  await page.getByLabel('Repeat the password').fill(PASSWORD);
  await expecting(403, () => Promise.all([page.waitForURL(/\/app\/setup$/), page.getByRole('button', { name: 'Create and sign in' }).click()]));
  assert.equal(await page.locator('#f-admin_token-error').textContent(), "Admin token is not this server's admin token");
  assert.equal(await page.getByLabel('Admin token').inputValue(), '', 'a token typed is not sent back');
  assert.equal(await page.getByLabel('Program name').inputValue(), 'Acme Partners', 'nothing typed is lost');
  await shoot(page, 'app-first-run-error');
  await page.getByLabel('Admin token').fill(ADMIN);
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

/** Signs the owner in on the sign-in page. */
async function signIn(page) {
  await page.goto(`${api}/app/login`);
  await page.getByLabel('Email').fill('ann@acme.test');
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(new RegExp(`/app/programs/${program}$`));
}

/** Reloads the page until `done()` holds in it. */
async function reloadUntil(page, what, done, timeout = 20000) {
  const end = Date.now() + timeout;
  while (!(await page.evaluate(done))) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
    await page.reload();
  }
}

/** A webhook receiver on 127.0.0.1: keeps what it gets, answers `status.code`. */
async function receiver() {
  const got = [];
  const status = { code: 500 };
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      got.push({ id: req.headers['webhook-id'], signature: req.headers['webhook-signature'], body: JSON.parse(body) });
      res.writeHead(status.code);
      res.end();
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${server.address().port}/hook`, got, status, close: () => new Promise((r) => server.close(r)) };
}

test('a webhook endpoint is added, receives a sale, and a delivery is sent again', async () => {
  const rx = await receiver();
  const { context, page, problems, expecting } = await browse();
  await signIn(page);

  await page.getByRole('link', { name: 'Settings' }).click();
  await page.getByRole('link', { name: 'Manage webhooks' }).click();
  await page.waitForURL(/\/settings\/webhooks$/);
  assert.match(await page.locator('main').textContent(), /No endpoints yet/);

  // No event chosen: the error beside the events, the URL kept, nothing added.
  await page.getByLabel('Endpoint URL').fill(rx.url);
  await expecting(400, () => Promise.all([page.waitForURL(/\/settings\/webhooks$/), page.getByRole('button', { name: 'Add endpoint' }).click()]));
  assert.match(await page.locator('#f-events-error').textContent(), /^Events must list at least one event type/);
  assert.equal(await page.getByLabel('Endpoint URL').inputValue(), rx.url);
  await shoot(page, 'app-webhooks-error');
  assert.equal((await admin('GET', `/programs/${program}/webhooks`)).data.length, 0);

  // Added: the secret shown once, copied with its button.
  await page.getByLabel('sale.created').check();
  await page.getByLabel('commission.created').check();
  await page.getByRole('button', { name: 'Add endpoint' }).click();
  await page.locator('#webhook-secret').waitFor();
  const secret = await page.locator('#webhook-secret').inputValue();
  assert.match(secret, /^whsec_[A-Za-z0-9+/=]{32}$/);
  assert.match(await page.locator('.token-panel').textContent(), /will not be shown again/);
  await page.locator('.token-panel').getByRole('button', { name: 'Copy' }).click();
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), secret);
  await shoot(page, 'app-webhooks-secret');
  await page.goto(page.url());
  assert.equal(await page.locator('#webhook-secret').count(), 0, 'not shown again');
  assert.ok(!(await page.content()).includes(secret));

  // A sale: its messages reach the receiver, which refuses the first attempt.
  const click = await track('click', { affiliate_url: `${SHOP}/?aff=alice` });
  await track('sale', { transaction_id: 'order-2001', amount_cents: 3000, click_id: click.click_id }, token);
  const end = Date.now() + 15000;
  while (rx.got.length < 2) {
    assert.ok(Date.now() < end, `the receiver got ${rx.got.length} messages`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const sale = rx.got.find((m) => m.body.type === 'sale.created');
  assert.equal(sale.body.data.processor_event_id, 'order-2001');
  assert.match(sale.signature, /^v1,/);
  assert.ok(rx.got.some((m) => m.body.type === 'commission.created'));
  await page.locator('.link-card', { hasText: rx.url }).getByRole('link', { name: /^Deliveries/ }).click();
  await page.waitForURL(/\/deliveries$/);
  const saleRow = () => page.locator('tr', { hasText: 'sale.created' });
  await reloadUntil(page, 'the failed attempt', () => /HTTP 500/.test(document.querySelector('table.deliveries')?.textContent || ''));
  assert.match(await saleRow().textContent(), new RegExp(sale.id));
  await shoot(page, 'app-webhook-deliveries');

  // Sent again by hand, with the same message id.
  rx.status.code = 200;
  await saleRow().getByRole('button', { name: /^Retry/ }).click();
  await page.waitForURL(/done=retry$/);
  assert.match(await page.locator('.notice').textContent(), /due now/);
  await reloadUntil(page, 'the delivery', () => [...document.querySelectorAll('table.deliveries tr')].some((r) => /sale\.created/.test(r.textContent) && /delivered/.test(r.textContent)));
  assert.match(await saleRow().textContent(), /HTTP 200/);
  assert.equal(rx.got.filter((m) => m.id === sale.id && m.body.type === 'sale.created').length >= 2, true);
  await shoot(page, 'app-webhook-deliveries-retried');

  // Its page: more events, disabled and enabled again; deleting asks first.
  await page.getByRole('link', { name: 'This endpoint' }).click();
  await page.getByLabel('payout.paid').check();
  await page.getByRole('button', { name: 'Save endpoint' }).click();
  await page.waitForURL(/done=webhook-saved$/);
  assert.equal(await page.getByLabel('payout.paid').isChecked(), true);
  await page.getByRole('button', { name: 'Disable' }).click();
  await page.waitForURL(/done=webhook-disabled$/);
  assert.equal(await page.locator('h2 + .meta .badge').textContent(), 'disabled');
  await shoot(page, 'app-webhook');
  await page.getByRole('button', { name: 'Enable' }).click();
  await page.waitForURL(/done=webhook-enabled$/);
  await shoot(page, 'app-webhook-enabled');
  // A test message, whatever types the endpoint receives, listed with the deliveries.
  await page.getByRole('button', { name: 'Send a test message' }).click();
  await page.waitForURL(/\/deliveries\?done=webhook-test$/);
  await reloadUntil(page, 'the test message', () => [...document.querySelectorAll('table.deliveries tr')].some((r) => /webhook\.test/.test(r.textContent) && /delivered/.test(r.textContent)));
  assert.ok(rx.got.some((m) => m.body.type === 'webhook.test' && /^v1,/.test(m.signature)));
  await shoot(page, 'app-webhook-deliveries-test');
  await page.getByRole('link', { name: 'This endpoint' }).click();
  await page.getByRole('button', { name: 'Delete' }).click();
  assert.match(await page.locator('h2#confirm-title').textContent(), /Delete this endpoint\?/);
  await shoot(page, 'app-webhook-delete');
  await page.getByRole('link', { name: 'Cancel' }).click();
  await page.getByRole('link', { name: 'All webhooks' }).click();
  assert.equal(await page.locator('.link-card .badge').textContent(), 'enabled');
  await shoot(page, 'app-webhooks');

  assert.deepEqual(problems(), []);
  await context.close();
  await rx.close();
});

test('coupon codes are added to a link and archived', async () => {
  const { context, page, problems, expecting } = await browse();
  await signIn(page);
  await page.getByRole('link', { name: 'Partners' }).click();
  await page.getByRole('link', { name: 'Alice Example' }).click();
  const card = page.locator('.link-card', { hasText: 'alice' }).first();
  await card.getByRole('link', { name: 'Add a coupon code to alice' }).click();
  assert.equal(await page.getByLabel('Link', { exact: true }).locator('option:checked').textContent(), 'alice');
  await page.getByLabel('Coupon code', { exact: true }).fill('PODCAST20');
  await page.getByLabel('Stripe promotion code', { exact: true }).fill('promo_1Podcast');
  await page.getByRole('button', { name: 'Add coupon code' }).click();
  await page.waitForURL(/done=coupon#link-\d+$/);
  assert.match(await page.locator('.notice').textContent(), /coupon code is added/);
  await page.getByLabel('Coupon code', { exact: true }).fill('spring');
  await page.getByRole('button', { name: 'Add coupon code' }).click();
  await page.waitForURL(/done=coupon#link-\d+$/);

  // Taken in this program, whatever the case: beside the field, what was typed kept.
  await page.getByLabel('Coupon code', { exact: true }).fill('podcast20');
  await expecting(400, () => Promise.all([page.waitForURL(/\/coupons$/), page.getByRole('button', { name: 'Add coupon code' }).click()]));
  assert.equal(await page.locator('#f-code-error').textContent(), 'A coupon with this coupon code already exists in this program');
  assert.equal(await page.getByLabel('Coupon code', { exact: true }).inputValue(), 'podcast20');
  await shoot(page, 'app-partner-coupon-error');

  // Archived after a confirmation.
  await page.goto(`${api}/app/programs/${program}/partners/1`);
  await page.getByRole('button', { name: 'Archive coupon code spring' }).click();
  assert.match(await page.locator('h2#confirm-title').textContent(), /Archive coupon code spring\?/);
  await shoot(page, 'app-coupon-archive');
  await page.getByRole('button', { name: 'Archive coupon code' }).click();
  await page.waitForURL(/done=coupon-archived#link-\d+$/);
  const spring = page.locator('.coupon-list li', { hasText: 'spring' });
  assert.equal(await spring.locator('.badge').textContent(), 'archived');
  assert.equal(await spring.getByRole('button').count(), 0);
  const podcast = page.locator('.coupon-list li', { hasText: 'PODCAST20' });
  assert.equal(await podcast.locator('.badge').textContent(), 'active');
  assert.match(await podcast.textContent(), /promo_1Podcast/);
  const link = await admin('GET', '/links/1');
  assert.deepEqual(link.coupon_codes, ['PODCAST20']);
  await shoot(page, 'app-partner-coupons');

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
  assert.deepEqual(tabs, ['Overview', 'Setup', 'Partners', 'Commissions', 'Review', 'Payouts', 'Settings']);
  const pages = ['', '/setup', '/partners', '/partners/1', '/commissions', '/payouts', '/payouts/1', '/settings',
    '/settings/webhooks', '/settings/webhooks/1', '/settings/webhooks/1/deliveries'];
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
  await page.goto(`${api}/app/programs/${program}/settings/webhooks/1/deliveries`);
  assert.equal(await page.getByRole('button', { name: /^Retry/ }).count(), 0);
  await shoot(page, 'app-viewer-webhook-deliveries');
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
