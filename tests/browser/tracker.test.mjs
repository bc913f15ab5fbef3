// Headless Chromium tests of the browser tracker served at GET /tracker.js.
//
// Runs the real reftrack binary on a fresh SQLite database, seeds it through the admin
// API and serves test pages from a small HTTP and HTTPS server that also reverse-proxies
// /tracker.js and /api/ to reftrack (an HTTPS page cannot call an http API). Chromium maps
// every *.shop.test host to 127.0.0.1.
//
//   REFTRACK_BIN   the binary (default: target/debug/reftrack under the repo root)
//   CHROMIUM_BIN   the browser (default: /usr/bin/chromium)

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import http from 'node:http';
import https from 'node:https';
import zlib from 'node:zlib';
import { chromium } from 'playwright-core';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = path.resolve(repoRoot, process.env.REFTRACK_BIN || 'target/debug/reftrack');
const CHROMIUM = process.env.CHROMIUM_BIN || '/usr/bin/chromium';
const ADMIN = 'browser-test-admin-token-0123456789';
const DAY = 86400;

let dir, db, reftrack, api, browser, httpServer, httpsServer, HTTP, HTTPS;
const pages = new Map(); // path -> HTML

// ---------------------------------------------------------------------------------------
// Fixtures

function startReftrack() {
  return new Promise((resolve, reject) => {
    const child = spawn(BIN, [], {
      env: {
        ...process.env,
        REFTRACK_DATABASE_URL: `sqlite://${db}`,
        REFTRACK_LISTEN: '127.0.0.1:0',
        REFTRACK_ADMIN_TOKEN: ADMIN,
        RUST_LOG: process.env.RUST_LOG || 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '', err = '';
    const timer = setTimeout(() => reject(new Error(`reftrack did not start:\n${out}\n${err}`)), 30000);
    child.stderr.on('data', (c) => { err += c; });
    child.stdout.on('data', (c) => {
      out += c;
      const m = out.match(/Reftrack is serving on (http:\/\/\S+)/);
      if (m) { clearTimeout(timer); resolve({ child, url: m[1].replace(/\/$/, '') }); }
    });
    child.on('error', (e) => { clearTimeout(timer); reject(e); });
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`reftrack exited ${code}:\n${err}`)); });
  });
}

async function admin(method, p, body) {
  const res = await fetch(`${api}/api/admin${p}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json();
  assert.ok(res.ok, `${method} ${p}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

let seq = 0;
/** A program with one link per partner code: {program, partners: {code: id}, links: {short: id}}. */
async function seed({ window, origins, partners }) {
  const n = ++seq;
  const ws = await admin('POST', '/workspaces', { name: `ws ${n}` });
  const body = { workspace_id: ws.id, name: `program ${n}` };
  if (window) body.cookie_window_days = window;
  if (origins) body.allowed_origins = origins;
  const program = await admin('POST', '/programs', body);
  const out = { program: program.id, workspace: ws.id, partners: {}, links: {} };
  for (const code of partners) {
    const partner = await admin('POST', '/partners', { name: `Partner ${code}`, code });
    await admin('POST', `/programs/${program.id}/partners`, { partner_id: partner.id });
    const link = await admin('POST', '/links', { program_id: program.id, partner_id: partner.id, short_link: `${code}-link` });
    out.partners[code] = partner.id;
    out.links[code] = link.id;
  }
  return out;
}

const clicksOf = async (linkId) => (await admin('GET', `/links/${linkId}`)).clicks;

/** The program's performance metrics as a dashboard owner sees them. */
async function dashboardMetrics(s) {
  const email = `owner${s.program}@shop.test`;
  const user = await admin('POST', '/users', { email, password: 'correct horse battery' });
  await admin('POST', `/workspaces/${s.workspace}/members`, { user_id: user.id, role: 'owner' });
  const login = await fetch(`${api}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password: 'correct horse battery' }),
  }).then((r) => r.json());
  const perf = await fetch(`${api}/api/tracking/performance/${s.program}`, {
    headers: { authorization: `Bearer ${login.token}` },
  }).then((r) => r.json());
  return perf.metrics;
}

function sql(query) {
  return execFileSync('sqlite3', ['-cmd', '.timeout 5000', db, query], { encoding: 'utf8' }).trim();
}

/** A test page at `p` loading the tracker with these data- attributes. */
function page(p, { program, src = '/tracker.js', apiHost, cookieDomain, debug = true, head = '' }) {
  const attrs = [
    program !== undefined ? `data-program-id="${program}"` : '',
    apiHost ? `data-api-host="${apiHost}"` : '',
    cookieDomain ? `data-cookie-domain="${cookieDomain}"` : '',
    debug ? 'data-debug' : '',
  ].join(' ');
  pages.set(p, `<!doctype html><html><head><meta charset="utf-8"><title>Landing ${p}</title>${head}
<script src="${src}" ${attrs} async></script></head>
<body><h1>Shop</h1>
<script>window.addEventListener('load', function () { window.pageLoaded = true; });</script>
</body></html>`);
  return p;
}

// Pages, plus a reverse proxy of /tracker.js and /api/ to reftrack.
function handler(req, res) {
  const url = new URL(req.url, 'http://x');
  if (url.pathname === '/tracker.js' || url.pathname.startsWith('/api/')) {
    const upstream = new URL(api);
    const headers = { ...req.headers, host: upstream.host };
    const proxied = http.request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers }, (r) => {
      res.writeHead(r.statusCode, r.headers);
      r.pipe(res);
    });
    proxied.on('error', () => { res.writeHead(502); res.end(); });
    req.pipe(proxied);
    return;
  }
  const html = pages.get(url.pathname);
  if (!html) { res.writeHead(404); res.end('not found'); return; }
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
  res.end(html);
}

const listen = (server) => new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server.address().port)));

async function closedPort() {
  const s = http.createServer();
  const port = await listen(s);
  await new Promise((r) => s.close(r));
  return port;
}

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'reftrack-browser-'));
  db = path.join(dir, 'reftrack.db');
  reftrack = await startReftrack();
  api = reftrack.url;

  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2',
    '-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'cert.pem'),
    '-subj', '/CN=shop.test',
    '-addext', 'subjectAltName=DNS:shop.test,DNS:*.shop.test,DNS:localhost',
  ], { stdio: 'ignore' });
  httpServer = http.createServer(handler);
  httpsServer = https.createServer({ key: readFileSync(path.join(dir, 'key.pem')), cert: readFileSync(path.join(dir, 'cert.pem')) }, handler);
  HTTP = await listen(httpServer);
  HTTPS = await listen(httpsServer);

  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      '--disable-dev-shm-usage', '--ignore-certificate-errors',
      '--host-resolver-rules=MAP *.shop.test 127.0.0.1',
    ],
  });
});

after(async () => {
  await browser?.close();
  httpServer?.close();
  httpsServer?.close();
  reftrack?.child.kill('SIGTERM');
  if (dir) rmSync(dir, { recursive: true, force: true });
});

// A fresh context (its own cookie jar) whose page records page errors and tracker logs.
async function open() {
  const context = await browser.newContext();
  const p = await context.newPage();
  const errors = [], logs = [];
  p.on('pageerror', (e) => errors.push(e));
  p.on('console', (m) => { if (m.text().startsWith('[reftrack]')) logs.push(m.text()); });
  const waitLog = async (re, timeout = 10000) => {
    const end = Date.now() + timeout;
    while (!logs.some((l) => re.test(l))) {
      if (Date.now() > end) throw new Error(`no tracker log matching ${re}; logs: ${JSON.stringify(logs)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const visit = async (url) => {
    logs.length = 0;
    await p.goto(url);
    await p.waitForFunction(() => window.pageLoaded === true && window.reftrack);
  };
  return { context, page: p, errors, logs, waitLog, visit };
}

async function clickCookie(context, timeout = 10000) {
  const end = Date.now() + timeout;
  for (;;) {
    const c = (await context.cookies()).find((k) => k.name === 'tracker_click_id');
    if (c) return c;
    if (Date.now() > end) throw new Error('no tracker_click_id cookie');
    await new Promise((r) => setTimeout(r, 50));
  }
}

const cookieNamed = async (context, name) => (await context.cookies()).filter((c) => c.name === name);

// ---------------------------------------------------------------------------------------
// Tests

test('subdomains of one site share the click cookie; localhost and IPs get a host-only one', async () => {
  const s = await seed({ partners: ['share'] });
  page('/share.html', { program: s.program });

  const t = await open();
  await t.visit(`http://a.shop.test:${HTTP}/share.html?aff=share-link`);
  const cookie = await clickCookie(t.context);
  assert.match(cookie.value, /^cust_\d+_\d+$/);
  assert.equal(cookie.domain, '.shop.test', 'set on the registrable domain, not on a.shop.test nor on test');
  assert.deepEqual(await cookieNamed(t.context, 'tracker_probe'), [], 'probe cookie removed');

  await t.visit(`http://b.shop.test:${HTTP}/share.html`);
  assert.equal(await t.page.evaluate(() => window.reftrack.getClickId()), cookie.value);
  assert.equal((await cookieNamed(t.context, 'tracker_click_id')).length, 1);
  assert.equal(await clicksOf(s.links.share), 1, 'a page without aff sends nothing');
  assert.deepEqual(t.errors, []);
  await t.context.close();

  // Deeper host: the probe still finds the shortest suffix the browser accepts.
  const deep = await open();
  await deep.visit(`http://x.y.shop.test:${HTTP}/share.html?aff=share-link`);
  assert.equal((await clickCookie(deep.context)).domain, '.shop.test');
  await deep.context.close();

  for (const host of ['localhost', '127.0.0.1']) {
    const local = await open();
    await local.visit(`http://${host}:${HTTP}/share.html?aff=share-link`);
    const c = await clickCookie(local.context);
    assert.equal(c.domain, host, `host-only cookie on ${host}`);
    assert.equal(await local.page.evaluate(() => window.reftrack.getClickId()), c.value);
    assert.deepEqual(local.errors, []);
    await local.context.close();
  }
});

test('data-cookie-domain skips the probe', async () => {
  const s = await seed({ partners: ['cdom'] });
  page('/cdom.html', { program: s.program, cookieDomain: 'a.shop.test' });
  const t = await open();
  await t.visit(`http://x.a.shop.test:${HTTP}/cdom.html?aff=cdom-link`);
  assert.equal((await clickCookie(t.context)).domain, '.a.shop.test');
  await t.context.close();
});

test('cookie attributes: SameSite=Lax, Secure on HTTPS only, expiry = cookie_window_days', async () => {
  const s = await seed({ window: 7, partners: ['attr'] });
  page('/attr.html', { program: s.program });

  for (const [scheme, port, secure] of [['http', HTTP, false], ['https', HTTPS, true]]) {
    const t = await open();
    const before = Date.now() / 1000;
    await t.visit(`${scheme}://a.shop.test:${port}/attr.html?aff=attr-link`);
    const c = await clickCookie(t.context);
    assert.equal(c.sameSite, 'Lax', scheme);
    // Playwright reports an unspecified SameSite as Lax (Chromium's default); the
    // DevTools protocol leaves it out, so this shows that the tracker wrote it.
    const cdp = await t.context.newCDPSession(t.page);
    const raw = (await cdp.send('Network.getAllCookies')).cookies.find((k) => k.name === 'tracker_click_id');
    assert.equal(raw.sameSite, 'Lax', `${scheme}: SameSite written explicitly`);
    assert.equal(c.secure, secure, `${scheme}: Secure`);
    assert.equal(c.path, '/');
    assert.equal(c.httpOnly, false);
    assert.ok(Math.abs(c.expires - (before + 7 * DAY)) < 120, `${scheme}: expires in 7 days, got ${c.expires - before}s`);
    assert.deepEqual(t.errors, []);
    await t.context.close();
  }
  assert.equal(await clicksOf(s.links.attr), 2);
});

test('last touch: same link adds no click, another partner re-points the same customer, trackLead makes a lead', async () => {
  const s = await seed({ partners: ['lta', 'ltb'] });
  page('/lt.html', { program: s.program });
  // A cross-origin install: the script and the API on reftrack's own origin (CORS, preflight).
  page('/lt-direct.html', { program: s.program, src: `${api}/tracker.js` });

  const t = await open();
  await t.visit(`http://a.shop.test:${HTTP}/lt-direct.html?aff=lta-link`);
  const first = (await clickCookie(t.context)).value;
  assert.equal(await clicksOf(s.links.lta), 1);

  // Same link again, from another subdomain: the tracker says so and sends nothing.
  const sent = [];
  t.page.on('request', (r) => { if (r.url().includes('/api/v1/track/click')) sent.push(r.url()); });
  await t.visit(`http://b.shop.test:${HTTP}/lt.html?aff=lta-link`);
  await t.waitLog(/no new click/);
  assert.deepEqual(sent, []);
  assert.equal(await clicksOf(s.links.lta), 1);

  // Another partner: one new click carrying the stored click id; the customer is reused.
  await t.visit(`http://a.shop.test:${HTTP}/lt.html?aff=ltb-link`);
  await t.waitLog(/^\[reftrack\] click/);
  assert.equal(sent.length, 1);
  assert.equal(await clicksOf(s.links.ltb), 1);
  assert.equal(await clicksOf(s.links.lta), 1);
  assert.equal((await clickCookie(t.context)).value, first, 'the customer keeps its click id (last touch)');
  assert.equal(sql(`SELECT partner_id FROM customers WHERE click_id = '${first}'`), String(s.partners.ltb));
  assert.equal(sql(`SELECT link_id FROM customers WHERE click_id = '${first}'`), String(s.links.ltb));
  assert.equal(sql(`SELECT count(*) FROM customers WHERE program_id = ${s.program}`), '1');
  assert.equal(sql(`SELECT count(*) FROM affiliate_click_events WHERE program_id = ${s.program}`), '2');
  const event = sql(`SELECT page_title || '|' || screen_resolution || '|' || viewport_size || '|' || session_id FROM affiliate_click_events WHERE program_id = ${s.program} ORDER BY id DESC LIMIT 1`).split('|');
  assert.equal(event[0], 'Landing /lt.html');
  assert.match(event[1], /^\d+x\d+$/);
  assert.match(event[2], /^\d+x\d+$/);
  assert.ok(event[3].length >= 8, 'session id');

  // Back to the first partner: a click again (last touch), same customer.
  await t.visit(`http://a.shop.test:${HTTP}/lt.html?aff=lta-link`);
  await t.waitLog(/^\[reftrack\] click/);
  assert.equal(await clicksOf(s.links.lta), 2);
  assert.equal(sql(`SELECT partner_id FROM customers WHERE click_id = '${first}'`), String(s.partners.lta));

  // Lead from the browser with the cookie's click id.
  const lead = await t.page.evaluate(() => window.reftrack.trackLead({ customer_key: 'user-42', email: 'u42@example.com' }));
  assert.equal(lead.success, true, JSON.stringify(lead));
  assert.equal(sql(`SELECT customer_status || '|' || customer_key FROM customers WHERE click_id = '${first}'`), 'lead|user-42');
  assert.equal(sql(`SELECT count(*) FROM affiliate_lead_events WHERE click_id = '${first}' AND customer_key = 'user-42'`), '1');
  // The dashboard counts it.
  const metrics = await dashboardMetrics(s);
  assert.equal(metrics.totalLeads, 1);
  assert.equal(metrics.totalClicks, 3);

  // A second lead is refused by the server: the promise still resolves.
  const again = await t.page.evaluate(() => window.reftrack.trackLead({ customer_key: 'user-42' }).then((r) => r, () => 'rejected'));
  assert.equal(again.success, false);
  assert.deepEqual(t.errors, []);
  await t.context.close();
});

test('a disallowed origin gets no cookie and no page error', async () => {
  const s = await seed({ partners: ['orig'], origins: ['https://allowed.shop.test'] });
  page('/orig.html', { program: s.program });
  page('/orig-direct.html', { program: s.program, src: `${api}/tracker.js` });

  for (const p of ['/orig.html', '/orig-direct.html']) {
    const t = await open();
    await t.visit(`http://a.shop.test:${HTTP}${p}?aff=orig-link`);
    await t.waitLog(/^\[reftrack\] click/);
    assert.deepEqual(await cookieNamed(t.context, 'tracker_click_id'), [], p);
    assert.equal(await t.page.evaluate(() => window.reftrack.getClickId()), null);
    const lead = await t.page.evaluate(() => window.reftrack.trackLead({ customer_key: 'k' }));
    assert.equal(lead.success, false);
    assert.deepEqual(t.errors, [], p);
    await t.context.close();
  }
  assert.equal(await clicksOf(s.links.orig), 0);

  // Control: once the origin is listed, the same page works.
  await admin('PATCH', `/programs/${s.program}`, { allowed_origins: [`http://a.shop.test:${HTTP}`] });
  const t = await open();
  await t.visit(`http://a.shop.test:${HTTP}/orig-direct.html?aff=orig-link`);
  await clickCookie(t.context);
  assert.equal(await clicksOf(s.links.orig), 1);
  await t.context.close();
});

test('a server that is down, or bad attributes, cause no page error', async () => {
  const s = await seed({ partners: ['down'] });
  const dead = await closedPort();
  page('/down.html', { program: s.program, apiHost: `http://127.0.0.1:${dead}` });
  page('/down-quiet.html', { program: s.program, apiHost: `http://127.0.0.1:${dead}`, debug: false });
  page('/noprog.html', {});
  page('/badprog.html', { program: 'three' });
  // A browser that refuses cookies and storage outright (as in a sandboxed frame).
  page('/blocked.html', {
    program: s.program,
    head: `<script>
      var no = function () { throw new DOMException('blocked', 'SecurityError'); };
      Object.defineProperty(document, 'cookie', { get: no, set: no });
      Object.defineProperty(window, 'sessionStorage', { get: no });
    </script>`,
  });

  const t = await open();
  await t.visit(`http://a.shop.test:${HTTP}/down.html?aff=down-link`);
  await t.waitLog(/click failed/);
  const lead = await t.page.evaluate(() => window.reftrack.trackLead({ customer_key: 'k', email: 'e@example.com' }));
  assert.equal(lead.success, false);
  assert.deepEqual(await cookieNamed(t.context, 'tracker_click_id'), []);

  for (const p of ['/noprog.html', '/badprog.html']) {
    await t.visit(`http://a.shop.test:${HTTP}${p}?aff=down-link`);
    await t.waitLog(/data-program-id/);
    assert.equal(await t.page.evaluate(() => window.reftrack.getClickId()), null);
    assert.equal((await t.page.evaluate(() => window.reftrack.trackLead({ customer_key: 'k' }))).success, false);
  }
  assert.equal(await clicksOf(s.links.down), 0);

  // Without data-debug the tracker says nothing, even when its click fails.
  const failed = t.page.waitForEvent('requestfailed', (r) => r.url().includes('/api/v1/track/click'));
  await t.visit(`http://a.shop.test:${HTTP}/down-quiet.html?aff=down-link`);
  await failed;
  await new Promise((r) => setTimeout(r, 200));
  assert.deepEqual(t.logs, []);

  // Cookies and storage that throw: the click is still sent, the failure stays inside.
  await t.visit(`http://a.shop.test:${HTTP}/blocked.html?aff=down-link`);
  await t.waitLog(/cookie error/);
  assert.equal(await t.page.evaluate(() => window.reftrack.getClickId()), null);
  assert.equal(await clicksOf(s.links.down), 1);
  assert.deepEqual(t.errors, []);
  await t.context.close();
});

// ---------------------------------------------------------------------------------------
// The served script

function get(url, headers = {}) {
  return new Promise((resolve, reject) => {
    http.get(url, { headers }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
    }).on('error', reject);
  });
}

test('GET /tracker.js: content type, cache policy, ETag and 304, gzip under 3 KB', async () => {
  const source = readFileSync(path.join(repoRoot, 'web', 'tracker.js'));
  const plain = await get(`${api}/tracker.js`);
  assert.equal(plain.status, 200);
  assert.equal(plain.headers['content-type'], 'application/javascript; charset=utf-8');
  assert.equal(plain.headers['cache-control'], 'public, max-age=3600');
  assert.equal(plain.headers['content-encoding'], undefined);
  assert.deepEqual(plain.body, source, 'serves web/tracker.js as-is');
  const etag = plain.headers.etag;
  assert.match(etag, /^"[0-9a-f]{64}"$/, 'strong ETag');

  const notModified = await get(`${api}/tracker.js`, { 'if-none-match': etag });
  assert.equal(notModified.status, 304);
  assert.equal(notModified.body.length, 0);
  assert.equal((await get(`${api}/tracker.js`, { 'if-none-match': '"stale"' })).status, 200);

  const gz = await get(`${api}/tracker.js`, { 'accept-encoding': 'gzip, deflate, br' });
  assert.equal(gz.status, 200);
  assert.equal(gz.headers['content-encoding'], 'gzip');
  assert.match(gz.headers.vary, /accept-encoding/i);
  assert.deepEqual(zlib.gunzipSync(gz.body), source);
  assert.ok(gz.body.length < 3072, `served gzip is ${gz.body.length} bytes`);
  const gzEtag = gz.headers.etag;
  assert.equal((await get(`${api}/tracker.js`, { 'accept-encoding': 'gzip', 'if-none-match': gzEtag })).status, 304);

  const best = zlib.gzipSync(source, { level: 9 }).length;
  assert.ok(best < 3072, `gzip -9 size is ${best} bytes`);
  console.log(`# tracker.js: ${source.length} bytes, ${best} bytes after zlib level 9`);
});
