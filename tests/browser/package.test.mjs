// The npm package of the tracker (clients/js/) as an integrator gets it: `npm pack`, then
// `npm install` of the tarball into a throw-away app whose pages import the package's ES
// module through an import map, in headless Chromium against the real reftrack binary
// (fixtures: harness.mjs). Also: the committed web/tracker.js and clients/js/index.js are
// what clients/js/build.mjs makes from clients/js/src/, the package imports without a
// browser, and its types check with TypeScript.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  setup, repoRoot, DAY, api, HTTP, HTTPS, pages, folders, seed, clicksOf, sql, closedPort, open,
  clickCookie, cookieNamed,
} from './harness.mjs';

setup();

const PKG = '@reftrack/tracker';
const clientDir = path.join(repoRoot, 'clients', 'js');
let work, tarball, app, entry;

before(() => {
  work = mkdtempSync(path.join(tmpdir(), 'reftrack-package-'));
  execFileSync('npm', ['pack', '--silent', '--pack-destination', work], { cwd: clientDir, stdio: 'ignore' });
  tarball = path.join(work, readdirSync(work).find((f) => f.endsWith('.tgz')));
  app = path.join(work, 'app');
  mkdirSync(app);
  writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
  execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--no-package-lock', tarball], { cwd: app, stdio: 'ignore' });
  // The browser loads the file that the installed package's exports map names.
  const installed = path.join('node_modules', ...PKG.split('/'));
  const manifest = JSON.parse(readFileSync(path.join(app, installed, 'package.json'), 'utf8'));
  entry = `/app/${installed}/${manifest.exports['.'].default.replace(/^\.\//, '')}`;
  folders.set('/app/', app);
});

after(() => { if (work) rmSync(work, { recursive: true, force: true }); });

/** A page at `p` that imports the package and calls init(options) (not called without options). */
function appPage(p, options) {
  pages.set(p, `<!doctype html><html><head><meta charset="utf-8"><title>App ${p}</title>
<link rel="icon" href="data:,">
<script type="importmap">${JSON.stringify({ imports: { [PKG]: entry } })}</script>
<script type="module">
import * as tracker from '${PKG}';
window.tracker = tracker;
${options ? `window.firstClick = tracker.init(${JSON.stringify(options)});` : ''}
</script></head>
<body><h1>App</h1>
<script>window.addEventListener('load', function () { window.pageLoaded = true; });</script>
</body></html>`);
  return p;
}

const openApp = () => open({ ready: () => window.tracker });
const firstClick = (t) => t.page.evaluate(() => window.firstClick);

function assertNoErrors(t, allowed = /^$/) {
  assert.deepEqual(t.errors, [], 'page errors');
  assert.deepEqual(t.consoleErrors.filter((m) => !allowed.test(m)), [], 'console errors');
}

// ---------------------------------------------------------------------------------------
// The package itself

test('web/tracker.js and clients/js/index.js are what clients/js/build.mjs makes from src/', () => {
  execFileSync(process.execPath, [path.join(clientDir, 'build.mjs'), '--check'], { stdio: 'pipe' });

  // The check catches an edit of one side only (on a copy of the tree).
  const copy = path.join(work, 'tree');
  for (const f of ['clients/js/build.mjs', 'clients/js/src', 'clients/js/index.js', 'web/tracker.js']) {
    cpSync(path.join(repoRoot, f), path.join(copy, f), { recursive: true });
  }
  const served = path.join(copy, 'web', 'tracker.js');
  writeFileSync(served, readFileSync(served, 'utf8').replace("'aff'", "'ref'"));
  const r = spawnSync(process.execPath, [path.join(copy, 'clients', 'js', 'build.mjs'), '--check'], { encoding: 'utf8' });
  assert.equal(r.status, 1);
  assert.match(r.stderr, /web\/tracker\.js is not what/);
  assert.doesNotMatch(r.stderr, /index\.js/);
});

test('npm pack ships the module, its types, README, LICENSE and package.json only', () => {
  const files = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' }).trim().split('\n').sort();
  assert.deepEqual(files, ['package/LICENSE', 'package/README.md', 'package/index.d.ts', 'package/index.js', 'package/package.json']);
  const manifest = JSON.parse(execFileSync('tar', ['-xzOf', tarball, 'package/package.json'], { encoding: 'utf8' }));
  assert.equal(manifest.name, PKG);
  assert.equal(manifest.type, 'module');
  assert.deepEqual(manifest.exports['.'], { types: './index.d.ts', default: './index.js' });
  assert.deepEqual(manifest.dependencies, undefined, 'no dependencies');
});

test('imports without a browser (server-side rendering): does nothing, never throws', () => {
  const script = `
    import * as t from '${PKG}';
    const out = {
      keys: Object.keys(t).sort(),
      clickId: t.getClickId(),
      init: await t.init({ programId: 1 }),
      click: await t.trackClick(),
      lead: await t.trackLead({ customer_key: 'k' }),
    };
    console.log(JSON.stringify(out));`;
  const out = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: app, encoding: 'utf8' }));
  assert.deepEqual(out.keys, ['getClickId', 'init', 'trackClick', 'trackLead']);
  assert.equal(out.clickId, null);
  for (const k of ['init', 'click', 'lead']) assert.deepEqual(out[k], { success: false, error: 'tracker not configured' }, k);
});

test('the types check with TypeScript (bundler and nodenext resolution)', () => {
  writeFileSync(path.join(app, 'usage.ts'), `
import { init, trackClick, getClickId, trackLead, type TrackResult, type TrackerOptions } from '${PKG}';
const options: TrackerOptions = { programId: 3, apiHost: 'https://track.example.com', cookieDomain: 'example.com', debug: true };
const first: Promise<TrackResult | null> = init(options);
const id: string | null = getClickId();
trackClick().then((r) => r?.click_id);
trackLead({ customer_key: 'user-42', email: 'a@example.com' }).then((r: TrackResult) => r.success);
// @ts-expect-error programId is required
init({});
// @ts-expect-error the click id may be null
const bad: string = getClickId();
export { first, id, bad };
`);
  const tsc = path.join(path.dirname(fileURLToPath(import.meta.url)), 'node_modules', 'typescript', 'bin', 'tsc');
  for (const [module, resolution] of [['esnext', 'bundler'], ['nodenext', 'nodenext']]) {
    const r = spawnSync(process.execPath, [tsc, '--noEmit', '--strict', '--target', 'es2020', '--lib', 'es2020,dom',
      '--module', module, '--moduleResolution', resolution, 'usage.ts'], { cwd: app, encoding: 'utf8' });
    assert.equal(r.status, 0, `${resolution}: ${r.stdout}${r.stderr}`);
  }
});

// ---------------------------------------------------------------------------------------
// In the browser

test('click on aff: cookie on the registrable domain, shared by subdomains; nothing sent without aff', async () => {
  const s = await seed({ partners: ['pkshare'] });
  appPage('/pkg-share.html', { programId: s.program, debug: true });

  const t = await openApp();
  await t.visit(`http://a.shop.test:${HTTP}/pkg-share.html?aff=pkshare-link`);
  const answer = await firstClick(t);
  assert.equal(answer.success, true, JSON.stringify(answer));
  const cookie = await clickCookie(t.context);
  assert.equal(cookie.value, answer.click_id);
  assert.equal(cookie.domain, '.shop.test');
  assert.equal((await cookieNamed(t.context, `tracker_aff_${s.program}`))[0].value, 'pkshare-link');
  assert.deepEqual(await cookieNamed(t.context, 'tracker_probe'), []);
  assert.equal(await clicksOf(s.links.pkshare), 1);

  // Another subdomain, no aff: nothing sent, the click id is there.
  await t.visit(`http://b.shop.test:${HTTP}/pkg-share.html`);
  assert.equal(await firstClick(t), null);
  assert.equal(await t.page.evaluate(() => window.tracker.getClickId()), cookie.value);
  assert.equal(await clicksOf(s.links.pkshare), 1);

  // localhost: host-only.
  await t.visit(`http://localhost:${HTTP}/pkg-share.html?aff=pkshare-link`);
  assert.equal((await firstClick(t)).success, true);
  assert.equal((await cookieNamed(t.context, 'tracker_click_id')).find((c) => c.domain === 'localhost').value,
    await t.page.evaluate(() => window.tracker.getClickId()));
  assertNoErrors(t);
  await t.context.close();
});

test('cookieDomain, and the cookie attributes on HTTPS: Secure, SameSite=Lax, expiry = cookie_window_days', async () => {
  const s = await seed({ window: 7, partners: ['pkattr'] });
  appPage('/pkg-attr.html', { programId: String(s.program), cookieDomain: 'a.shop.test' });
  appPage('/pkg-host.html', { programId: s.program, cookieDomain: '' });

  const t = await openApp();
  const start = Date.now() / 1000;
  await t.visit(`https://x.a.shop.test:${HTTPS}/pkg-attr.html?aff=pkattr-link`);
  assert.equal((await firstClick(t)).success, true);
  const c = await clickCookie(t.context);
  assert.equal(c.domain, '.a.shop.test');
  assert.equal(c.secure, true);
  assert.equal(c.path, '/');
  assert.equal(c.httpOnly, false);
  const cdp = await t.context.newCDPSession(t.page);
  const raw = (await cdp.send('Network.getAllCookies')).cookies.find((k) => k.name === 'tracker_click_id');
  assert.equal(raw.sameSite, 'Lax', 'SameSite written explicitly');
  assert.ok(Math.abs(c.expires - (start + 7 * DAY)) < 120, `expires in 7 days, got ${c.expires - start}s`);
  assertNoErrors(t);
  await t.context.close();

  // cookieDomain '' = host-only, on plain HTTP: no Secure.
  const h = await openApp();
  await h.visit(`http://a.shop.test:${HTTP}/pkg-host.html?aff=pkattr-link`);
  assert.equal((await firstClick(h)).success, true);
  const hc = await clickCookie(h.context);
  assert.equal(hc.domain, 'a.shop.test');
  assert.equal(hc.secure, false);
  assertNoErrors(h);
  await h.context.close();
  assert.equal(await clicksOf(s.links.pkattr), 2);
});

test('single-page app: trackClick after client-side navigation (last touch, one click per link), trackLead', async () => {
  const s = await seed({ partners: ['spa', 'spb'] });
  // The API on reftrack's own origin: apiHost, cross-origin (CORS).
  appPage('/pkg-spa.html', { programId: s.program, apiHost: `${api}/`, debug: true });

  const t = await openApp();
  const sent = [];
  t.page.on('request', (r) => { if (r.url().includes('/api/v1/track/click')) sent.push(r.url()); });
  await t.visit(`http://a.shop.test:${HTTP}/pkg-spa.html`);
  assert.equal(await firstClick(t), null);
  assert.equal(await t.page.evaluate(() => window.tracker.getClickId()), null);

  // A route with aff, reached without a page load; the router calls trackClick twice.
  const [a1, a2] = await t.page.evaluate(() => {
    history.pushState({}, '', '/pkg-spa.html?aff=spa-link');
    return Promise.all([window.tracker.trackClick(), window.tracker.trackClick()]);
  });
  assert.equal(a1.success, true, JSON.stringify(a1));
  assert.deepEqual(a2, a1, 'the second call shares the first one\'s click');
  assert.equal(sent.length, 1);
  assert.ok(sent[0].startsWith(`${api}/api/v1/track/click`), sent[0]);
  assert.equal(await clicksOf(s.links.spa), 1);
  const first = (await clickCookie(t.context)).value;

  // The same link again: nothing sent.
  assert.equal(await t.page.evaluate(() => window.tracker.trackClick()), null);
  await t.waitLog(/no new click/);
  assert.equal(sent.length, 1);

  // Another partner's link: a click, the customer keeps its click id (last touch).
  const b = await t.page.evaluate(() => {
    history.pushState({}, '', '/pkg-spa.html?aff=spb-link');
    return window.tracker.trackClick();
  });
  assert.equal(b.success, true);
  assert.equal(b.click_id, first);
  assert.equal(await clicksOf(s.links.spb), 1);
  assert.equal(sql(`SELECT partner_id FROM customers WHERE click_id = '${first}'`), String(s.partners.spb));

  // A second init changes nothing.
  assert.equal(await t.page.evaluate(() => window.tracker.init({ programId: 1 }) === window.firstClick), true);

  // The lead helper.
  const lead = await t.page.evaluate(() => window.tracker.trackLead({ customer_key: 'spa-user', email: 'spa@example.com' }));
  assert.equal(lead.success, true, JSON.stringify(lead));
  assert.equal(sql(`SELECT customer_status || '|' || customer_key FROM customers WHERE click_id = '${first}'`), 'lead|spa-user');
  assert.equal(sql(`SELECT count(*) FROM affiliate_lead_events WHERE click_id = '${first}' AND customer_key = 'spa-user'`), '1');
  const again = await t.page.evaluate(() => window.tracker.trackLead({ customer_key: 'spa-user' }).then((r) => r, () => 'rejected'));
  assert.equal(again.success, false);
  assertNoErrors(t, /status of 4\d\d/);
  await t.context.close();
});

test('failures stay inside: no programId, a server that is down, calls before init', async () => {
  const s = await seed({ partners: ['pkdown'] });
  const dead = await closedPort();
  appPage('/pkg-noprog.html', { debug: true });
  appPage('/pkg-down.html', { programId: s.program, apiHost: `http://127.0.0.1:${dead}`, debug: true });
  appPage('/pkg-noinit.html');

  const t = await openApp();
  await t.visit(`http://a.shop.test:${HTTP}/pkg-noprog.html?aff=pkdown-link`);
  assert.deepEqual(await firstClick(t), { success: false, error: 'tracker not configured' });
  await t.waitLog(/programId is missing or invalid/);
  assert.equal((await t.page.evaluate(() => window.tracker.trackLead({ customer_key: 'k' }))).success, false);

  await t.visit(`http://a.shop.test:${HTTP}/pkg-down.html?aff=pkdown-link`);
  assert.equal((await firstClick(t)).success, false);
  await t.waitLog(/click failed/);
  assert.equal((await t.page.evaluate(() => window.tracker.trackLead({ customer_key: 'k' }))).success, false);
  assert.deepEqual(await cookieNamed(t.context, 'tracker_click_id'), []);

  // Before init: the cookie can be read, nothing is sent.
  await t.visit(`http://a.shop.test:${HTTP}/pkg-noinit.html?aff=pkdown-link`);
  const before = await t.page.evaluate(async () => [
    window.tracker.getClickId(), await window.tracker.trackClick(), await window.tracker.trackLead({ customer_key: 'k' }),
  ]);
  assert.deepEqual(before, [null, { success: false, error: 'tracker not configured' }, { success: false, error: 'tracker not configured' }]);
  assert.equal(await clicksOf(s.links.pkdown), 0);
  assertNoErrors(t, /ERR_CONNECTION_REFUSED/);
  await t.context.close();
});
