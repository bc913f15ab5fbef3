// Headless Chromium tests of two-factor sign-in on the real reftrack binary: a dashboard
// user and then a partner open their two-factor page, read the QR code back from the
// page's SVG (a screenshot of it decoded with jsQR) and check it holds the otpauth URL
// the page shows, compute a real code (otpauth), turn two-factor on (the recovery codes
// are shown), sign out, and sign in again with the password and then a code. Pages are
// photographed at 1280 and 375 px (target/screenshots/2fa-*.png); no page may log a
// console error or fail a request.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import jsQR from 'jsqr';
import { PNG } from 'pngjs';
import * as OTPAuth from 'otpauth';
import { setup, api, admin, browse, shoot } from './harness.mjs';

setup();

const PASSWORD = 'correct horse battery';

/** The text of the QR code drawn in `#qr`, read back from a screenshot of it. */
async function readQr(page) {
  const png = PNG.sync.read(await page.locator('#qr svg').screenshot());
  const found = jsQR(new Uint8ClampedArray(png.data), png.width, png.height);
  assert.ok(found, 'the QR code could not be read');
  return found.data;
}

/** The TOTP of `secret` as an authenticator app computes it. */
const totp = (secret) => new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret), digits: 6, period: 30, algorithm: 'SHA1' });

/** Waits until the next 30-second step, so that a fresh code is not the one used already. */
async function nextStep() {
  const left = 30000 - (Date.now() % 30000);
  await new Promise((r) => setTimeout(r, left + 300));
}

/** Signs in on `home`'s sign-in page with the password; stops at the code page or home. */
async function password(page, home, email) {
  await page.goto(`${api}${home}/login`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

async function enableAndSignIn({ home, email, shot }) {
  const { page, problems, expecting } = await browse();
  await password(page, home, email);
  await page.waitForURL((u) => !u.pathname.endsWith('/login'));

  await page.goto(`${api}${home}/two-factor`);
  await shoot(page, `${shot}-setup`);
  const secret = (await page.locator('#secret').textContent()).trim();
  const url = await page.locator('#otpauth').getAttribute('href');
  assert.equal(url, `otpauth://totp/Reftrack:${email}?secret=${secret}&issuer=Reftrack`);
  assert.equal(await readQr(page), url, 'the QR code holds the otpauth URL');

  // A wrong code is said beside the field.
  await page.getByLabel('Code from your app').fill('000000');
  await expecting(400, () => Promise.all([page.waitForURL(/two-factor\/enable$/), page.getByRole('button', { name: 'Turn two-factor on' }).click()]));
  assert.match(await page.locator('#f-code-error').textContent(), /not right/);
  await page.getByLabel('Code from your app').fill(totp(secret).generate());
  await page.getByRole('button', { name: 'Turn two-factor on' }).click();
  await page.locator('#recovery-codes').waitFor();
  assert.equal(await page.locator('#recovery-codes li').count(), 10);
  await shoot(page, `${shot}-recovery-codes`);

  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForURL(/\/login\?signed_out=1$/);

  // The password, then the code page (which does not carry the password).
  await password(page, home, email);
  await page.getByLabel('Code from your app').waitFor();
  assert.equal(await page.locator('input[name="password"]').count(), 0);
  await shoot(page, `${shot}-code`);
  await nextStep();
  await page.getByLabel('Code from your app').fill(totp(secret).generate());
  await page.getByRole('button', { name: 'Verify and sign in' }).click();
  await page.waitForURL((u) => !u.pathname.endsWith('/login'));
  await page.goto(`${api}${home}/two-factor`);
  assert.match(await page.locator('.lead').textContent(), /is on/);
  await shoot(page, `${shot}-on`);
  assert.deepEqual(problems(), []);
  await page.context().close();
}

test('a dashboard user turns two-factor on and signs in with a code', async () => {
  const ws = await admin('POST', '/workspaces', { name: 'Two-factor' });
  await admin('POST', '/programs', { workspace_id: ws.id, name: 'Secure Partners' });
  const user = await admin('POST', '/users', { email: 'tess@browser.test', password: PASSWORD });
  await admin('POST', `/workspaces/${ws.id}/members`, { user_id: user.id, role: 'owner' });
  await enableAndSignIn({ home: '/app', email: 'tess@browser.test', shot: '2fa-app' });
});

test('a partner turns two-factor on and signs in with a code', async () => {
  const partner = await admin('POST', '/partners', { name: 'Pat', code: 'pat2fa', email: 'pat@browser.test' });
  const invite = await admin('POST', `/partners/${partner.id}/invite`);
  const token = new URL(invite.invite_url).searchParams.get('token');
  const res = await fetch(`${api}/api/partner/auth/accept-invite`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ token, password: PASSWORD }),
  });
  assert.equal(res.status, 200);
  await enableAndSignIn({ home: '/partner', email: 'pat@browser.test', shot: '2fa-portal' });
});
