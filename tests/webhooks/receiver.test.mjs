// End to end: the real reftrack binary sends its outbound webhooks to a receiver here,
// which verifies every delivery with the Standard Webhooks reference library (the npm
// package `standardwebhooks`), not with Reftrack's own signing code. Every event type is
// caused through the API and must arrive, verified, with the data the spec names; a
// delivery answered 500 comes again with the same webhook-id. Every body must match its
// entry in the `webhooks` section of the server's own /openapi.json (checked with Ajv).
//
//   REFTRACK_BIN   the binary (default: target/debug/reftrack under the repo root)

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Webhook } from 'standardwebhooks';
import Ajv2020 from 'ajv/dist/2020.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = path.resolve(repoRoot, process.env.REFTRACK_BIN || 'target/debug/reftrack');
const ADMIN = 'webhooks-e2e-admin-token-0123456789';
const PASSWORD = 'correct horse battery';
const TYPES = [
  'lead.created', 'sale.created', 'sale.refunded', 'commission.created', 'commission.approved',
  'commission.reversed', 'partner.applied', 'partner.approved', 'payout.created', 'payout.paid',
];

let dir, child, base, receiver, receiverUrl;
let verifier = null;
// Every request the receiver got: its webhook-id, and the verified body or the error.
const arrivals = [];
// Whether to answer 500 to the next message not seen before (once).
let failNextNew = false;

function start() {
  return new Promise((resolve, reject) => {
    child = spawn(BIN, [], {
      env: {
        ...process.env,
        REFTRACK_DATABASE_URL: `sqlite://${path.join(dir, 'e2e.db')}`,
        REFTRACK_LISTEN: '127.0.0.1:0',
        REFTRACK_ADMIN_TOKEN: ADMIN,
        REFTRACK_WEBHOOK_ALLOW_PRIVATE: '1',
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

function listen() {
  return new Promise((resolve) => {
    receiver = createServer((req, res) => {
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        const payload = Buffer.concat(chunks).toString('utf8');
        const id = req.headers['webhook-id'];
        try {
          const body = verifier.verify(payload, req.headers);
          const again = arrivals.some((a) => a.id === id);
          arrivals.push({ id, body, payload, headers: req.headers });
          if (failNextNew && !again) {
            failNextNew = false;
            res.writeHead(500).end('try again');
          } else {
            res.writeHead(204).end();
          }
        } catch (e) {
          arrivals.push({ id, error: String(e), payload });
          res.writeHead(400).end();
        }
      });
    });
    receiver.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${receiver.address().port}/hook`));
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
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

async function until(what, done, ms = 20000) {
  const started = Date.now();
  while (!done()) {
    if (Date.now() - started > ms) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const verified = () => arrivals.filter((a) => !a.error);
const ofType = (t) => verified().filter((a) => a.body.type === t);

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'reftrack-webhooks-'));
  receiverUrl = await listen();
  base = await start();
});

after(() => {
  child?.kill();
  receiver?.close();
  rmSync(dir, { recursive: true, force: true });
});

test('every event type arrives signed as the reference verifier expects', async () => {
  const ws = await call('POST', '/api/admin/workspaces', { name: 'Acme' }, ADMIN);
  const program = await call('POST', '/api/admin/programs', {
    workspace_id: ws.body.id, name: 'Acme', commission_hold_days: 30, min_payout_cents: 100,
    applications_open: true,
  }, ADMIN);
  assert.equal(program.status, 201);
  const pid = program.body.id;
  const key = program.body.api_token;

  const endpoint = await call('POST', `/api/admin/programs/${pid}/webhooks`, { url: receiverUrl, events: TYPES }, ADMIN);
  assert.equal(endpoint.status, 201, JSON.stringify(endpoint.body));
  assert.match(endpoint.body.secret, /^whsec_[A-Za-z0-9+/]+=*$/);
  verifier = new Webhook(endpoint.body.secret);

  const alice = await call('POST', '/api/admin/partners', { name: 'Alice', code: 'alice' }, ADMIN);
  await call('PATCH', `/api/admin/partners/${alice.body.id}`, { payout_email: 'alice@example.com' }, ADMIN);
  assert.equal((await call('POST', `/api/admin/programs/${pid}/partners`, { partner_id: alice.body.id, status: 'approved' }, ADMIN)).status, 201);
  await call('POST', '/api/admin/links', { program_id: pid, partner_id: alice.body.id, short_link: 'alice' }, ADMIN);

  const click = async () => (await call('POST', '/api/v1/track/click', { affiliate_url: 'https://shop.example/?aff=alice' })).body.click_id;
  const c1 = await click();
  assert.equal((await call('POST', '/api/v1/track/lead', { click_id: c1, customer_key: 'bob' }, key)).status, 200);
  assert.equal((await call('POST', '/api/v1/track/sale', { transaction_id: 'txn-1', amount_cents: 10000, customer_key: 'bob' }, key)).status, 200);
  const c2 = await click();
  assert.equal((await call('POST', '/api/v1/track/sale', { transaction_id: 'txn-2', amount_cents: 5000, click_id: c2 }, key)).status, 200);
  assert.equal((await call('POST', '/api/v1/track/refund', { transaction_id: 'txn-2' }, key)).status, 200);
  const commissions = await call('GET', `/api/admin/programs/${pid}/commissions`, undefined, ADMIN);
  const c1Row = commissions.body.data.find((c) => c.transaction_id === 'txn-1');
  const approved = await call('POST', `/api/admin/commissions/${c1Row.id}/approve`, undefined, ADMIN);
  assert.equal(approved.status, 200);
  assert.equal((await call('POST', `/api/partner/apply/${pid}`, { name: 'Carol', email: 'carol@example.com', password: PASSWORD })).status, 201);
  const payout = await call('POST', `/api/admin/programs/${pid}/payouts`, {}, ADMIN);
  assert.equal(payout.status, 201, JSON.stringify(payout.body));
  const paid = await call('POST', `/api/admin/payouts/${payout.body.id}/mark-paid`, { reference: 'T-1' }, ADMIN);
  assert.equal(paid.status, 200);
  assert.equal((await call('POST', `/api/admin/webhooks/${endpoint.body.id}/test`, undefined, ADMIN)).status, 202);

  const counts = {
    'lead.created': 1, 'sale.created': 2, 'sale.refunded': 1, 'commission.created': 2,
    'commission.approved': 1, 'commission.reversed': 1, 'partner.applied': 1,
    'partner.approved': 1, 'payout.created': 1, 'payout.paid': 1, 'webhook.test': 1,
  };
  const total = Object.values(counts).reduce((a, b) => a + b);
  await until('every message', () => verified().length >= total);
  assert.deepEqual(arrivals.filter((a) => a.error), [], 'every delivery verifies');
  for (const [type, n] of Object.entries(counts)) assert.equal(ofType(type).length, n, type);
  assert.equal(new Set(verified().map((a) => a.id)).size, total, 'one webhook-id per message');

  for (const a of verified()) {
    assert.deepEqual(Object.keys(a.body).sort(), ['data', 'timestamp', 'type']);
    assert.ok(!Number.isNaN(Date.parse(a.body.timestamp)));
    assert.match(a.id, /^msg_/);
    assert.match(a.headers['webhook-signature'], /^v1,/);
  }
  const sale = ofType('sale.created').find((a) => a.body.data.processor_event_id === 'txn-1').body.data;
  assert.equal(sale.event_type, 'conversion');
  assert.equal(sale.amount_cents, 10000);
  assert.equal(sale.customer_key, 'bob');
  assert.equal(sale.program_id, pid);
  assert.equal(sale.partner_id, alice.body.id);
  assert.equal(sale.commission_id, c1Row.id);
  assert.deepEqual(ofType('commission.approved')[0].body.data, approved.body);
  assert.deepEqual(ofType('payout.created')[0].body.data, payout.body);
  assert.deepEqual(ofType('payout.paid')[0].body.data, paid.body);
  assert.equal(ofType('lead.created')[0].body.data.customer_key, 'bob');
  assert.equal(ofType('commission.reversed')[0].body.data.status, 'reversed');
  assert.equal(ofType('partner.applied')[0].body.data.email, 'carol@example.com');

  // Each body is what the OpenAPI document's entry for its type describes.
  const doc = (await call('GET', '/openapi.json')).body;
  const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
  ajv.addSchema(doc, 'reftrack');
  for (const a of verified()) {
    const entry = `reftrack#/webhooks/${a.body.type}/post/requestBody/content/application~1json/schema`;
    const valid = ajv.validate({ $ref: entry }, a.body);
    assert.ok(valid, `${a.body.type}: ${JSON.stringify(ajv.errors)} in ${a.payload}`);
  }
  // The check is a real one: a body of the wrong shape fails it.
  const wrong = { ...ofType('payout.paid')[0].body, data: { id: 'one' } };
  assert.equal(ajv.validate({ $ref: 'reftrack#/webhooks/payout.paid/post/requestBody/content/application~1json/schema' }, wrong), false);

  // An altered body does not verify: the check above is a real one.
  const one = verified()[0];
  assert.throws(() => verifier.verify(one.payload.replace('"type"', '"typo"'), one.headers));
});

test('a delivery answered 500 comes again with the same webhook-id and body', async () => {
  const ws = await call('POST', '/api/admin/workspaces', { name: 'Retry' }, ADMIN);
  const program = await call('POST', '/api/admin/programs', { workspace_id: ws.body.id, name: 'Retry' }, ADMIN);
  const pid = program.body.id;
  const endpoint = await call('POST', `/api/admin/programs/${pid}/webhooks`, { url: receiverUrl, events: ['partner.approved'] }, ADMIN);
  verifier = new Webhook(endpoint.body.secret);
  const partner = await call('POST', '/api/admin/partners', { name: 'Dan', code: 'dan' }, ADMIN);
  const seen = arrivals.length;
  failNextNew = true;
  const r = await call('POST', `/api/admin/programs/${pid}/partners`, { partner_id: partner.body.id, status: 'approved' }, ADMIN);
  assert.equal(r.status, 201);
  // The first attempt is answered 500; the next comes after the schedule's 5 seconds.
  await until('two attempts', () => arrivals.length - seen >= 2, 30000);
  const attempts = arrivals.slice(seen);
  assert.deepEqual(attempts.filter((a) => a.error), [], 'both verify');
  assert.equal(attempts[0].id, attempts[1].id);
  assert.equal(attempts[0].payload, attempts[1].payload);
  assert.equal(attempts[0].body.type, 'partner.approved');
  assert.equal(attempts[0].body.data.partner_id, partner.body.id);
  const log = await call('GET', `/api/admin/webhooks/${endpoint.body.id}/deliveries`, undefined, ADMIN);
  let [delivery] = log.body.data;
  for (let i = 0; i < 50 && delivery.status !== 'delivered'; i++) {
    await new Promise((r) => setTimeout(r, 100));
    [delivery] = (await call('GET', `/api/admin/webhooks/${endpoint.body.id}/deliveries`, undefined, ADMIN)).body.data;
  }
  assert.equal(delivery.status, 'delivered');
  assert.equal(delivery.message_id, attempts[0].id);
  assert.deepEqual(delivery.attempts.map((a) => a.status_code), [500, 204]);
});
