/** Details a demanding SDR notices in the demo: a CSV row repeating an earlier row of the file says
 * which row it repeats (in the preview and after the import); toasts of bulk work stay in a bounded
 * stack that never covers the table; the Sequence column shows whole campaign names at 1280 and
 * 1440 px; the campaign page says how many of its list's leads have not started and why, and shows
 * them. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { closeDemoApp, closeDialogs, openDemoApp, screenshot } from './support/app.ts';
import type { RunningApp } from './support/app.ts';

let app: RunningApp;
let browser: Browser;
let page: Page & { errors: string[] };

const rows = () => page.locator('.table [data-lead-id]');

beforeAll(async () => ({ app, browser, page } = await openDemoApp()), 240_000);

afterEach(() => closeDialogs(page));

afterAll(() => closeDemoApp(app, browser));

async function count(dialog: ReturnType<Page['getByRole']>, testId: string, key: string): Promise<number> {
  return Number((await dialog.getByTestId(testId).locator(`[data-count="${key}"] strong`).innerText()).replace(/\D/g, ''));
}

describe('details of the demo', () => {
  it('says "repeats row 2 of this file" for a row that repeats an earlier one, before and after the import', async () => {
    const csv = [
      'First Name,Last Name,Email,Company',
      'Rita,Repeat,rita@repeat.example,Repeat Ltd', // row 2
      'Sam,Single,sam@repeat.example,Repeat Ltd', // row 3
      'Rita,Repeat,RITA@repeat.example,Repeat Ltd', // row 4: row 2 again
    ].join('\n');
    const file = join(app.dataDir, 'repeats.csv');
    writeFileSync(file, csv);
    await page.getByRole('button', { name: 'Import CSV' }).click();
    const dialog = page.getByRole('dialog', { name: 'Import leads from CSV' });
    await dialog.getByLabel('Lead list').selectOption({ label: 'Demo prospects' });
    await dialog.getByLabel('CSV file').setInputFiles(file);
    const results = dialog.getByRole('table', { name: 'Row results' });
    const repeat = results.locator('tr[data-code="DUPLICATE_IN_FILE"]');

    await dialog.getByRole('button', { name: 'Preview (dry run)' }).click();
    await dialog.getByTestId('preview-totals').waitFor();
    await repeat.waitFor();
    expect(await count(dialog, 'preview-totals', 'created')).toBe(2);
    expect(await count(dialog, 'preview-totals', 'repeatedInFile')).toBe(1);
    expect(await count(dialog, 'preview-totals', 'unchanged')).toBe(0);
    await expect(repeat.locator('td').first().innerText()).resolves.toBe('4');
    await expect(repeat.innerText()).resolves.toContain('Repeats row 2 of this file');
    await screenshot(page, 'details-01-import-preview-repeat');

    await dialog.getByRole('button', { name: 'Import 3 rows' }).click();
    await dialog.getByRole('button', { name: 'Done' }).waitFor();
    expect(await count(dialog, 'import-totals', 'created')).toBe(2);
    expect(await count(dialog, 'import-totals', 'repeatedInFile')).toBe(1);
    expect(await count(dialog, 'import-totals', 'unchanged')).toBe(0);
    await expect(repeat.innerText()).resolves.toMatch(/Repeats an earlier row\s+Repeats row 2 of this file: Rita Repeat/);
    await screenshot(page, 'details-02-import-result-repeat');
    await dialog.getByRole('button', { name: 'Done' }).click();
  }, 90_000);

  it('keeps toasts of bulk work in a stack of three, newest on top, below the table; Escape and the close button dismiss them', async () => {
    await page.setViewportSize({ width: 1280, height: 800 });
    const toasts = page.getByTestId('toasts').locator('.toast');
    // Toasts of earlier journeys are closed first (each with its close button).
    while ((await toasts.count()) > 0) await toasts.first().getByRole('button', { name: 'Dismiss' }).click();
    // Four bulk tag changes, of 1, 2, 3 and 4 leads: four toasts with an Undo each.
    for (let n = 1; n <= 4; n++) {
      for (let i = 0; i < n; i++) await rows().nth(i).locator('input[type="checkbox"]').check();
      await page.getByRole('button', { name: 'Tag…' }).click();
      const dialog = page.getByRole('dialog', { name: 'Tag leads' });
      const options = dialog.getByLabel('Tag').locator('option');
      const tagValues = () => options.evaluateAll((o) => (o as HTMLOptionElement[]).map((x) => x.value).filter((v) => v && !v.startsWith('__')));
      await expect.poll(async () => (await tagValues()).length).toBeGreaterThan(1);
      const tags = await tagValues();
      await dialog.getByLabel('Tag').selectOption(tags[n % tags.length] ?? '');
      await dialog.getByRole('button', { name: 'Apply' }).click();
      await dialog.waitFor({ state: 'detached' });
      await page.getByRole('button', { name: 'Clear', exact: true }).click();
    }
    await expect.poll(() => toasts.allInnerTexts()).toEqual([
      expect.stringContaining('Tagged 4 leads.'), expect.stringContaining('Tagged 3 leads.'), expect.stringContaining('Tagged 2 leads.'),
    ]);
    // The oldest (the first tag change) is folded.
    await expect(page.getByRole('button', { name: 'Show 1 earlier notification' }).isVisible()).resolves.toBe(true);
    expect(await page.getByRole('status').filter({ hasText: 'Tagged 4 leads.' }).count()).toBe(1);

    // The table ends above the stack, scrolled to its end too: no row or column is under a toast.
    await page.locator('.table .viewport').evaluate((el) => { el.scrollTop = el.scrollHeight; });
    const table = await page.locator('.table').boundingBox();
    const stack = await page.getByTestId('toasts').boundingBox();
    expect(table && stack && table.y + table.height <= stack.y).toBe(true);
    await screenshot(page, 'details-03-toasts-stacked');

    // Escape dismisses the newest; the older ones move up.
    await page.locator('body').click({ position: { x: 5, y: 5 } });
    await page.keyboard.press('Escape');
    await expect.poll(async () => (await toasts.allInnerTexts())[0]).toContain('Tagged 3 leads.');
    expect(await page.getByRole('button', { name: /earlier notification/ }).count()).toBe(0);
    const left = await toasts.count();
    await toasts.first().getByRole('button', { name: 'Dismiss' }).click();
    await expect.poll(async () => (await toasts.allInnerTexts())[0]).toContain('Tagged 2 leads.');
    expect(await toasts.count()).toBeLessThan(left);
    await page.setViewportSize({ width: 1440, height: 900 });
  }, 90_000);

  it('shows whole campaign names in the Sequence column at 1280 and 1440 px, without scrolling sideways', async () => {
    for (const width of [1280, 1440]) {
      await page.setViewportSize({ width, height: 900 });
      await page.locator('.table .campaign-name').first().waitFor();
      const names = page.locator('.table .campaign-name');
      const cut = await names.evaluateAll((els) => els.filter((e) => e.scrollWidth > e.clientWidth).map((e) => e.textContent));
      expect(cut, `cut at ${width} px`).toEqual([]);
      expect(await names.allInnerTexts()).toEqual(expect.arrayContaining([expect.stringMatching(/^(Q4 outbound: Heads of Sales|Event follow-up: SaaS Summit)$/)]));
      const sideways = await page.locator('.table .viewport').evaluate((el) => el.scrollWidth - el.clientWidth);
      expect(sideways, `sideways at ${width} px`).toBeLessThanOrEqual(0);
      await screenshot(page, `details-04-sequence-column-${width}`);
    }
    await page.setViewportSize({ width: 1440, height: 900 });
  }, 60_000);

  it("says on the campaign page how many of its list's leads have not started and why, and lists them", async () => {
    // One lead of the campaign's list not started yet is marked Do Not Contact.
    const marked = await page.evaluate(async () => {
      const list = await window.outreach?.call('campaigns.getBasic', { search: 'Q4 outbound' });
      const campaign = list?.ok ? list.value.basicCampaigns[0] : undefined;
      if (!campaign) return null;
      const activity = await window.outreach?.call('campaigns.getActivity', { campaignId: campaign.id, limit: 5 });
      const lead = activity?.ok ? activity.value.groupLeads.skipped[0] : undefined;
      if (!lead) return null;
      await window.outreach?.call('campaigns.leads.setDoNotContact', { leadIds: [lead.leadId], doNotContact: true });
      return { campaignId: campaign.id, leadName: lead.leadName };
    });
    expect(marked).not.toBeNull();
    await page.goto(`${app.url}#/campaigns?campaign=${marked?.campaignId ?? ''}`);
    const section = page.getByTestId('not-started');
    const summary = section.getByTestId('not-started-summary');
    await expect.poll(() => summary.innerText()).toMatch(/Do Not Contact/);
    const text = await summary.innerText();
    const m = /^([\d,]+) of ([\d,]+) not started: (.*)\.$/.exec(text);
    expect(m, text).not.toBeNull();
    const parts = (m?.[3] ?? '').split(', ').map((p) => Number(/^[\d,]+/.exec(p)?.[0]?.replace(/,/g, '') ?? 'NaN'));
    expect(parts.reduce((a, b) => a + b, 0)).toBe(Number(m?.[1]?.replace(/,/g, '')));
    await screenshot(page, 'details-05-campaign-not-started');

    await section.locator('button[data-reason="do_not_contact"]').click();
    const list = page.getByRole('region', { name: 'Leads not started: Do Not Contact' });
    await list.getByText('Marked Do Not Contact.').waitFor();
    await list.getByRole('link', { name: marked?.leadName ?? '' }).click();
    await page.getByTestId('lead-panel').getByRole('heading', { name: marked?.leadName ?? '' }).waitFor();
    await screenshot(page, 'details-06-campaign-not-started-lead');
    await page.keyboard.press('Escape');
    expect(page.errors).toEqual([]);
  }, 90_000);
});
