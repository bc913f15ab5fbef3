// End to end: Stripe-shaped events signed by Stripe's own library
// (`stripe.webhooks.generateTestHeaderString`) reach the real reftrack binary, and the
// sale, its refund and the dashboard figures follow. Proves the signature check against
// the processor's implementation, not only against our own.
//
//   REFTRACK_BIN   the binary (default: target/debug/reftrack under the repo root)

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Stripe from 'stripe';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = path.resolve(repoRoot, process.env.REFTRACK_BIN || 'target/debug/reftrack');
const ADMIN = 'stripe-e2e-admin-token-0123456789';
const SECRET = 'whsec_e2e_0123456789abcdef';
const stripe = new Stripe('sk_test_not_used_for_network');

let dir, child, base;

function start() {
  return new Promise((resolve, reject) => {
    child = spawn(BIN, [], {
      env: {
        ...process.env,
        REFTRACK_DATABASE_URL: `sqlite://${path.join(dir, 'e2e.db')}`,
        REFTRACK_LISTEN: '127.0.0.1:0',
        REFTRACK_ADMIN_TOKEN: ADMIN,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (c) => {
      out += c;
      const m = out.match(/Reftrack is serving on (http:\/\/\S+)/);
      if (m) resolve(m[1]);
    });
    child.on('exit', (code) => reject(new Error(`reftrack exited with ${code}`)));
  });
}

async function call(method, p, body, token) {
  const res = await fetch(base + p, {
    method,
    headers: {
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

function fixture(name, vars) {
  let text = readFileSync(path.join(repoRoot, 'tests/fixtures/stripe', `${name}.json`), 'utf8');
  for (const [k, v] of Object.entries(vars)) text = text.replaceAll(`{{${k}}}`, v);
  JSON.parse(text);
  return text;
}

async function deliver(programId, payload, header) {
  const res = await fetch(`${base}/api/webhooks/stripe/${programId}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'stripe-signature': header },
    body: payload,
  });
  return { status: res.status, body: await res.json() };
}

const signed = (payload, secret = SECRET) =>
  stripe.webhooks.generateTestHeaderString({ payload, secret });

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'reftrack-stripe-'));
  base = await start();
});

after(() => {
  child?.kill();
  rmSync(dir, { recursive: true, force: true });
});

test('signed checkout, refund and account events produce the sale, the refund and the figures', async () => {
  const ws = await call('POST', '/api/admin/workspaces', { name: 'Acme' }, ADMIN);
  const program = await call('POST', '/api/admin/programs', {
    workspace_id: ws.body.id, name: 'Acme', stripe_webhook_secret: SECRET,
    commission: { type: 'percentage', percent: 30 },
  }, ADMIN);
  assert.equal(program.status, 201);
  const pid = program.body.id;
  const partner = await call('POST', '/api/admin/partners', { name: 'Alice', code: 'alice' }, ADMIN);
  await call('POST', `/api/admin/programs/${pid}/partners`, { partner_id: partner.body.id }, ADMIN);
  await call('POST', '/api/admin/links', { program_id: pid, partner_id: partner.body.id, short_link: 'alice' }, ADMIN);
  const click = await call('POST', '/api/v1/track/click', { affiliate_url: 'https://shop.example.com/?aff=alice' });
  assert.equal(click.status, 200);
  const clickId = click.body.click_id;
  const lead = await call('POST', '/api/v1/track/lead', { click_id: clickId, customer_key: 'bob' }, program.body.api_token);
  assert.equal(lead.status, 200);

  const metadata = JSON.stringify({ tracker_click_id: clickId, tracker_customer_key: 'bob', program_id: String(pid) });
  const checkout = fixture('checkout.session.completed.payment', { CURRENCY: 'usd', METADATA: metadata });

  // Stripe's own signature is accepted; the same body under another secret, or altered
  // after signing, is not.
  let r = await deliver(pid, checkout, signed(checkout, 'whsec_someone_else'));
  assert.equal(r.status, 400);
  r = await deliver(pid, checkout.replace('4999', '9999'), signed(checkout));
  assert.equal(r.status, 400);
  r = await deliver(pid, checkout, signed(checkout));
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.outcome, 'sale recorded');
  r = await deliver(pid, checkout, signed(checkout));
  assert.equal(r.status, 200);
  assert.match(r.body.outcome, /^duplicate event/);

  const refund = fixture('charge.refunded', {
    EVENT_ID: 'evt_e2e_refund', CHARGE_ID: 'ch_e2e', AMOUNT: '4999', AMOUNT_REFUNDED: '999',
    INVOICE: 'null', PAYMENT_INTENT: 'pi_3QcsPayment0001', FULLY: 'false',
  });
  r = await deliver(pid, refund, signed(refund));
  assert.equal(r.body.outcome, 'refund refunded');

  const account = fixture('account.updated', { EVENT_ID: 'evt_e2e_acct', CHARGES: 'true', DETAILS: 'true', PAYOUTS: 'true' });
  r = await deliver(pid, account, signed(account));
  assert.equal(r.body.outcome, 'payment account connected');

  // The dashboard shows what the webhooks did.
  await call('POST', '/api/admin/users', { email: 'owner@acme.example', password: 'correct horse battery' }, ADMIN);
  await call('POST', `/api/admin/workspaces/${ws.body.id}/members`, { user_id: 1, role: 'owner' }, ADMIN);
  const login = await call('POST', '/api/auth/login', { email: 'owner@acme.example', password: 'correct horse battery' });
  assert.equal(login.status, 200);
  const perf = await call('GET', `/api/tracking/performance/${pid}`, undefined, login.body.token);
  assert.equal(perf.status, 200, JSON.stringify(perf.body));
  assert.equal(perf.body.metrics.totalSales, 1);
  assert.equal(perf.body.metrics.totalRevenue, 40);
  assert.equal(perf.body.metrics.totalPartnersCommission, 12);
  assert.equal(perf.body.metrics.totalConversions, 1);
  const status = await call('GET', `/api/tracking/status/${pid}`, undefined, login.body.token);
  assert.equal(status.body.data.stepStatuses.payments, 'complete');
  assert.equal(status.body.data.statistics.payments.stripeAccountId, 'acct_1QcsConnect01');
});

test('a signed checkout with a promotion code is attributed to the coupon\'s partner; a click wins', async () => {
  const ws = await call('POST', '/api/admin/workspaces', { name: 'Coupons' }, ADMIN);
  const program = await call('POST', '/api/admin/programs', {
    workspace_id: ws.body.id, name: 'Coupons', stripe_webhook_secret: SECRET,
    commission: { type: 'percentage', percent: 25 },
  }, ADMIN);
  assert.equal(program.status, 201);
  const pid = program.body.id;
  const links = {};
  for (const code of ['podcaster', 'blogger']) {
    const partner = await call('POST', '/api/admin/partners', { name: code, code, email: `${code}@example.com` }, ADMIN);
    await call('POST', `/api/admin/programs/${pid}/partners`, { partner_id: partner.body.id }, ADMIN);
    const link = await call('POST', '/api/admin/links', { program_id: pid, partner_id: partner.body.id, short_link: `${code}-l` }, ADMIN);
    links[code] = { link: link.body.id, partner: partner.body.id };
  }
  const c = await call('POST', `/api/admin/links/${links.podcaster.link}/coupons`, { code: 'PODCAST25', stripe_promotion_code: 'promo_1Podcast25' }, ADMIN);
  assert.equal(c.status, 201, JSON.stringify(c.body));

  const checkout = (suffix, metadata, email = 'listener@example.com') => fixture('checkout.session.completed.promotion', {
    EVENT_ID: `evt_e2e_promo_${suffix}`, SUFFIX: suffix, PROMOTION_CODE: 'promo_1Podcast25', EMAIL: email, METADATA: metadata,
  });
  const commissionsOf = async (partner) =>
    (await call('GET', `/api/admin/programs/${pid}/commissions?partner_id=${partner}`, undefined, ADMIN)).body.data;

  // No metadata at all: the promotion code names the coupon.
  let payload = checkout('P1', '{}');
  let r = await deliver(pid, payload, signed(payload));
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.outcome, 'sale recorded');
  let rows = await commissionsOf(links.podcaster.partner);
  assert.equal(rows.length, 1);
  assert.equal(rows[0].transaction_id, 'pi_3QcsP1');
  assert.equal(rows[0].amount_cents, 1000);
  assert.deepEqual(rows[0].flags, []);

  // The same body altered after signing is refused.
  r = await deliver(pid, payload.replace('promo_1Podcast25', 'promo_1Other'), signed(payload));
  assert.equal(r.status, 400);

  // A click of the blogger's link in the metadata wins over the podcaster's code.
  const click = await call('POST', '/api/v1/track/click', { affiliate_url: 'https://shop.example.com/?aff=blogger-l' });
  const metadata = JSON.stringify({ tracker_click_id: click.body.click_id, program_id: String(pid) });
  payload = checkout('P2', metadata);
  r = await deliver(pid, payload, signed(payload));
  assert.equal(r.body.outcome, 'sale recorded');
  rows = await commissionsOf(links.blogger.partner);
  assert.deepEqual(rows.map((x) => x.transaction_id), ['pi_3QcsP2']);

  // The podcaster buying with its own code: flagged, held for the owner.
  payload = checkout('P3', '{}', 'Podcaster+shop@Example.com');
  r = await deliver(pid, payload, signed(payload));
  assert.equal(r.body.outcome, 'sale recorded');
  rows = await commissionsOf(links.podcaster.partner);
  assert.equal(rows[0].transaction_id, 'pi_3QcsP3');
  assert.deepEqual(rows[0].flags, ['self_referral']);
  assert.equal(rows[0].status, 'pending');
});
