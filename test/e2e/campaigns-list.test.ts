/** Journeys on the campaign list (search, every sort of the specification, paging), the start
 * refusal with its readiness problems listed, and the lead-picking settings. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Locator, Page } from 'playwright-core';
import { closeDemoApp, openDemoApp, screenshot } from './support/app.ts';
import type { RunningApp } from './support/app.ts';

let app: RunningApp;
let browser: Browser;
let page: Page & { errors: string[] };

const names = () => page.locator('[data-testid="campaign-list"] tbody tr a.name').allInnerTexts();
const countText = () => page.getByTestId('campaigns-count').innerText();

async function has(locator: Locator, text: string | RegExp): Promise<void> {
  await locator.filter({ hasText: text }).first().waitFor({ timeout: 15_000 });
}

beforeAll(async () => {
  ({ app, browser, page } = await openDemoApp());
  // 26 more campaigns (the demo has 2), created through the same bridge the screens use.
  await page.evaluate(async () => {
    for (let i = 1; i <= 26; i++) {
      const r = await window.outreach?.call('campaigns.create', { name: `List test ${String(i).padStart(2, '0')}` });
      if (!r?.ok) throw new Error(r ? r.error.message : 'no bridge');
    }
  });
  await page.locator('nav').getByRole('button', { name: /Campaigns/ }).click();
  await page.getByTestId('campaign-list').waitFor();
}, 240_000);

afterAll(() => closeDemoApp(app, browser));

describe('campaign list', () => {
  it('pages through 28 campaigns, newest first', async () => {
    await expect.poll(countText).toBe('28 campaigns');
    await has(page.getByTestId('campaigns-page'), 'Page 1 of 2');
    await expect.poll(async () => (await names()).length).toBe(25);
    expect((await names())[0]).toBe('List test 26');
    await screenshot(page, 'campaigns-list');
    await page.getByRole('button', { name: 'Next page' }).click();
    await has(page.getByTestId('campaigns-page'), 'Page 2 of 2');
    await expect.poll(async () => (await names()).length).toBe(3);
    expect(await names()).toContain('Q4 outbound: Heads of Sales');
    await expect(page.getByRole('button', { name: 'Next page' }).isDisabled()).resolves.toBe(true);
    await page.getByRole('button', { name: 'Previous page' }).click();
    await has(page.getByTestId('campaigns-page'), 'Page 1 of 2');
  }, 60_000);

  it('searches by name', async () => {
    await page.getByLabel('Search campaigns').fill('list test 1');
    await expect.poll(countText).toBe('10 campaigns');
    const found = await names();
    expect(found).toHaveLength(10);
    expect(found.every((n) => /^List test 1\d$/.test(n))).toBe(true);
    await page.getByLabel('Search campaigns').fill('no such campaign');
    await has(page.locator('.list-empty'), 'No campaign is named like “no such campaign”.');
    await page.getByLabel('Search campaigns').fill('');
    await expect.poll(countText).toBe('28 campaigns');
  }, 30_000);

  it('sorts by each order of the specification, both ways', async () => {
    const sortBy = page.getByLabel('Sort campaigns by');
    await sortBy.selectOption('name');
    await expect.poll(async () => (await names())[0]).toBe('Event follow-up: SaaS Summit');
    const asc = await names();
    expect(asc).toEqual([...asc].sort((a, b) => a.toLowerCase().localeCompare(b.toLowerCase())));
    await page.getByRole('button', { name: 'Sort order' }).click();
    await expect.poll(async () => (await names())[0]).toBe('Q4 outbound: Heads of Sales');

    // Campaigns with a sequence first: the two demo campaigns.
    await sortBy.selectOption('hasSequence');
    await expect.poll(async () => (await names()).slice(0, 2).sort()).toEqual(['Event follow-up: SaaS Summit', 'Q4 outbound: Heads of Sales']);

    await sortBy.selectOption('createdAt');
    await expect.poll(async () => (await names())[0]).toBe('List test 26');
    await page.getByRole('button', { name: 'Sort order' }).click();
    // Oldest first: the demo creates its two campaigns at the same simulated instant, so either may lead.
    await expect.poll(async () => (await names()).slice(0, 2).sort()).toEqual(['Event follow-up: SaaS Summit', 'Q4 outbound: Heads of Sales']);

    // Changing a campaign makes it the most recently updated.
    await sortBy.selectOption('updatedAt');
    await page.evaluate(async () => {
      const list = await window.outreach?.call('campaigns.getBasic', { search: 'List test 05' });
      const id = list?.ok ? list.value.basicCampaigns[0]?.id : undefined;
      if (!id) throw new Error('List test 05 not found');
      await window.outreach?.call('campaigns.updateSettings', { campaignId: id, preferNewLeads: true });
    });
    await expect.poll(async () => (await names())[0]).toBe('List test 05');

    // Reply rate and meetings: nothing sent yet anywhere, so ties fall back to newest first; the
    // order is the server's and the list shows every campaign.
    for (const by of ['replyRate', 'meetingsBooked'] as const) {
      await sortBy.selectOption(by);
      await expect.poll(async () => (await names()).length).toBe(25);
      await has(page.getByTestId('campaigns-page'), 'Page 1 of 2');
    }
    expect(page.errors).toEqual([]);
  }, 60_000);
});

describe('starting and lead picking', () => {
  it('lists the readiness problems before starting, and the refusal after', async () => {
    await page.getByLabel('Sort campaigns by').selectOption('name');
    await page.getByRole('link', { name: 'List test 01' }).click();
    await page.getByRole('button', { name: 'Start campaign…' }).click();
    const dialog = page.getByRole('dialog');
    await has(dialog.getByTestId('readiness-problems'), 'The campaign has no sender; add at least one.');
    await has(dialog.getByTestId('readiness-problems'), /The sequence has no step that reaches out/);
    await has(dialog, 'Starting needs an owner or admin and an active (or trialing) subscription of the workspace.');
    await dialog.getByRole('button', { name: 'Start and message people' }).click();
    await has(dialog.getByTestId('start-refusal'), 'Refused: the campaign is not ready to start. Fix the problems listed above first.');
    await screenshot(page, 'campaign-start-refused');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await page.locator('.campaign-header .run-pill.paused').waitFor();
  }, 30_000);

  it('saves lead picking: newest first and company relay with seniorities', async () => {
    await page.getByRole('tab', { name: 'Lead picking' }).click();
    const picking = page.getByTestId('lead-picking');
    await picking.getByLabel('Prefer new leads').check();
    await picking.getByLabel('Company relay').check();
    await picking.getByLabel('Max persons per company').fill('2');
    await picking.getByLabel('Add a seniority level').fill('vp');
    await picking.getByLabel('Add a seniority level').press('Enter');
    await picking.getByLabel('Add a seniority level').fill('director');
    await picking.getByRole('button', { name: 'Add', exact: true }).click();
    await picking.getByRole('button', { name: 'Save lead picking' }).click();
    await page.getByText('Lead picking saved.').waitFor();
    await screenshot(page, 'campaign-lead-picking');
    const saved = await page.evaluate(async () => {
      const list = await window.outreach?.call('campaigns.getBasic', { search: 'List test 01' });
      const id = list?.ok ? list.value.basicCampaigns[0]?.id : undefined;
      const c = id ? await window.outreach?.call('campaigns.get', { campaignId: id }) : undefined;
      return c?.ok ? c.value.settings : null;
    });
    expect(saved).toEqual({ preferNewLeads: true, companyRelay: { enabled: true, maxPersonsPerCompany: 2, seniorities: ['vp', 'director'] } });
    expect(page.errors).toEqual([]);
  }, 30_000);
});
