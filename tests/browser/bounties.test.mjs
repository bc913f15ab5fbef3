// Headless Chromium tests of bounties: an owner creates one on the Bounties page (a wrong
// goal is marked beside its field first), sees who earned it, changes and archives it on
// its page; the partner's overview shows its progress towards each bounty and which it
// earned. Pages are photographed at 1280 and 375 px (app-bounties*.png, app-bounty*.png,
// portal-bounties*.png); no page may log a console error or fail a request.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setup, admin, browse, shoot, track, api } from './harness.mjs';

setup();

const PASSWORD = 'correct horse battery';

test('an owner sets a bounty, a partner earns it, the owner sees who and archives it', async () => {
  const ws = await admin('POST', '/workspaces', { name: 'Bounty Co' });
  const prog = await admin('POST', '/programs', { workspace_id: ws.id, name: 'Bounty Partners' });
  const partner = await admin('POST', '/partners', { name: 'Bo Bounty', code: 'bo', email: 'bo@bounty.test' });
  await admin('POST', `/programs/${prog.id}/partners`, { partner_id: partner.id });
  await admin('POST', '/links', { program_id: prog.id, partner_id: partner.id, short_link: 'bo' });
  const owner = await admin('POST', '/users', { email: 'owner@bounty.test', password: PASSWORD, name: 'Ola Owner' });
  await admin('POST', `/workspaces/${ws.id}/members`, { user_id: owner.id, role: 'owner' });

  const { page, problems, expecting } = await browse();
  await page.goto(`${api}/app/login`);
  await page.getByLabel('Email').fill('owner@bounty.test');
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(/\/app/);
  await page.goto(`${api}/app/programs/${prog.id}/partners`);
  await Promise.all([page.waitForURL(/\/bounties$/), page.getByRole('link', { name: 'Bounties' }).click()]);
  await shoot(page, 'app-bounties-empty');

  await page.getByLabel('Name').fill('Two sales');
  await page.getByLabel('What it counts').selectOption('sales');
  await page.getByLabel('Goal').fill('two');
  await page.getByLabel('Reward').fill('50.00');
  await expecting(400, () => Promise.all([page.waitForURL(/\/bounties$/), page.getByRole('button', { name: 'Create bounty' }).click()]));
  assert.match(await page.locator('#f-threshold-error').textContent(), /whole number/);
  assert.equal(await page.getByLabel('Reward').inputValue(), '50.00', 'what was typed stays');
  await shoot(page, 'app-bounties-error');
  await page.getByLabel('Goal').fill('2');
  await Promise.all([page.waitForURL(/done=bounty-created/), page.getByRole('button', { name: 'Create bounty' }).click()]);
  const [bounty] = (await admin('GET', `/programs/${prog.id}/bounties`)).data;
  assert.equal(bounty.threshold, 2);
  assert.equal(bounty.amount_cents, 5000);
  assert.match(await page.locator(`[data-bounty="${bounty.id}"]`).textContent(), /Reach 2 sales to earn \$50\.00/);

  // Two sales through the partner's link earn it.
  for (const key of ['b1', 'b2']) {
    const click = await track('click', { affiliate_url: 'https://shop.example/?aff=bo' });
    await track('lead', { click_id: click.click_id, customer_key: key }, prog.api_token);
    await track('sale', { transaction_id: `t-${key}`, amount_cents: 10000, customer_key: key }, prog.api_token);
  }
  await page.goto(`${api}/app/programs/${prog.id}/bounties`);
  assert.match(await page.locator(`[data-bounty="${bounty.id}"]`).textContent(), /Earned by Bo Bounty/);
  await shoot(page, 'app-bounties');

  // The partner's overview: the bounty, earned, at its goal.
  const invite = await admin('POST', `/partners/${partner.id}/invite`);
  const portal = await browse();
  await portal.page.goto(invite.invite_url);
  await portal.page.getByLabel('New password').fill(PASSWORD);
  await portal.page.getByLabel('Repeat the password').fill(PASSWORD);
  await portal.page.getByRole('button', { name: 'Set password and sign in' }).click();
  await portal.page.waitForURL(/\/partner\?done=welcome$/);
  const panel = await portal.page.locator('.bounties').textContent();
  assert.match(panel, /Two sales/);
  assert.match(panel, /earned/);
  assert.match(panel, /2 of 2 sales/);
  await shoot(portal.page, 'portal-bounties');
  assert.deepEqual(portal.problems(), []);

  // Its page: raise the goal with the keyboard, then archive it.
  await page.goto(`${api}/app/programs/${prog.id}/bounties/${bounty.id}`);
  await page.getByLabel('Goal').fill('5');
  await page.getByLabel('Goal').focus();
  await Promise.all([page.waitForURL(/done=bounty-saved/), page.keyboard.press('Enter')]);
  assert.equal((await admin('GET', `/bounties/${bounty.id}`)).threshold, 5);
  assert.match(await page.locator('main').textContent(), /Bo Bounty/);
  await shoot(page, 'app-bounty');
  await Promise.all([page.waitForURL(/done=bounty-archived/), page.getByRole('button', { name: 'Archive bounty' }).click()]);
  assert.equal((await admin('GET', `/bounties/${bounty.id}`)).archived, true);
  await shoot(page, 'app-bounty-archived');
  assert.deepEqual(problems(), []);
});
