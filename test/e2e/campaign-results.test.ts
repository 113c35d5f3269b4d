/** Journeys on a campaign's page: results by step (adding up to the campaign's totals), a message
 * previewed for one of its leads with fallbacks marked, and duplicating the campaign. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { closeDemoApp, closeDialogs, openDemoApp, screenshot } from './support/app.ts';
import type { RunningApp } from './support/app.ts';

let app: RunningApp;
let browser: Browser;
let page: Page & { errors: string[] };
const CAMPAIGN = 'Q4 outbound: Heads of Sales';

const num = (s: string): number => Number(s.replace(/[^\d]/g, ''));

async function openCampaign(name: string): Promise<void> {
  await page.locator('nav').getByRole('button', { name: /Campaigns/ }).click();
  await page.getByTestId('campaign-list').waitFor();
  await page.locator('[data-testid="campaign-list"] a.name', { hasText: name }).first().click();
  await expect.poll(() => page.getByTestId('campaign-name').innerText()).toBe(name);
}

beforeAll(async () => ({ app, browser, page } = await openDemoApp()), 240_000);

afterAll(() => closeDemoApp(app, browser));

describe('campaign page', () => {
  it('shows results per step that add up to the campaign totals', async () => {
    await openCampaign(CAMPAIGN);
    const table = page.getByTestId('step-results');
    await table.locator('tr[data-step="1"]').waitFor({ timeout: 15_000 });
    // Step 1 is the connection request: the demo's simulated days sent some.
    const requests = num(await table.locator('tr[data-step="1"] td[data-col="sent"]').innerText());
    expect(requests).toBeGreaterThan(0);
    await expect.poll(() => page.locator('[data-metric="requests"] .value').innerText(), { timeout: 15_000 }).not.toBe('…');
    const card = num(await page.locator('[data-metric="requests"] .value').innerText());
    expect(requests).toBe(card);
    const sentCells = await table.locator('tbody tr[data-step] td[data-col="sent"]').allInnerTexts();
    const sentTotal = sentCells.reduce((n, s) => n + num(s), 0);
    const messages = num(await page.locator('[data-metric="sent"] .value').innerText());
    // Profile visits are step actions too, so the steps send at least what the cards count.
    expect(sentTotal).toBeGreaterThanOrEqual(messages + card);
    const replies = (await table.locator('tbody tr[data-step] td[data-col="replies"]').allInnerTexts()).reduce((n, s) => n + num(s), 0);
    const unattributed = (await page.getByTestId('unattributed').count()) > 0 ? num(/(\d+) repl/.exec(await page.getByTestId('unattributed').innerText())?.[1] ?? '0') : 0;
    expect(replies + unattributed).toBe(num(await page.locator('[data-metric="replies"] .value').innerText()));
    await screenshot(page, 'campaign-results');
  }, 60_000);

  it('previews a message for a chosen lead, with merge fields filled', async () => {
    await page.getByRole('tab', { name: 'Preview' }).click();
    const preview = page.getByTestId('message-preview');
    await preview.getByTestId('preview-step').waitFor();
    const leadOption = preview.getByTestId('preview-lead').locator('option').first();
    await leadOption.waitFor({ state: 'attached', timeout: 15_000 });
    const leadLabel = await leadOption.innerText();
    const firstName = leadLabel.split(' ')[0] ?? '';
    await expect.poll(() => preview.getByTestId('preview-text').innerText(), { timeout: 15_000 }).toContain(`Hi ${firstName}`);
    expect(await preview.getByTestId('preview-text').innerText()).not.toContain('{{');

    // A lead of the list without a first name: the fallback is used and marked.
    await page.evaluate(async () => {
      const list = await window.outreach?.call('campaigns.getBasic', { search: 'Q4 outbound' });
      if (!list?.ok) throw new Error('no campaigns');
      const c = list.value.basicCampaigns[0];
      if (!c) throw new Error('no campaign');
      const r = await window.outreach?.call('campaigns.leads.create', { leadGroupId: c.leadGroupId, leads: [{ firstName: '', lastName: 'Nofirst', company: '', socialUrl: 'https://www.linkedin.com/in/nofirst-preview' }] });
      if (!r?.ok) throw new Error(r ? r.error.message : 'no bridge');
    });
    await preview.getByTestId('preview-lead-search').fill('Nofirst');
    await expect.poll(() => preview.getByTestId('preview-lead').locator('option').allInnerTexts(), { timeout: 15_000 }).toEqual(expect.arrayContaining([expect.stringContaining('Nofirst')]));
    await preview.getByTestId('preview-lead').selectOption({ label: 'Nofirst' });
    await expect.poll(() => preview.getByTestId('preview-text').innerText(), { timeout: 15_000 }).toContain('Hi there, I work with sales teams like yours');
    await expect.poll(() => preview.locator('mark[data-fallback]').count()).toBe(2);
    expect(await preview.getByTestId('preview-fallbacks').innerText()).toContain('this lead has no First name, Company');
    await screenshot(page, 'campaign-preview');
  }, 60_000);

  it('duplicates the campaign: a paused copy with the same steps', async () => {
    await page.getByRole('tab', { name: 'Sequence' }).click();
    await page.getByTestId('sequence-editor').locator('[data-step-id]').first().waitFor({ timeout: 15_000 });
    const original = await page.getByTestId('sequence-editor').locator('[data-step-id]').count();
    expect(original).toBeGreaterThan(1);
    await page.getByTestId('duplicate-campaign').click();
    const dialog = page.getByRole('dialog', { name: 'Duplicate campaign' });
    await expect(dialog.getByLabel('Name of the copy').inputValue()).resolves.toBe(`${CAMPAIGN} (copy)`);
    await dialog.getByTestId('duplicate-confirm').click();
    await expect.poll(() => page.getByTestId('campaign-name').innerText(), { timeout: 15_000 }).toBe(`${CAMPAIGN} (copy)`);
    await expect.poll(() => page.locator('.campaign-header .run-pill').innerText()).toBe('Paused');
    await page.getByRole('tab', { name: 'Sequence' }).click();
    await expect.poll(() => page.getByTestId('sequence-editor').locator('[data-step-id]').count(), { timeout: 15_000 }).toBe(original);
    await screenshot(page, 'campaign-duplicated');
    await closeDialogs(page);
    expect(page.errors).toEqual([]);
  }, 60_000);

  it('enrolls two leads in a new campaign and takes it back with Undo', async () => {
    await page.locator('nav').getByRole('button', { name: /Leads/ }).click();
    // Open deals: Won and Lost leads are left out of an enrollment by default.
    const rows = page.locator('.table [data-lead-id]').filter({ hasNotText: /Lost|Won/ });
    await rows.nth(5).waitFor({ timeout: 15_000 });
    const ids = [(await rows.nth(4).getAttribute('data-lead-id')) ?? '', (await rows.nth(5).getAttribute('data-lead-id')) ?? ''];
    for (const id of ids) await page.locator(`.table [data-lead-id="${id}"] input[type="checkbox"]`).check();
    await page.getByRole('button', { name: 'Enroll in campaign…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Enroll in a campaign' });
    await dialog.getByLabel('Destination campaign').selectOption({ label: 'New campaign…' });
    await dialog.getByPlaceholder('Q3 founders').fill('Undo journey');
    const enroll = dialog.getByRole('button', { name: /^Enroll \d+ lead/ });
    await enroll.waitFor({ timeout: 15_000 });
    const enrolled = Number(/Enroll (\d+)/.exec(await enroll.innerText())?.[1] ?? '0');
    expect(enrolled).toBeGreaterThan(0);
    await enroll.click();
    await dialog.waitFor({ state: 'detached' });
    const toast = (text: string | RegExp) => page.locator('.toast').filter({ hasText: text });
    await toast(/in Undo journey\. The campaign was not started\./).getByRole('button', { name: 'Undo' }).click();
    await toast(new RegExp(`Took ${enrolled} leads? back out of Undo journey\\.`)).waitFor({ timeout: 15_000 });
    const state = await page.evaluate(async () => {
      const list = await window.outreach?.call('campaigns.getBasic', { search: 'Undo journey' });
      if (!list?.ok) throw new Error('no campaigns');
      const c = list.value.basicCampaigns[0];
      if (!c) throw new Error('the campaign is missing');
      const metrics = await window.outreach?.call('campaigns.getMetrics', { campaignIds: [c.id] });
      const leads = await window.outreach?.call('campaigns.leads.count', { campaignId: c.id });
      if (!metrics?.ok || !leads?.ok) throw new Error('no answer');
      return { enrolled: metrics.value.metrics[0]?.enrolled, leads: leads.value.count };
    });
    // Nothing had been sent (the campaign never ran): the enrollments are gone and the leads are off its list.
    expect(state).toEqual({ enrolled: 0, leads: 0 });
    expect(page.errors).toEqual([]);
  }, 90_000);

  it('hides a leads column with the column chooser, and it stays hidden after a reload', async () => {
    await page.locator('nav').getByRole('button', { name: /Leads/ }).click();
    const headers = () => page.locator('.table .thead [role="columnheader"]').allInnerTexts();
    await expect.poll(headers).toContain('Score');
    // Keyboard only: focus the button, open it, tab to Score and toggle it with Space.
    await page.getByTestId('column-chooser').focus();
    await page.keyboard.press('Enter');
    const menu = page.getByRole('group', { name: 'Columns to show' });
    await menu.waitFor();
    const score = menu.getByRole('checkbox', { name: 'Score' });
    for (let i = 0; i < 8 && !(await score.evaluate((el) => el === document.activeElement)); i++) await page.keyboard.press('Tab');
    await page.keyboard.press('Space');
    await expect.poll(headers).not.toContain('Score');
    await page.keyboard.press('Escape');
    await menu.waitFor({ state: 'detached' });
    await expect(page.getByTestId('column-chooser').innerText()).resolves.toBe('Columns (8 of 9)');
    await screenshot(page, 'leads-column-hidden');

    await page.reload();
    await page.locator('[data-lead-id]').first().waitFor({ timeout: 60_000 });
    await expect.poll(headers).toContain('Company');
    expect(await headers()).not.toContain('Score');
    await page.getByTestId('column-chooser').click();
    await page.getByRole('group', { name: 'Columns to show' }).getByRole('button', { name: 'Show all' }).click();
    await expect.poll(headers).toContain('Score');
  }, 120_000);

  it('changes the sender of a running lead and takes it back with Undo', async () => {
    await page.locator('nav').getByRole('button', { name: /Leads/ }).click();
    const filter = page.locator('.toolbar, body').getByRole('combobox', { name: 'Campaign' }).first();
    await filter.selectOption({ label: 'Event follow-up: SaaS Summit' });
    // A running lead of the campaign with an assigned sender, found through the same bridge.
    const found = await page.evaluate(async () => {
      const list = await window.outreach?.call('campaigns.getBasic', { search: 'Event follow-up' });
      const c = list?.ok ? list.value.basicCampaigns[0] : undefined;
      if (!c) throw new Error('no campaign');
      const r = await window.outreach?.call('campaigns.leads.search', { campaignId: c.id, limit: 200 });
      if (!r?.ok) throw new Error('no leads');
      const l = r.value.leads.find((x) => x.enrollmentState === 'IN_PROGRESS' && x.leadSequence?.sdrProfile);
      const p = l?.leadSequence?.sdrProfile;
      return l && p ? { id: l.id, sender: `${p.firstName} ${p.lastName}` } : null;
    });
    expect(found).not.toBeNull();
    const id = found?.id ?? '';
    const before = found?.sender ?? '';
    const other = before === 'Mia Schneider' ? 'Kenji Watanabe' : 'Mia Schneider';
    const row = page.locator(`.table [data-lead-id="${id}"]`);
    for (let i = 0; i < 30 && (await row.count()) === 0; i++) {
      await page.getByTestId('leads-viewport').evaluate((el) => el.scrollBy(0, 400));
      // Let the virtualized table draw the rows scrolled into view.
      await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => resolve(null)))));
    }
    await row.waitFor({ timeout: 15_000 });
    await row.locator('input[type="checkbox"]').check();
    await page.getByRole('button', { name: 'Change sender…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Change sender' });
    const target = dialog.getByLabel('New sender');
    await target.locator('option', { hasText: other }).waitFor({ state: 'attached', timeout: 15_000 });
    await target.selectOption({ label: other });
    await dialog.getByRole('button', { name: 'Move 1 lead' }).click();
    await dialog.waitFor({ state: 'detached' });
    await expect.poll(() => row.innerText(), { timeout: 15_000 }).toContain(other);
    await page.locator('.toast').filter({ hasText: 'Moved 1 lead to the new sender.' }).getByRole('button', { name: 'Undo' }).click();
    await page.locator('.toast').filter({ hasText: 'Moved 1 lead back to their previous sender.' }).waitFor({ timeout: 15_000 });
    await expect.poll(() => row.innerText(), { timeout: 15_000 }).toContain(before);
    await filter.selectOption({ label: 'All campaigns' });
    expect(page.errors).toEqual([]);
  }, 90_000);
});
