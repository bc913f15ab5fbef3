// Headless Chromium tests of the browser tracker served at GET /tracker.js, against the
// real reftrack binary (fixtures: harness.mjs).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import http from 'node:http';
import zlib from 'node:zlib';
import {
  setup, repoRoot, DAY, api, HTTP, HTTPS, pages, admin, seed, clicksOf, dashboardMetrics, sql,
  closedPort, open, clickCookie, cookieNamed, BROWSER_UA,
} from './harness.mjs';

setup();

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

test('through a redirect link: the click of rt_click is kept, none is posted, the address bar is cleaned', async () => {
  const s = await seed({ window: 7, partners: ['rt'] });
  page('/rt.html', { program: s.program });
  await admin('PATCH', `/programs/${s.program}`, { destination_url: `http://a.shop.test:${HTTP}/rt.html?from=ad` });
  // Headless Chromium says so in its user agent, which makes it a bot to the redirect.
  const t = await open({ contextOptions: { userAgent: BROWSER_UA } });
  const posted = [];
  t.page.on('request', (r) => { if (r.url().includes('/api/v1/track/click')) posted.push(r.url()); });

  await t.visit(`${api}/r/rt-link?utm_source=mail`);
  await t.waitLog(/click recorded by the redirect link/);
  const recorded = sql(`SELECT click_id FROM affiliate_click_events WHERE link_id = ${s.links.rt}`);
  assert.match(recorded, /^cust_\d+_\d+$/, 'the redirect recorded one click');
  const cookie = await clickCookie(t.context);
  assert.equal(cookie.value, recorded, 'the cookie holds the redirect\'s click id');
  assert.equal(cookie.sameSite, 'Lax');
  assert.equal(cookie.domain, '.shop.test');
  assert.ok(Math.abs(cookie.expires - (Date.now() / 1000 + 7 * DAY)) < 120, 'expires with the program\'s window');
  // `aff` carries the partner's code (`rt`), not the link's short name.
  assert.equal((await cookieNamed(t.context, `tracker_aff_${s.program}`))[0].value, 'rt');
  assert.equal(await t.page.evaluate(() => window.reftrack.getClickId()), recorded);
  const landed = new URL(t.page.url());
  assert.equal(landed.pathname, '/rt.html');
  assert.equal(landed.searchParams.get('from'), 'ad');
  assert.equal(landed.searchParams.get('utm_source'), 'mail');
  assert.equal(landed.searchParams.get('aff'), 'rt');
  assert.equal(landed.searchParams.get('rt_click'), null, 'taken out of the address bar');
  assert.equal(landed.searchParams.get('rt_window'), null);

  // Coming back with the same `aff` on the site: no click either.
  await t.visit(`http://a.shop.test:${HTTP}/rt.html?aff=rt`);
  await t.waitLog(/no new click/);
  await new Promise((r) => setTimeout(r, 200));
  assert.deepEqual(posted, []);
  assert.equal(await clicksOf(s.links.rt), 1);

  // The click attributes a browser-mode lead.
  const lead = await t.page.evaluate(() => window.reftrack.trackLead({ customer_key: 'rt-user' }));
  assert.equal(lead.success, true, JSON.stringify(lead));
  assert.equal(sql(`SELECT customer_status FROM customers WHERE click_id = '${recorded}'`), 'lead');
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
