// Headless Chromium tests of the partner portal (/partner/…) served by the real reftrack
// binary: an invited partner and an applicant go through the pages as a person would.
// Every page is photographed at desktop (1280 px) and phone (375 px) width into
// target/screenshots/, must not scroll sideways at 375 px, and no page may log a console
// error (a CSP violation is one).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setup, api, admin, browse, shoot, track, BROWSER_UA } from './harness.mjs';

setup();

const PASSWORD = 'correct horse battery';

/** A program of a new workspace, with its API token. */
async function program(fields) {
  const ws = await admin('POST', '/workspaces', { name: 'Portal shop' });
  return admin('POST', '/programs', {
    workspace_id: ws.id,
    commission: { type: 'percentage', percent: 30 },
    ...fields,
  });
}

test('an invited partner signs in, shares a link and sees its click and sale', async () => {
  const shop = 'https://shop.example';
  const prog = await program({ name: 'Acme Partners', commission_hold_days: 30, allowed_origins: [shop], destination_url: `${shop}/` });
  const partner = await admin('POST', '/partners', { name: 'Alice Example', code: 'alice-b', email: 'alice@browser.test' });
  await admin('POST', `/programs/${prog.id}/partners`, { partner_id: partner.id, status: 'approved' });
  const invite = await admin('POST', `/partners/${partner.id}/invite`);
  assert.ok(invite.invite_url.startsWith(`${api}/partner/invite?token=rti_`), invite.invite_url);

  const { context, page, problems, expecting } = await browse();

  // Sign-in page, empty.
  await page.goto(`${api}/partner/login`);
  await shoot(page, 'login');
  // Its forgotten-password link: this server mails nothing, so the page says whom to ask.
  await Promise.all([page.waitForURL(/\/partner\/reset$/), page.getByRole('link', { name: 'Set a new one' }).click()]);
  assert.match(await page.locator('main').textContent(), /Ask the program for a new invite link/);
  await shoot(page, 'reset');

  // The invite: a mismatched repeat stays on the page with the error beside the field.
  await page.goto(invite.invite_url);
  await shoot(page, 'invite');
  await page.getByLabel('New password').fill(PASSWORD);
  await page.getByLabel('Repeat the password').fill('something else');
  await expecting(400, () => Promise.all([page.waitForURL(/\/partner\/invite$/), page.getByRole('button', { name: 'Set password and sign in' }).click()]));
  assert.equal(await page.locator('#f-confirm-error').textContent(), 'The two passwords are not the same');
  await shoot(page, 'invite-error');
  await page.getByLabel('New password').fill(PASSWORD);
  await page.getByLabel('Repeat the password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Set password and sign in' }).click();
  await page.waitForURL(/\/partner\?done=welcome$/);
  assert.match(await page.locator('.notice').textContent(), /password is set/);
  const cookie = (await context.cookies()).find((c) => c.name === 'rt_partner');
  assert.ok(cookie.httpOnly && cookie.sameSite === 'Lax' && cookie.path === '/partner', JSON.stringify(cookie));

  // Sign out and in again with the keyboard.
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForURL(/\/partner\/login\?signed_out=1$/);
  await page.goto(`${api}/partner/programs/${prog.id}/links`);
  await page.waitForURL(/\/partner\/login\?next=/);
  await page.getByLabel('Email').fill('alice@browser.test');
  await page.getByLabel('Password').fill('wrong password');
  await expecting(401, () => Promise.all([page.waitForURL(/\/partner\/login$/), page.getByLabel('Password').press('Enter')]));
  assert.equal(await page.locator('#f-password-error').textContent(), 'Invalid email or password');
  await shoot(page, 'login-error');
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByLabel('Password').press('Enter');
  await page.waitForURL(new RegExp(`/partner/programs/${prog.id}/links$`));

  // A link of its own: the program has a destination, so the link to share is the
  // redirect link, which works anywhere; copied with the button.
  await page.getByLabel('Short link').fill('alice-spring');
  await page.getByRole('button', { name: 'Create link' }).click();
  await page.waitForURL(/done=created$/);
  const shareUrl = `${api}/r/alice-spring`;
  const card = page.locator('.link-card', { hasText: 'alice-spring' });
  assert.equal(await card.getByLabel('Link to share').inputValue(), shareUrl);
  await card.getByRole('button', { name: 'Copy' }).first().click();
  await card.locator('.copy.copied').waitFor();
  const copied = await page.evaluate(() => navigator.clipboard.readText());
  assert.equal(copied, shareUrl);
  // Below it, the site's address for pages that carry the tracker, copied with the keyboard.
  const onSite = card.getByLabel("Or, on the program's own site, where its tracker runs");
  assert.equal(await onSite.inputValue(), `${shop}/?aff=alice-spring`);
  await onSite.focus();
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement.getAttribute('data-copy')), await onSite.getAttribute('id'));
  await page.keyboard.press('Enter');
  await page.waitForFunction((want) => navigator.clipboard.readText().then((t) => t === want), `${shop}/?aff=alice-spring`);
  // A coupon code the owner gives the link shows on its card.
  const links = await admin('GET', `/links?program_id=${prog.id}`);
  const spring = links.data.find((l) => l.short_link === 'alice-spring');
  await admin('POST', `/links/${spring.id}/coupons`, { code: 'SPRING10' });
  await page.reload();
  assert.match(await card.locator('.coupons').textContent(), /Coupon code: SPRING10\s+Sales with this code count as yours/);
  await shoot(page, 'links');

  // A visitor follows the copied link and buys: $50.00 earns 30 %, $15.00, pending 30 days.
  const visit = await fetch(copied, { redirect: 'manual', headers: { 'user-agent': BROWSER_UA } });
  assert.equal(visit.status, 302);
  const landing = new URL(visit.headers.get('location'));
  assert.equal(`${landing.origin}${landing.pathname}`, `${shop}/`);
  assert.equal(landing.searchParams.get('aff'), 'alice-b');
  const clickId = landing.searchParams.get('rt_click');
  assert.match(clickId, /^cust_/);
  await track('lead', { click_id: clickId, customer_key: 'cust-1' }, prog.api_token);
  await track('sale', { transaction_id: 'txn-browser-1', amount_cents: 5000, currency: 'usd', customer_key: 'cust-1' }, prog.api_token);

  // The overview: earnings, the chart and its table.
  await page.getByRole('link', { name: 'Overview' }).first().click();
  await page.waitForURL(/\/partner(\?.*)?$/);
  const balances = page.locator('.balances');
  assert.equal(await balances.locator('.balance', { hasText: 'Pending' }).locator('dd').textContent(), '$15.00');
  assert.equal(await balances.locator('.balance', { hasText: 'Approved' }).locator('dd').textContent(), '$0.00');
  const totals = {};
  for (const key of ['clicks', 'leads', 'sales', 'earnings']) {
    totals[key] = await page.locator(`.chart-${key} .chart-total`).textContent();
  }
  assert.deepEqual(totals, { clicks: '1', leads: '1', sales: '1', earnings: '$15.00' });
  assert.match(await page.locator('.chart-clicks svg').getAttribute('aria-label'), /^Clicks: 1 in total; highest 1/);
  assert.equal(await page.locator('.chart-sales svg rect').count(), 1);
  // The program's terms, and the link to share with its copy button, as on the links page.
  const terms = page.locator('main li');
  assert.equal(await terms.filter({ hasText: 'You earn' }).textContent(), 'You earn 30\u00a0% of each sale.');
  assert.equal(await terms.filter({ hasText: 'payable' }).first().textContent(), 'Commissions become payable 30 days after the sale.');
  assert.equal(await page.getByLabel('Link to share').inputValue(), shareUrl);
  await page.locator('button[data-copy="share-1"]').click();
  await page.waitForFunction((want) => navigator.clipboard.readText().then((t) => t === want), shareUrl);
  await page.getByText('The figures as a table').click();
  await shoot(page, 'overview');
  await page.getByRole('link', { name: '7 days' }).click();
  await page.waitForURL(/period=7d/);
  assert.equal(await page.locator('.chart-sales svg rect').count(), 1);
  // A custom range with the end before the start: the error beside the dates.
  await page.getByLabel('From', { exact: true }).fill('2026-02-10');
  await page.getByLabel('To', { exact: true }).fill('2026-02-01');
  await page.getByRole('button', { name: 'Show' }).click();
  await page.waitForURL(/from=2026-02-10/);
  assert.match(await page.locator('#range-error').textContent(), /must not be after/);

  // Commissions: the sale, pending; the CSV downloads with the cookie.
  await page.goto(`${api}/partner/programs/${prog.id}/commissions`);
  const row = page.locator('table.data tbody tr', { hasText: 'txn-browser-1' });
  assert.equal(await row.locator('td.num').textContent(), '$15.00');
  assert.equal(await row.locator('.badge').textContent(), 'pending');
  await shoot(page, 'commissions');
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Download CSV' }).click()]);
  assert.equal(download.suggestedFilename(), `program-${prog.id}-my-commissions.csv`);

  await page.goto(`${api}/partner/programs/${prog.id}/payouts`);
  await shoot(page, 'payouts');

  // Settings: an error beside the field, then saved.
  await page.goto(`${api}/partner/settings`);
  await page.getByLabel('Payout method').selectOption('paypal');
  await page.getByLabel('Payout email').fill('not an email');
  await expecting(400, () => Promise.all([page.waitForURL(/\/partner\/settings$/), page.getByRole('button', { name: 'Save details' }).click()]));
  assert.equal(await page.locator('#f-payout_email-error').textContent(), 'Payout email must be an email address');
  await shoot(page, 'settings-error');
  await page.getByLabel('Payout email').fill('pay@browser.test');
  // Where the money goes changes only with the partner's password.
  await expecting(403, () => Promise.all([page.waitForURL(/\/partner\/settings$/), page.getByRole('button', { name: 'Save details' }).click()]));
  assert.equal(await page.locator('#f-password-error').textContent(), 'Enter your password to change where your payouts go');
  await page.getByLabel('Your password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Save details' }).click();
  await page.waitForURL(/done=profile$/);
  await shoot(page, 'settings');

  // Keyboard: the first Tab reaches the skip link, which moves to the content.
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement.textContent), 'Skip to content');

  // Error pages are pages.
  await expecting(404, () => page.goto(`${api}/partner/programs/999999/links`));
  assert.equal(await page.locator('h1').textContent(), 'Page not found');
  await shoot(page, 'not-found');

  assert.deepEqual(problems(), []);
  await context.close();
});

test('an applicant applies, is approved by the owner and then sees its links', async () => {
  const prog = await program({ name: 'Beta Program', applications_open: true });
  const closed = await program({ name: 'Closed Program' });
  const { context, page, problems, expecting } = await browse();

  // A program that takes no applications: the 404 page says so.
  await expecting(404, () => page.goto(`${api}/partner/apply/${closed.id}`));
  assert.equal(await page.locator('h1').textContent(), 'Page not found');
  assert.match(await page.locator('main').textContent(), /This program does not exist or is not taking applications right now\./);
  await shoot(page, 'apply-closed');

  await page.goto(`${api}/partner/apply/${prog.id}`);
  assert.equal(await page.locator('main li').first().textContent(), 'You earn 30\u00a0% of each sale.');
  await shoot(page, 'apply');
  await page.getByLabel('Your name').fill('Bea Applicant');
  await page.getByLabel('Email').fill('bea@browser.test');
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByLabel('Website').fill('https://bea.example');
  await page.getByLabel('Message to the program').fill('I write about tools.');
  await page.getByRole('button', { name: 'Apply' }).click();
  await page.waitForURL(new RegExp(`/partner\\?program=${prog.id}&done=applied$`));
  assert.match(await page.locator('.standing').textContent(), /pending/);
  await shoot(page, 'overview-pending');

  const pending = await admin('GET', `/programs/${prog.id}/partners?status=pending`);
  assert.equal(pending.data.length, 1);
  assert.equal(pending.data[0].email, 'bea@browser.test');
  await admin('PATCH', `/programs/${prog.id}/partners/${pending.data[0].partner_id}`, { status: 'approved' });

  await page.reload();
  // Approved: no standing left to explain, only that payouts need a payout email.
  assert.equal(await page.locator('.standing:not(.no-payout-email)').count(), 0);
  assert.match(await page.locator('.no-payout-email').textContent(), /You have no payout email/);
  await page.getByRole('link', { name: 'Links' }).click();
  await page.waitForURL(/\/links$/);
  assert.match(await page.locator('main').textContent(), /no links in this program yet/);
  // No site origin: the page explains the parameter.
  assert.match(await page.locator('main').textContent(), /carries its tracker/);
  await page.getByRole('button', { name: 'Create link' }).click();
  await page.waitForURL(/done=created$/);
  const share = await page.locator('input.share-text').first().inputValue();
  assert.match(share, /^\?aff=beaapplicant-[0-9a-f]{6}-[0-9a-f]{6}$/);

  assert.deepEqual(problems(), []);
  await context.close();
});
