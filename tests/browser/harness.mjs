// The fixtures of the browser tests (tracker.test.mjs: GET /tracker.js; package.test.mjs:
// the npm package in clients/js/; portal.test.mjs: the partner portal's pages;
// dashboard.test.mjs: the owner's dashboard).
//
// Runs the real reftrack binary on a fresh SQLite database, seeds it through the admin
// API and serves test pages from a small HTTP and HTTPS server that also reverse-proxies
// /tracker.js and /api/ to reftrack (an HTTPS page cannot call an http API). Chromium maps
// every *.shop.test host to 127.0.0.1.
//
//   REFTRACK_BIN   the binary (default: target/debug/reftrack under the repo root)
//   CHROMIUM_BIN   the browser (default: /usr/bin/chromium)

import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import http from 'node:http';
import https from 'node:https';
import { chromium } from 'playwright-core';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = path.resolve(repoRoot, process.env.REFTRACK_BIN || 'target/debug/reftrack');
const CHROMIUM = process.env.CHROMIUM_BIN || '/usr/bin/chromium';
/** The admin token the server runs with (REFTRACK_ADMIN_TOKEN); the first run asks for it. */
export const ADMIN = 'browser-test-admin-token-0123456789';
export const DAY = 86400;
/** A desktop Chrome's user agent (headless Chromium names itself a bot). */
export const BROWSER_UA = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36';

// Set by setup()'s before hook; importers see the values (live bindings).
export let dir, db, api, HTTP, HTTPS;
let reftrack, browser, httpServer, httpsServer;
/** Test pages: path -> HTML. */
export const pages = new Map();
/** Static folders: URL prefix (ending in /) -> folder. */
export const folders = new Map();

// ---------------------------------------------------------------------------------------
// Fixtures

function startReftrack(env) {
  return new Promise((resolve, reject) => {
    const child = spawn(BIN, [], {
      env: {
        ...process.env,
        ...env,
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

export async function admin(method, p, body) {
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
export async function seed({ window, origins, partners }) {
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

export const clicksOf = async (linkId) => (await admin('GET', `/links/${linkId}`)).clicks;

/** The program's performance metrics as a dashboard owner sees them. */
export async function dashboardMetrics(s) {
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

export function sql(query) {
  return execFileSync('sqlite3', ['-cmd', '.timeout 5000', db, query], { encoding: 'utf8' }).trim();
}

/** A test page at `p` loading the tracker with these data- attributes. */
const TYPES = { '.js': 'text/javascript; charset=utf-8', '.json': 'application/json' };

// A file under one of `folders`, or null.
function folderFile(pathname) {
  for (const [prefix, root] of folders) {
    if (!pathname.startsWith(prefix)) continue;
    const file = path.resolve(root, '.' + decodeURIComponent(pathname.slice(prefix.length - 1)));
    if (!file.startsWith(path.resolve(root) + path.sep)) return null;
    try { return { body: readFileSync(file), type: TYPES[path.extname(file)] || 'application/octet-stream' }; } catch { return null; }
  }
  return null;
}

// Pages and folders, plus a reverse proxy of /tracker.js and /api/ to reftrack.
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
  const file = html ? { body: html, type: 'text/html; charset=utf-8' } : folderFile(url.pathname);
  if (!file) { res.writeHead(404); res.end('not found'); return; }
  res.writeHead(200, { 'content-type': file.type, 'cache-control': 'no-store' });
  res.end(file.body);
}

const listen = (server) => new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server.address().port)));

export async function closedPort() {
  const s = http.createServer();
  const port = await listen(s);
  await new Promise((r) => s.close(r));
  return port;
}

/**
 * Starts reftrack (with `env` added to its environment), the page servers and Chromium
 * before the file's tests; stops them after.
 */
export function setup({ env = {} } = {}) {
  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'reftrack-browser-'));
    db = path.join(dir, 'reftrack.db');
    reftrack = await startReftrack(env);
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
}

/** A fresh browser context with these Playwright options (viewport, permissions, …). */
export const newContext = (options) => browser.newContext(options);

// A fresh context (its own cookie jar, made with Playwright's `contextOptions`) whose page
// records page errors, console errors and tracker logs. visit() waits for the page's load
// and for `ready` to be true in it.
export async function open({ ready = () => window.reftrack, contextOptions } = {}) {
  const context = await browser.newContext(contextOptions);
  const p = await context.newPage();
  const errors = [], logs = [], consoleErrors = [];
  p.on('pageerror', (e) => errors.push(e));
  p.on('console', (m) => {
    if (m.text().startsWith('[reftrack]')) logs.push(m.text());
    if (m.type() === 'error') consoleErrors.push(m.text());
  });
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
    await p.waitForFunction(() => window.pageLoaded === true);
    await p.waitForFunction(ready);
  };
  return { context, page: p, errors, consoleErrors, logs, waitLog, visit };
}

export async function clickCookie(context, timeout = 10000) {
  const end = Date.now() + timeout;
  for (;;) {
    const c = (await context.cookies()).find((k) => k.name === 'tracker_click_id');
    if (c) return c;
    if (Date.now() > end) throw new Error('no tracker_click_id cookie');
    await new Promise((r) => setTimeout(r, 50));
  }
}

export const cookieNamed = async (context, name) => (await context.cookies()).filter((c) => c.name === name);


// ---------------------------------------------------------------------------------------
// Pages of the product (the partner portal and the owner's dashboard)

const SHOTS = path.join(repoRoot, 'target', 'screenshots');

/**
 * A browser context of its own, with clipboard access. `problems()` lists what went
 * wrong on its pages: console errors, page errors, failed requests, and error pages the
 * test did not declare with `expecting(status, action)`. Chromium logs every 4xx page as
 * a console error too; those of declared error pages are not problems.
 */
export async function browse() {
  const context = await newContext({ viewport: { width: 1280, height: 900 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: api });
  const page = await context.newPage();
  const errors = [];
  const errorPages = [];
  const declared = new Set();
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('requestfailed', (r) => errors.push(`request failed: ${r.url()} (${r.failure()?.errorText})`));
  page.on('response', (r) => {
    if (r.status() < 400) return;
    if (r.request().isNavigationRequest()) errorPages.push(r.status());
    else errors.push(`${r.status()} for ${r.url()}`);
  });
  const expecting = async (status, action) => { declared.add(status); return action(); };
  const problems = () => [
    ...errorPages.filter((s) => !declared.has(s)).map((s) => `undeclared error page ${s}`),
    ...errors.filter((text) => {
      const m = text.match(/^Failed to load resource: the server responded with a status of (\d+)/);
      return !(m && declared.has(Number(m[1])) && errorPages.includes(Number(m[1])));
    }),
  ];
  return { context, page, problems, expecting };
}

/** Screenshots of the page at 1280 and 375 px; at 375 nothing may stick out sideways. */
export async function shoot(page, name) {
  mkdirSync(SHOTS, { recursive: true });
  for (const width of [1280, 375]) {
    await page.setViewportSize({ width, height: width === 375 ? 812 : 900 });
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => r())));
    if (width === 375) {
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      // What sticks out, named for the failure message.
      const wide = overflow <= 0 ? [] : await page.evaluate(() => [...document.querySelectorAll('body *')]
        .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1)
        .slice(0, 5)
        .map((e) => `${e.tagName.toLowerCase()}${e.id ? '#' + e.id : ''}${e.className ? '.' + String(e.className).split(' ').join('.') : ''}`));
      assert.ok(overflow <= 0, `${name} scrolls sideways at 375 px by ${overflow} px: ${wide.join(', ')}`);
    }
    await page.screenshot({ path: path.join(SHOTS, `${name}-${width}.png`), fullPage: true });
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}

/** Posts to a tracking endpoint; asserts a 200 and returns the JSON answer. */
export async function track(kind, body, token) {
  const headers = { 'content-type': 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  const res = await fetch(`${api}/api/v1/track/${kind}`, { method: 'POST', headers, body: JSON.stringify(body) });
  const json = await res.json();
  assert.equal(res.status, 200, `${kind}: ${JSON.stringify(json)}`);
  return json;
}
