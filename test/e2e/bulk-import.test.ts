/** Journeys that act on many leads: bulk enrollment with its dry-run preview, CSV import with a bad
 * row (reported while the rest go in), and CSV export of the current view. */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Papa from 'papaparse';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { closeDialogs, ensureRendererBuilt, launchBrowser, openDemo, openPage, screenshot, startApp } from './support/app.ts';
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

beforeAll(async () => {
  await ensureRendererBuilt();
  app = await startApp();
  browser = await launchBrowser();
  page = await openPage(browser, app.url);
  await openDemo(page, app);
}, 240_000);

afterEach(() => closeDialogs(page));

afterAll(async () => {
  await browser?.close();
  await app?.stop();
});

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
    const accounted = enrolled + (await count('alreadyEnrolled')) + (await count('skippedDoNotContact')) + (await count('skippedBlocklisted')) + (await count('skippedActive')) + (await count('skippedMissing'));
    expect(accounted).toBe(500);
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
    // Leads not in any campaign yet.
    const free = rows().filter({ hasText: 'Not enrolled' });
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
    await prompt.getByRole('button', { name: 'Move to Lost' }).click();
    await expect(prompt.getByRole('alert').innerText()).resolves.toMatch(/^2 of 2 leads were not moved: .*needs a closeReason/);
    await prompt.getByLabel('Close reason').selectOption('NO_RESPONSE');
    await prompt.getByRole('button', { name: 'Move to Lost' }).click();
    await prompt.waitFor({ state: 'detached' });
    await rowHas(ids, 'Lost');
  }, 60_000);

  it("moves a campaign's leads to another of its senders after a preview", async () => {
    const campaign = page.getByLabel('Campaign', { exact: true });
    const name = (await campaign.locator('option').allInnerTexts()).find((o) => o !== 'All campaigns') ?? '';
    await campaign.selectOption({ label: name });
    await page.waitForFunction((n) => {
      const r = Array.from(document.querySelectorAll('.table [data-lead-id]'));
      return r.length > 0 && r.every((x) => x.textContent?.includes(n));
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
  it('imports a file with bad rows: the rest go in, each refusal is listed with its line', async () => {
    const existing = await rows().nth(5).locator('.sub').first().innerText();
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
    await expect(dialog.getByLabel('Map First Name').inputValue()).resolves.toBe('field:firstName');
    await expect(dialog.getByLabel('Map Title').inputValue()).resolves.toBe('field:jobTitle');
    await expect(dialog.getByLabel('Map LinkedIn URL').inputValue()).resolves.toBe('field:socialUrl');
    await expect(dialog.getByLabel('Map Team size').inputValue()).resolves.toBe('custom:Team size');
    await dialog.getByText('repeats a person listed earlier').waitFor();
    await screenshot(page, '12-import-mapping');
    await dialog.getByRole('button', { name: 'Import 6 rows' }).click();
    const outcome = dialog.getByTestId('import-outcome');
    await outcome.waitFor();
    const text = await outcome.innerText();
    expect(text).toContain('Imported 3 new leads; 1 already in the CRM; 1 repeated rows skipped; 2 rows refused.');
    const refused = dialog.getByRole('table', { name: 'Refused rows' });
    await expect(refused.getByRole('row', { name: /^4 / }).innerText()).resolves.toContain('not-an-email');
    await expect(refused.getByRole('row', { name: /^5 / }).innerText()).resolves.toContain('needs a name, an email or a social profile URL');
    await screenshot(page, '13-import-result');
    await dialog.getByRole('button', { name: 'Done' }).click();

    await page.keyboard.press('/');
    await page.keyboard.type('Importer');
    await page.waitForFunction(() => document.querySelector('[data-testid="leads-count"]')?.textContent === '3 leads');
    // The count answers on its own, so the rows may still be on their way.
    await expect.poll(() => rows().allInnerTexts()).toEqual(expect.arrayContaining([expect.stringContaining('Wanda Importer'), expect.stringContaining('Zed Importer'), expect.stringContaining('Xavier Importer')]));
  }, 60_000);

  it('exports the current view as CSV', async () => {
    const download = page.waitForEvent('download');
    await page.getByRole('button', { name: 'Export CSV' }).click();
    const file = await (await download).path();
    const parsed = Papa.parse<Record<string, string>>(readFileSync(file, 'utf8').replace(/^\ufeff/, ''), { header: true, skipEmptyLines: true });
    expect(parsed.data.map((r) => r['Full name']).sort()).toEqual(['Wanda Importer', 'Xavier Importer', 'Zed Importer']);
    expect(parsed.data.find((r) => r['Full name'] === 'Wanda Importer')?.['Team size']).toBe('11-50');
    expect(page.errors).toEqual([]);
  }, 60_000);
});
