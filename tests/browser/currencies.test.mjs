// Headless Chromium tests of sales in other currencies: the operator stores exchange
// rates through the admin API; a partner's sales in JPY and EUR are converted to the
// program's USD at them, and one in CHF waits for a rate. The owner's overview warns of
// the waiting sale and lists the rates used, the events page says what each sale was
// converted at (or that it waits), the commissions page shows the waiting commission
// without an amount or an Approve button. Once a CHF rate is stored the waiting sale is
// converted and the warning goes. Pages are photographed at 1280 and 375 px
// (app-overview-currencies*.png, app-events-currencies*.png,
// app-commissions-currencies*.png, app-overview-converted*.png); no page may log a
// console error or fail a request.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setup, admin, browse, shoot, track, api } from './harness.mjs';

setup();

const PASSWORD = 'correct horse battery';
/** The server converts at the rates of the real clock's day. */
const TODAY = new Date().toISOString().slice(0, 10);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const squash = (text) => text.replace(/\s+/g, ' ').trim();

test('sales in other currencies are converted at the stored rates, or wait for one', async () => {
  const ws = await admin('POST', '/workspaces', { name: 'Currency Co' });
  const prog = await admin('POST', '/programs', { workspace_id: ws.id, name: 'Currency Partners' });
  const partner = await admin('POST', '/partners', { name: 'Cy Currency', code: 'cy', email: 'cy@currency.test' });
  await admin('POST', `/programs/${prog.id}/partners`, { partner_id: partner.id });
  await admin('POST', '/links', { program_id: prog.id, partner_id: partner.id, short_link: 'cy' });
  const owner = await admin('POST', '/users', { email: 'owner@currency.test', password: PASSWORD, name: 'Oda Owner' });
  await admin('POST', `/workspaces/${ws.id}/members`, { user_id: owner.id, role: 'owner' });

  // The operator's rates: EUR to USD and to JPY (JPY to USD is their cross rate).
  assert.deepEqual(await admin('POST', '/exchange-rates', { rates: [
    { date: TODAY, base: 'eur', quote: 'usd', rate: 1.1 },
    { date: TODAY, base: 'eur', quote: 'jpy', rate: 160 },
  ] }), { imported: 2 });

  // Three sales through the partner's link: ¥12,000, €50.00 and 80.00 CHF (no rate).
  const sales = [
    { transaction_id: 'cur-jpy', amount_cents: 12000, currency: 'jpy' },
    { transaction_id: 'cur-eur', amount_cents: 5000, currency: 'eur' },
    { transaction_id: 'cur-chf', amount_cents: 8000, currency: 'chf' },
  ];
  for (const sale of sales) {
    const customer_key = `c-${sale.currency}`;
    const click = await track('click', { affiliate_url: 'https://shop.example/?aff=cy' });
    await track('lead', { click_id: click.click_id, customer_key }, prog.api_token);
    await track('sale', { ...sale, customer_key }, prog.api_token);
  }
  const commissions = async () => {
    const rows = (await admin('GET', `/programs/${prog.id}/commissions?limit=100`)).data;
    return Object.fromEntries(rows.map((c) => [c.transaction_id, c]));
  };
  let c = await commissions();
  assert.deepEqual(Object.keys(c).sort(), ['cur-chf', 'cur-eur', 'cur-jpy']);
  // ¥12,000 at 1.1 / 160 = 0.006875 is $82.50, of which 20 % is $16.50; €50.00 is $55.00.
  assert.equal(c['cur-jpy'].amount_cents, 1650);
  assert.equal(c['cur-jpy'].currency, 'usd');
  assert.equal(c['cur-jpy'].awaiting_rate, false);
  assert.equal(c['cur-eur'].amount_cents, 1100);
  assert.equal(c['cur-eur'].awaiting_rate, false);
  assert.equal(c['cur-chf'].amount_cents, 0);
  assert.equal(c['cur-chf'].awaiting_rate, true);
  assert.equal(c['cur-chf'].status, 'pending');

  const { page, problems } = await browse();
  await page.goto(`${api}/app/login`);
  await page.getByLabel('Email').fill('owner@currency.test');
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(/\/app/);

  // The overview: a warning of the waiting CHF sale, and the rates the others used.
  await page.goto(`${api}/app/programs/${prog.id}`);
  const warning = squash(await page.locator('#awaiting-rates').textContent());
  assert.match(warning, /^1 sale waiting for an exchange rate \(CHF to USD\)/);
  assert.equal(await page.locator('h2#exchange-rates').textContent(), 'Exchange rates used');
  // Each row of the rates table, its cells joined by ' | '.
  const rateRows = () => page.locator('#exchange-rates + .table-wrap tbody tr').evaluateAll((trs) =>
    trs.map((tr) => [...tr.cells].map((cell) => cell.textContent.replace(/\s+/g, ' ').trim()).join(' | ')));
  let rows = await rateRows();
  assert.equal(rows.length, 2, JSON.stringify(rows));
  assert.ok(rows.includes(`EUR | ${TODAY} | 1 EUR = 1.1 USD | 1`), JSON.stringify(rows));
  assert.ok(rows.includes(`JPY | ${TODAY} | 1 JPY = 0.006875 USD | 1`), JSON.stringify(rows));
  await shoot(page, 'app-overview-currencies');

  // The events page: each sale in its own currency, with what it was converted at.
  await page.goto(`${api}/app/programs/${prog.id}/events`);
  const sale = async (transaction) => {
    const row = page.locator('tr[data-kind="sale"]').filter({ hasText: transaction });
    assert.equal(await row.count(), 1, transaction);
    const details = {};
    for (const item of await row.locator('dl.details > div').all()) {
      details[squash(await item.locator('dt').textContent())] = squash(await item.locator('dd').textContent());
    }
    return details;
  };
  let d = await sale('cur-jpy');
  assert.equal(d.Amount, '¥12,000');
  assert.equal(d.Exchanged, `$82.50 at 0.006875 USD per JPY (${TODAY})`);
  d = await sale('cur-eur');
  assert.equal(d.Amount, '€50.00');
  assert.equal(d.Exchanged, `$55.00 at 1.1 USD per EUR (${TODAY})`);
  d = await sale('cur-chf');
  assert.equal(d.Amount, '80.00 CHF');
  assert.equal(d.Exchanged, 'waiting for a CHF rate');
  await shoot(page, 'app-events-currencies');

  // The commissions page: the waiting one has no amount yet and cannot be approved.
  await page.goto(`${api}/app/programs/${prog.id}/commissions`);
  const amount = (id) => page.locator(`tr[data-commission="${id}"] td[data-label="Amount"]`).textContent();
  const approve = (id) => page.locator(`tr[data-commission="${id}"]`).getByRole('button', { name: 'Approve' });
  assert.equal(squash(await amount(c['cur-chf'].id)), 'no rate yet');
  assert.equal(await approve(c['cur-chf'].id).count(), 0);
  assert.equal(squash(await amount(c['cur-jpy'].id)), '$16.50');
  assert.equal(await approve(c['cur-jpy'].id).count(), 1);
  assert.equal(squash(await amount(c['cur-eur'].id)), '$11.00');
  assert.equal(await approve(c['cur-eur'].id).count(), 1);
  await shoot(page, 'app-commissions-currencies');
  // It is no fraud hold: the review queue leaves it out.
  await page.goto(`${api}/app/programs/${prog.id}/review`);
  assert.equal(await page.locator(`[data-commission="${c['cur-chf'].id}"]`).count(), 0);

  // A CHF rate arrives: the waiting sale is converted (80.00 CHF at 1.25 is $100.00).
  assert.deepEqual(await admin('POST', '/exchange-rates', { rates: [
    { date: TODAY, base: 'chf', quote: 'usd', rate: 1.25 },
  ] }), { imported: 1 });
  const end = Date.now() + 10000;
  for (;;) {
    c = await commissions();
    if (!c['cur-chf'].awaiting_rate) break;
    assert.ok(Date.now() < end, 'the CHF sale still waits for a rate 10 s after one was stored');
    await sleep(200);
  }
  assert.equal(c['cur-chf'].amount_cents, 2000);
  assert.equal(c['cur-chf'].currency, 'usd');

  await page.goto(`${api}/app/programs/${prog.id}`);
  assert.equal(await page.locator('#awaiting-rates').count(), 0);
  rows = await rateRows();
  assert.equal(rows.length, 3, JSON.stringify(rows));
  assert.ok(rows.includes(`CHF | ${TODAY} | 1 CHF = 1.25 USD | 1`), JSON.stringify(rows));
  await shoot(page, 'app-overview-converted');

  // Its commission now has an amount and can be approved.
  await page.goto(`${api}/app/programs/${prog.id}/commissions`);
  assert.equal(squash(await amount(c['cur-chf'].id)), '$20.00');
  assert.equal(await approve(c['cur-chf'].id).count(), 1);
  assert.deepEqual(problems(), []);
});
