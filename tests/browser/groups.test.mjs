// Headless Chromium tests of partner groups in the owner's dashboard and the portal: the
// partners page shows each partner's group and moves it to another with the keyboard,
// the partner's page says its group and gives it a bonus; a group's form sets its sale
// and lead rewards; the partner's overview states its group's reward with its modifiers
// in words, and its commissions page says what each commission is for. Pages are
// photographed at 1280 and 375 px (app-group*.png, app-bonus*.png, portal-groups-*.png);
// no page may log a console error or fail a request.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setup, admin, browse, shoot, track, api } from './harness.mjs';

setup();

const PASSWORD = 'correct horse battery';

test('an owner moves a partner to another group; the partner reads its reward', async () => {
  const ws = await admin('POST', '/workspaces', { name: 'Groups Co' });
  const prog = await admin('POST', '/programs', { workspace_id: ws.id, name: 'Groups Partners', commission: { type: 'percentage', percent: 20 } });
  const partner = await admin('POST', '/partners', { name: 'Gil Group', code: 'gil', email: 'gil@groups.test' });
  await admin('POST', `/programs/${prog.id}/partners`, { partner_id: partner.id });
  await admin('POST', '/links', { program_id: prog.id, partner_id: partner.id, short_link: 'gil' });
  const vip = await admin('POST', `/programs/${prog.id}/groups`, {
    name: 'VIP',
    rewards: { sale: { type: 'percentage', percent: 30, modifiers: [
      { conditions: [{ attribute: 'product_id', operator: 'eq', value: 'prod_enterprise' }], type: 'percentage', percent: 40 },
      { conditions: [{ attribute: 'partner_revenue_cents', operator: 'gte', value: 1000000 }], type: 'percentage', percent: 35 },
    ] } },
  });
  const owner = await admin('POST', '/users', { email: 'owner@groups.test', password: PASSWORD, name: 'Ona Owner' });
  await admin('POST', `/workspaces/${ws.id}/members`, { user_id: owner.id, role: 'owner' });

  const { page, problems } = await browse();
  await page.goto(`${api}/app/login`);
  await page.getByLabel('Email').fill('owner@groups.test');
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(/\/app/);
  await page.goto(`${api}/app/programs/${prog.id}/partners`);
  const select = page.getByLabel('Group of Gil Group');
  assert.equal(await select.locator('option:checked').textContent(), 'Default');
  await shoot(page, 'app-groups-partners');
  // With the keyboard: choose VIP, then the Move button.
  await select.focus();
  await select.selectOption(String(vip.id));
  await page.keyboard.press('Tab');
  await Promise.all([page.waitForURL(/done=group/), page.keyboard.press('Enter')]);
  assert.match(await page.locator('.notice').textContent(), /moved/);
  assert.equal(await page.getByLabel('Group of Gil Group').locator('option:checked').textContent(), 'VIP');
  const rows = (await admin('GET', `/programs/${prog.id}/partners`)).data;
  assert.equal(rows[0].group_id, vip.id);
  await page.goto(`${api}/app/programs/${prog.id}/partners/${partner.id}`);
  assert.match(await page.locator('.meta').first().textContent(), /group VIP/);
  await shoot(page, 'app-groups-partner');
  // The Groups page leads to each group's partners.
  await page.goto(`${api}/app/programs/${prog.id}/groups`);
  await Promise.all([page.waitForURL(/\/partners\?group=\d+$/), page.getByRole('link', { name: '1 partner of VIP' }).click()]);
  assert.match(await page.locator('[data-group-filter]').textContent(), /Only the partners of the group VIP/);
  assert.equal(await page.locator('tbody tr').count(), 1);
  await shoot(page, 'app-groups-filtered');
  assert.deepEqual(problems(), []);

  // The partner: a sale of the enterprise product earns the first modifier's 40 %.
  const click = await track('click', { affiliate_url: `https://shop.example/?aff=gil` });
  await track('lead', { click_id: click.click_id, customer_key: 'g1' }, prog.api_token);
  await track('sale', { transaction_id: 'g-1', amount_cents: 12000, customer_key: 'g1', product_id: 'prod_enterprise' }, prog.api_token);
  const invite = await admin('POST', `/partners/${partner.id}/invite`);
  const portal = await browse();
  await portal.page.goto(invite.invite_url);
  await portal.page.getByLabel('New password').fill(PASSWORD);
  await portal.page.getByLabel('Repeat the password').fill(PASSWORD);
  await portal.page.getByRole('button', { name: 'Set password and sign in' }).click();
  await portal.page.waitForURL(/\/partner\?done=welcome$/);
  await portal.page.goto(`${api}/partner?program=${prog.id}`);
  const terms = await portal.page.locator('main').textContent();
  assert.match(terms, /You earn 30\u00a0% of each sale\./);
  assert.match(terms, /You earn 40% on product prod_enterprise\./);
  assert.match(terms, /You earn 35% once you have brought \$10,000\.00\./);
  await shoot(portal.page, 'portal-groups-overview');
  await portal.page.goto(`${api}/partner/programs/${prog.id}/commissions`);
  assert.match(await portal.page.locator('table').textContent(), /40% of \$120\.00 \(product is prod_enterprise\)/);
  await shoot(portal.page, 'portal-groups-commissions');
  assert.deepEqual(portal.problems(), []);
});

test('an owner creates a group and sets its reward with a modifier; a wrong value is marked beside its field', async () => {
  const ws = await admin('POST', '/workspaces', { name: 'Tiers Co' });
  const prog = await admin('POST', '/programs', { workspace_id: ws.id, name: 'Tier Partners', commission: { type: 'percentage', percent: 20 } });
  const owner = await admin('POST', '/users', { email: 'owner@tiers.test', password: PASSWORD, name: 'Tia Owner' });
  await admin('POST', `/workspaces/${ws.id}/members`, { user_id: owner.id, role: 'owner' });
  const { page, problems, expecting } = await browse();
  await page.goto(`${api}/app/login`);
  await page.getByLabel('Email').fill('owner@tiers.test');
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(/\/app/);
  await page.goto(`${api}/app/programs/${prog.id}/partners`);
  await Promise.all([page.waitForURL(/\/groups$/), page.getByRole('link', { name: 'Groups and their rewards' }).click()]);
  assert.match(await page.locator('[data-group]').first().textContent(), /20\u00a0?% of each sale|20% of each sale/);
  await shoot(page, 'app-groups');
  await page.getByLabel('Name').fill('Resellers');
  await Promise.all([page.waitForURL(/\/groups\/\d+\?done=group-created$/), page.getByRole('button', { name: 'Create group' }).click()]);
  await shoot(page, 'app-group');

  // 25 % of each sale, 35 % from the tenth sale: first typed wrong.
  await page.getByLabel('Percent or amount', { exact: true }).fill('25');
  await page.getByLabel('Modifier 1 pays').selectOption('percentage');
  await page.getByLabel('Modifier 1: percent or amount').fill('35');
  await page.getByLabel('Modifier 1 condition 1: what it reads').selectOption('partner_sales');
  await page.getByLabel('Modifier 1 condition 1: comparison').selectOption('gte');
  await page.getByLabel('Modifier 1 condition 1: value').fill('ten');
  await expecting(400, () => Promise.all([page.waitForURL(/\/groups\/\d+$/), page.getByRole('button', { name: 'Save group' }).click()]));
  assert.equal(await page.locator('#f-m0_c0_value-error').textContent(), 'Enter a whole number of sales');
  assert.equal(await page.getByLabel('Modifier 1: percent or amount').inputValue(), '35', 'what was typed stays');
  await shoot(page, 'app-group-error');
  // The service's own refusal, beside the field it names: a comparison the attribute does not take.
  await page.getByLabel('Modifier 1 condition 1: value').fill('10');
  await page.getByLabel('Modifier 1 condition 1: comparison').selectOption('in');
  await expecting(400, () => Promise.all([page.waitForURL(/\/groups\/\d+$/), page.getByRole('button', { name: 'Save group' }).click()]));
  assert.match(await page.locator('#f-m0_c0_operator-error').textContent(), /gte/);
  await page.getByLabel('Modifier 1 condition 1: comparison').selectOption('gte');
  await page.getByLabel(/first lead earns/).fill('2.00');
  await Promise.all([page.waitForURL(/done=group-saved$/), page.getByRole('button', { name: 'Save group' }).click()]);
  const groups = (await admin('GET', `/programs/${prog.id}/groups`)).data;
  const resellers = groups.find((g) => g.name === 'Resellers');
  assert.deepEqual(resellers.rewards.sale, {
    type: 'percentage', percent: 25, max_duration_months: null,
    modifiers: [{ conditions: [{ attribute: 'partner_sales', operator: 'gte', value: 10 }], type: 'percentage', percent: 35 }],
  });
  assert.deepEqual(resellers.rewards.lead, { type: 'flat', amount_cents: 200 });
  await page.goto(`${api}/app/programs/${prog.id}/groups`);
  assert.match(await page.locator(`[data-group="${resellers.id}"]`).textContent(), /35% after 10 sales/);
  assert.match(await page.locator(`[data-group="${resellers.id}"]`).textContent(), /\$2\.00 per signup/);
  // Deleted, as it has no partners.
  await page.goto(`${api}/app/programs/${prog.id}/groups/${resellers.id}`);
  await Promise.all([page.waitForURL(/done=group-deleted$/), page.getByRole('button', { name: 'Delete group' }).click()]);
  assert.equal((await admin('GET', `/programs/${prog.id}/groups`)).data.length, 1);
  assert.deepEqual(problems(), []);
});

test('an owner gives a partner a bonus from its page; a wrong amount is marked beside its field', async () => {
  const ws = await admin('POST', '/workspaces', { name: 'Bonus Co' });
  const prog = await admin('POST', '/programs', { workspace_id: ws.id, name: 'Bonus Partners' });
  const partner = await admin('POST', '/partners', { name: 'Bea Bonus', code: 'bea' });
  await admin('POST', `/programs/${prog.id}/partners`, { partner_id: partner.id, status: 'approved' });
  const owner = await admin('POST', '/users', { email: 'owner@bonus.test', password: PASSWORD, name: 'Bo Owner' });
  await admin('POST', `/workspaces/${ws.id}/members`, { user_id: owner.id, role: 'owner' });
  const { page, problems, expecting } = await browse();
  await page.goto(`${api}/app/login`);
  await page.getByLabel('Email').fill('owner@bonus.test');
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(/\/app/);
  await page.goto(`${api}/app/programs/${prog.id}/partners/${partner.id}`);
  await page.getByLabel('Amount').fill('lots');
  await page.getByLabel('Description').fill('Launch week');
  await expecting(400, () => Promise.all([page.waitForURL(/\/bonuses$/), page.getByRole('button', { name: 'Give bonus' }).click()]));
  assert.match(await page.locator('#f-amount-error').textContent(), /above 0/);
  assert.equal(await page.getByLabel('Description').inputValue(), 'Launch week', 'what was typed stays');
  await shoot(page, 'app-bonus-error');
  // With the keyboard: the amount, then Enter in the form.
  await page.getByLabel('Amount').fill('25.00');
  await page.getByLabel('Description').focus();
  await Promise.all([page.waitForURL(/done=bonus/), page.keyboard.press('Enter')]);
  assert.match(await page.locator('.notice').textContent(), /bonus is given/);
  await shoot(page, 'app-bonus');
  const rows = (await admin('GET', `/programs/${prog.id}/commissions`)).data;
  assert.equal(rows.length, 1);
  assert.equal(rows[0].kind, 'bonus');
  assert.equal(rows[0].status, 'approved');
  assert.equal(rows[0].amount_cents, 2500);
  await page.goto(`${api}/app/programs/${prog.id}/commissions`);
  assert.match(await page.locator('table').textContent(), /Bonus: Launch week/);
  await shoot(page, 'app-bonus-commissions');
  assert.deepEqual(problems(), []);
});
