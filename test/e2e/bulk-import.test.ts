/** Journeys that act on many leads: bulk enrollment with its dry-run preview, CSV import with bad
 * rows (reported by row number while the rest go in), and CSV export of the current view. */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Papa from 'papaparse';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { closeDemoApp, closeDialogs, openDemoApp, screenshot } from './support/app.ts';
import type { RunningApp } from './support/app.ts';

let app: RunningApp;
let browser: Browser;
let page: Page & { errors: string[] };

const rows = () => page.locator('.table [data-lead-id]');
/** The first real campaign of the enroll dialog's list, once the list has loaded. */
async function pickCampaign(dialog: ReturnType<Page['getByRole']>): Promise<string> {
  const select = dialog.getByLabel('Destination campaign');
  await select.locator('option').nth(2).waitFor({ state: 'attached' });
  const name = (await select.locator('option').allInnerTexts()).find((o) => !o.includes('…')) ?? '';
  await select.selectOption({ label: name });
  return name;
}
const count = async (key: string) => Number((await page.locator(`[data-count="${key}"] strong`).innerText()).replace(/\D/g, ''));

beforeAll(async () => ({ app, browser, page } = await openDemoApp()), 240_000);

afterEach(() => closeDialogs(page));

afterAll(() => closeDemoApp(app, browser));

describe('bulk enrollment', () => {
  it('previews the counts of enrolling every matching lead without changing anything', async () => {
    await page.getByLabel('Select all loaded leads').check();
    await page.getByRole('button', { name: 'Select all leads matching the filters' }).click();
    await expect(page.getByTestId('selection-count').innerText()).resolves.toBe('All leads matching the filters');
    await page.getByRole('button', { name: 'Enroll in campaign…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Enroll in a campaign' });
    const name = await pickCampaign(dialog);
    await dialog.getByTestId('preview-counts').waitFor();
    const enrolled = await count('enrolled');
    const accounted = enrolled + (await count('alreadyEnrolled')) + (await count('skippedDoNotContact')) + (await count('skippedBlocklisted')) + (await count('skippedActive')) + (await count('skippedMissing')) + (await count('skippedClosed'));
    expect(accounted).toBe(500);
    // Won and Lost leads are left out by default, and the dialog says how many.
    if ((await count('skippedClosed')) > 0) await expect(dialog.getByTestId('closed-warning').innerText()).resolves.toMatch(/Won or Lost stage and will be left out/);
    expect(await count('alreadyEnrolled')).toBeGreaterThan(0);
    await screenshot(page, '11-bulk-enroll-preview');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    // Nothing was enrolled by the preview: the same preview gives the same counts.
    await page.getByRole('button', { name: 'Enroll in campaign…' }).click();
    expect(await pickCampaign(page.getByRole('dialog', { name: 'Enroll in a campaign' }))).toBe(name);
    await page.getByTestId('preview-counts').waitFor();
    expect(await count('enrolled')).toBe(enrolled);
    await page.getByRole('dialog', { name: 'Enroll in a campaign' }).getByRole('button', { name: 'Cancel' }).click();
    await page.getByRole('button', { name: 'Clear', exact: true }).click();
  }, 60_000);

  it('enrolls three selected leads after the preview, and their rows show the campaign', async () => {
    // Leads not in any campaign yet, and not closed (the dialog leaves Won/Lost leads out).
    const free = rows().filter({ hasText: 'Not enrolled' }).filter({ hasNotText: /Won|Lost/ });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = free.nth(i);
      ids.push((await r.getAttribute('data-lead-id')) ?? '');
    }
    for (const id of ids) await page.locator(`.table [data-lead-id="${id}"] input[type="checkbox"]`).check();
    await expect(page.getByTestId('selection-count').innerText()).resolves.toBe('3 selected');
    await page.getByRole('button', { name: 'Enroll in campaign…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Enroll in a campaign' });
    const name = await pickCampaign(dialog);
    await dialog.getByTestId('preview-counts').waitFor();
    expect(await count('enrolled')).toBe(3);
    await dialog.getByRole('button', { name: 'Enroll 3 leads' }).click();
    await dialog.waitFor({ state: 'detached' });
    await page.getByRole('status').filter({ hasText: `Enrolled 3 leads in ${name}` }).waitFor();
    for (const id of ids) {
      await page.waitForFunction(([leadId, campaignName]) => document.querySelector(`.table [data-lead-id="${leadId}"]`)?.textContent?.includes(campaignName ?? ''), [id, name] as const);
    }
  }, 60_000);
});

describe('bulk tag, stage and sender', () => {
  async function selectRows(n: number, from = 10): Promise<string[]> {
    const ids: string[] = [];
    const candidates = rows().filter({ hasNotText: 'Lost' });
    for (let i = from; i < from + n; i++) ids.push((await candidates.nth(i).getAttribute('data-lead-id')) ?? '');
    for (const id of ids) await page.locator(`.table [data-lead-id="${id}"] input[type="checkbox"]`).check();
    return ids;
  }
  const rowHas = (ids: string[], text: string) =>
    page.waitForFunction(([list, t]) => list.every((id) => document.querySelector(`.table [data-lead-id="${id}"]`)?.textContent?.includes(t)), [ids, text] as const);

  it('tags the selected leads', async () => {
    const ids = await selectRows(2);
    await page.getByRole('button', { name: 'Tag…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Tag leads' });
    await dialog.getByLabel('Tag').selectOption({ label: 'Partner' });
    await dialog.getByRole('button', { name: 'Apply' }).click();
    await dialog.waitFor({ state: 'detached' });
    await rowHas(ids, 'Partner');
    await page.getByRole('button', { name: 'Clear', exact: true }).click();
  }, 60_000);

  it('moves the selected leads to Lost only with a close reason', async () => {
    const ids = await selectRows(2, 14);
    await page.getByRole('button', { name: 'Move to stage…' }).click();
    await page.getByRole('dialog', { name: 'Move leads to a stage' }).getByLabel('Stage').selectOption({ label: 'Lost' });
    await page.getByRole('dialog', { name: 'Move leads to a stage' }).getByRole('button', { name: 'Move' }).click();
    const prompt = page.getByRole('dialog', { name: 'Move the selected leads to Lost' });
    await expect(prompt.getByRole('button', { name: 'Move to Lost' }).isDisabled()).resolves.toBe(true);
    await expect(prompt.getByTestId('move-blocked').innerText()).resolves.toBe('Choose why it was lost to move it.');
    await prompt.getByLabel('Close reason').selectOption('NO_RESPONSE');
    await prompt.getByRole('button', { name: 'Move to Lost' }).click();
    await prompt.waitFor({ state: 'detached' });
    await rowHas(ids, 'Lost');
  }, 60_000);

  it("moves a campaign's leads to another of its senders after a preview", async () => {
    const campaign = page.getByLabel('Campaign', { exact: true });
    const name = (await campaign.locator('option').allInnerTexts()).find((o) => o !== 'All campaigns') ?? '';
    await campaign.selectOption({ label: name });
    // The campaign's leads: its lead list, enrolled in it or not yet.
    await page.waitForFunction((n) => {
      const r = Array.from(document.querySelectorAll('.table [data-lead-id]'));
      return r.some((x) => x.textContent?.includes(n)) && r.every((x) => x.textContent?.includes(n) || x.textContent?.includes('Not enrolled'));
    }, name);
    const running = rows().filter({ hasText: 'in progress' });
    const ids = [(await running.nth(0).getAttribute('data-lead-id')) ?? '', (await running.nth(1).getAttribute('data-lead-id')) ?? ''];
    for (const id of ids) await page.locator(`.table [data-lead-id="${id}"] input[type="checkbox"]`).check();
    await page.getByRole('button', { name: 'Change sender…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Change sender' });
    const sender = dialog.getByLabel('New sender');
    await sender.locator('option').nth(1).waitFor({ state: 'attached' });
    const current = await page.locator(`.table [data-lead-id="${ids[0]}"] .sub`).last().innerText();
    const options = (await sender.locator('option').allInnerTexts()).filter((o) => !o.includes('…'));
    const target = options.find((o) => !current.startsWith(o.replace(' (paused here)', ''))) ?? options[0] ?? '';
    await sender.selectOption({ label: target });
    await dialog.getByTestId('preview-counts').waitFor();
    const moving = await count('changedCount');
    expect(moving + (await count('alreadyAssigned')) + (await count('notEnrolled')) + (await count('completed')) + (await count('paused'))).toBe(2);
    expect(moving).toBeGreaterThan(0);
    await dialog.getByRole('button', { name: new RegExp(`^Move ${moving} lead`) }).click();
    await dialog.waitFor({ state: 'detached' });
    await rowHas([ids[0] ?? ''], target.replace(' (paused here)', ''));
    await page.getByRole('button', { name: 'Clear filters' }).click();
  }, 60_000);
});

describe('CSV', () => {
  it('imports a file with bad rows: the rest go in, each refusal is listed with its row number', async () => {
    // An email the workspace already has (not every demo lead has one).
    const existing = await page.evaluate(async () => {
      const r = await window.outreach?.call('campaigns.leads.search', { limit: 50 });
      return r?.ok ? (r.value.leads.find((l) => l.email)?.email ?? '') : '';
    });
    expect(existing).toContain('@');
    const csv = [
      'First Name,Last Name,Email,Company,Title,LinkedIn URL,Team size',
      'Wanda,Importer,wanda@imported.example,Imported Ltd,CTO,https://social.example/in/wanda-importer,11-50',
      'Xavier,Importer,xavier@imported.example,Imported Ltd,CFO,,',
      'Yolanda,Importer,not-an-email,Imported Ltd,COO,,',
      ',,,Nameless Inc,Ghost,,',
      `Dup,Licate,${existing},Somewhere,VP,,`,
      'Zed,Importer,zed@imported.example,Imported Ltd,CEO,,',
      'Wanda,Again,wanda@imported.example,Imported Ltd,CTO,,',
    ].join('\n');
    const file = join(app.dataDir, 'import.csv');
    writeFileSync(file, csv);
    await page.getByRole('button', { name: 'Import CSV' }).click();
    const dialog = page.getByRole('dialog', { name: 'Import leads from CSV' });
    await dialog.getByLabel('Lead list').selectOption({ label: 'Demo prospects' });
    await dialog.getByLabel('CSV file').setInputFiles(file);
    await expect(dialog.getByLabel('Map First Name').inputValue()).resolves.toBe('firstName');
    await expect(dialog.getByLabel('Map Title').inputValue()).resolves.toBe('jobTitle');
    await expect(dialog.getByLabel('Map LinkedIn URL').inputValue()).resolves.toBe('socialUrl');
    await expect(dialog.getByLabel('Map Team size').inputValue()).resolves.toBe('custom:Team size');
    await screenshot(page, '12-import-mapping');
    await dialog.getByRole('button', { name: 'Import 7 rows' }).click();
    const totals = dialog.getByTestId('import-totals');
    await dialog.getByRole('button', { name: 'Done' }).waitFor();
    const n = async (k: string) => Number((await totals.locator(`[data-count="${k}"] strong`).innerText()).replace(/\D/g, ''));
    expect(await n('created')).toBe(3);
    expect(await n('invalid')).toBe(2);
    // The existing person (by email) is found, not created again; Wanda's second row repeats row 2.
    expect((await n('updated')) + (await n('unchanged'))).toBe(1);
    expect(await n('repeatedInFile')).toBe(1);
    const results = dialog.getByRole('table', { name: 'Row results' });
    await expect(results.locator('tr[data-code="INVALID_EMAIL"] td').first().innerText()).resolves.toBe('4');
    await expect(results.locator('tr[data-code="INVALID_EMAIL"]').innerText()).resolves.toContain('not-an-email');
    await expect(results.locator('tr[data-code="MISSING_IDENTITY"] td').first().innerText()).resolves.toBe('5');
    await screenshot(page, '13-import-result');
    await dialog.getByRole('button', { name: 'Done' }).click();

    await page.keyboard.press('/');
    await page.keyboard.type('Importer');
    await page.waitForFunction(() => document.querySelector('[data-testid="leads-count"]')?.textContent === '3 leads');
    // The count answers on its own, so the rows may still be on their way.
    await expect.poll(() => rows().allInnerTexts()).toEqual(expect.arrayContaining([expect.stringContaining('Wanda Importer'), expect.stringContaining('Zed Importer'), expect.stringContaining('Xavier Importer')]));
  }, 60_000);

  it('exports the current view as CSV, lead id first', async () => {
    const download = page.waitForEvent('download');
    await page.getByRole('button', { name: 'Export CSV' }).click();
    const file = await (await download).path();
    const parsed = Papa.parse<Record<string, string>>(readFileSync(file, 'utf8').replace(/^\ufeff/, ''), { header: true, skipEmptyLines: true });
    expect(parsed.meta.fields?.[0]).toBe('id');
    expect(parsed.data.map((r) => r['Full name']).sort()).toEqual(['Wanda Importer', 'Xavier Importer', 'Zed Importer']);
    expect(parsed.data.find((r) => r['Full name'] === 'Wanda Importer')?.['Team size']).toBe('11-50');
    expect(page.errors).toEqual([]);
  }, 60_000);
});
