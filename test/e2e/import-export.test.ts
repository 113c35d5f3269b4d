/** The import/export journey: an Apollo export (BOM, CRLF) imported into a campaign's list and
 * listed with the campaign's leads, one lead's email edited in place, another marked Do Not
 * Contact, a lead created by hand with `n`, the view exported, the file edited as in a spreadsheet
 * and imported again with "Update": nobody new, the edits applied. */
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
let campaignName = '';

const APOLLO = join(import.meta.dirname, '..', 'fixtures', 'imports', 'apollo-people.csv');
const rows = () => page.locator('.table [data-lead-id]');
const panel = () => page.getByTestId('lead-panel');
const row = (text: string) => rows().filter({ hasText: text }).first();

async function count(dialog: ReturnType<Page['getByRole']>, testId: string, key: string): Promise<number> {
  return Number((await dialog.getByTestId(testId).locator(`[data-count="${key}"] strong`).innerText()).replace(/\D/g, ''));
}

/** Leads of the campaign whose text matches, through the search box. */
async function search(text: string): Promise<void> {
  await page.keyboard.press('Escape');
  await page.keyboard.press('/');
  await page.keyboard.press('Control+A');
  await page.keyboard.press('Backspace');
  if (text) await page.keyboard.type(text);
  await page.keyboard.press('Enter');
}

beforeAll(async () => ({ app, browser, page } = await openDemoApp()), 240_000);

afterEach(() => closeDialogs(page));

afterAll(() => closeDemoApp(app, browser));

describe('import and export', () => {
  it("imports an Apollo export into a campaign's list after a dry-run preview, and lists the people with the campaign's leads", async () => {
    const campaign = page.getByLabel('Campaign', { exact: true });
    campaignName = (await campaign.locator('option').allInnerTexts()).find((o) => o !== 'All campaigns') ?? '';
    await campaign.selectOption({ label: campaignName });
    await page.getByRole('button', { name: 'Import CSV' }).click();
    const dialog = page.getByRole('dialog', { name: 'Import leads from CSV' });
    await dialog.getByLabel('CSV file').setInputFiles(APOLLO);
    const summary = await dialog.getByTestId('file-summary').innerText();
    expect(summary).toContain('5 rows');
    expect(summary).toContain('UTF-8');
    expect(summary).toContain('byte-order mark');
    expect(summary).toContain('comma');
    await expect(dialog.getByLabel('Map Person Linkedin Url').inputValue()).resolves.toBe('socialUrl');
    await expect(dialog.getByLabel('Map City').inputValue()).resolves.toBe('city');
    await expect(dialog.getByLabel('Map Mobile Phone').inputValue()).resolves.toBe('custom:Mobile Phone');
    await dialog.getByRole('button', { name: 'Preview (dry run)' }).click();
    await dialog.getByTestId('preview-totals').waitFor();
    await expect.poll(() => count(dialog, 'preview-totals', 'created')).toBe(5);
    await screenshot(page, '40-import-apollo-preview');
    await dialog.getByRole('button', { name: 'Import 5 rows' }).click();
    await dialog.getByRole('button', { name: 'Done' }).waitFor();
    expect(await count(dialog, 'import-totals', 'created')).toBe(5);
    expect(await count(dialog, 'import-totals', 'invalid')).toBe(0);
    await screenshot(page, '41-import-apollo-done');
    await dialog.getByRole('button', { name: 'Done' }).click();

    // The campaign's leads include the imported people (linked to its list, not enrolled yet).
    await search('Okafor');
    await row('Daniel Okafor').waitFor();
    await expect(row('Daniel Okafor').innerText()).resolves.toContain('Kestrel Robotics');
    await search('');
    for (const name of ['Sofia Lindqvist', 'Kwame Mensah', 'Laura Bianchi', 'Hiroshi Tanaka']) {
      await search(name.split(' ')[1] ?? name);
      await row(name).waitFor();
    }
    await screenshot(page, '42-campaign-leads-after-import');
  }, 120_000);

  it('edits an email in place: the new value stays on screen and is saved', async () => {
    await search('Lindqvist');
    await row('Sofia Lindqvist').click();
    const email = panel().getByRole('button', { name: 'Edit Email', exact: true });
    await expect(email.innerText()).resolves.toBe('sofia@fjordpay.example');
    await email.click();
    const input = panel().getByLabel('Email', { exact: true });
    await input.fill('sofia.lindqvist@fjordpay.example');
    await input.press('Enter');
    // Right after Enter, before and after the save lands: never the old address again.
    await expect(panel().getByRole('button', { name: 'Edit Email', exact: true }).innerText()).resolves.toBe('sofia.lindqvist@fjordpay.example');
    await page.waitForFunction(() => document.querySelector('[data-testid="lead-panel"] [aria-label="Edit Email"]:not([data-saving])')?.textContent === 'sofia.lindqvist@fjordpay.example');
    await panel().getByRole('link', { name: 'sofia.lindqvist@fjordpay.example' }).waitFor();
    // A refused edit says why in words and keeps the saved value.
    await panel().getByRole('button', { name: 'Edit Email', exact: true }).click();
    await panel().getByLabel('Email', { exact: true }).fill('not an email');
    await panel().getByLabel('Email', { exact: true }).press('Enter');
    await panel().getByRole('alert').filter({ hasText: 'is not a valid email address' }).waitFor();
    await expect(panel().getByRole('button', { name: 'Edit Email', exact: true }).innerText()).resolves.toBe('sofia.lindqvist@fjordpay.example');
    await screenshot(page, '43-lead-email-edited');
  }, 60_000);

  it('marks a lead Do Not Contact and clears it again', async () => {
    await search('Mensah');
    await row('Kwame Mensah').click();
    await panel().getByRole('heading', { name: 'Kwame Mensah' }).waitFor();
    const dnc = panel().getByRole('checkbox', { name: 'Do not contact' });
    await dnc.check();
    await panel().locator('.status', { hasText: 'Do not contact' }).waitFor();
    await dnc.uncheck();
    await panel().locator('.status', { hasText: 'Do not contact' }).waitFor({ state: 'detached' });
    await dnc.check();
    await panel().locator('.status', { hasText: 'Do not contact' }).waitFor();
    await screenshot(page, '44-lead-do-not-contact');
  }, 60_000);

  it('creates a lead by hand with n, deletes it, and brings it back with Undo', async () => {
    await page.getByRole('button', { name: 'Close lead' }).click();
    await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
    await page.keyboard.press('n');
    const dialog = page.getByRole('dialog', { name: 'New lead' });
    // n then the name, as a user types it: the dialog opens with the cursor in its first field.
    await expect.poll(() => dialog.getByLabel('First name').evaluate((el) => el === document.activeElement)).toBe(true);
    await page.keyboard.type('Nadia');
    await expect.poll(() => dialog.getByLabel('First name').inputValue()).toBe('Nadia');
    await dialog.getByLabel('Last name').fill('Handmade');
    await dialog.getByLabel('Email').fill('nadia@handmade.example');
    await dialog.getByLabel('Company').fill('Handmade Co');
    await dialog.getByRole('button', { name: 'Create lead' }).click();
    await dialog.waitFor({ state: 'detached' });
    await panel().getByRole('heading', { name: 'Nadia Handmade' }).waitFor();
    await panel().getByRole('button', { name: 'Delete lead' }).click();
    const toast = page.getByRole('status').filter({ hasText: 'Deleted Nadia Handmade.' });
    await toast.waitFor();
    await screenshot(page, '45-lead-deleted-undo');
    await toast.getByRole('button', { name: 'Undo' }).click();
    await panel().getByRole('heading', { name: 'Nadia Handmade' }).waitFor();
    await expect(panel().getByRole('button', { name: 'Edit Company', exact: true }).innerText()).resolves.toBe('Handmade Co');
  }, 60_000);

  it("exports the campaign's leads and imports the edited file back: nobody new, the edits applied", async () => {
    await page.getByRole('button', { name: 'Close lead' }).click();
    await search('');
    const download = page.waitForEvent('download');
    await page.getByRole('button', { name: 'Export CSV' }).click();
    const file = await (await download).path();
    const text = readFileSync(file, 'utf8');
    expect(text.charCodeAt(0)).toBe(0xfeff);
    const parsed = Papa.parse<string[]>(text.slice(1), { skipEmptyLines: true });
    const [header = [], ...data] = parsed.data;
    const col = (n: string) => header.indexOf(n);
    expect(header[0]).toBe('id');
    const find = (first: string) => data.find((r) => r[col('First name')] === first) ?? [];
    expect(find('Sofia')[col('Email')]).toBe('sofia.lindqvist@fjordpay.example');
    expect(find('Kwame')[col('Do not contact')]).toBe('yes');
    // Cells starting like a formula are escaped for spreadsheets.
    expect(find('Daniel')[col('Phone')]).toBe("'+1 415-555-0132");
    const total = data.length;

    // Edited as in a spreadsheet: a new title for Laura, then saved and imported again.
    find('Laura')[col('Job title')] = 'Head of Marketing';
    const edited = join(app.dataDir, 'edited-export.csv');
    writeFileSync(edited, Papa.unparse([header, ...data]));
    await page.getByRole('button', { name: 'Import CSV' }).click();
    const dialog = page.getByRole('dialog', { name: 'Import leads from CSV' });
    await dialog.getByLabel('CSV file').setInputFiles(edited);
    await expect(dialog.getByLabel('Map id').inputValue()).resolves.toBe('id');
    await expect(dialog.getByLabel('Map Stage').inputValue()).resolves.toBe('skip');
    await dialog.getByLabel('Update').check();
    await dialog.getByRole('button', { name: `Import ${total} rows` }).click();
    await dialog.getByRole('button', { name: 'Done' }).waitFor();
    // No row needs a look: every one was found by its id.
    expect(await dialog.getByRole('table', { name: 'Row results' }).locator('tbody tr').allInnerTexts()).toEqual([]);
    expect(await count(dialog, 'import-totals', 'created')).toBe(0);
    expect(await count(dialog, 'import-totals', 'updated')).toBe(1);
    expect(await count(dialog, 'import-totals', 'unchanged')).toBe(total - 1);
    await dialog.getByLabel('Only rows that need a look').uncheck();
    await expect(dialog.locator('tr[data-code="UPDATED"]').innerText()).resolves.toContain('job title');
    await screenshot(page, '46-reimport-export-updated');
    await dialog.getByRole('button', { name: 'Done' }).click();

    await search('Bianchi');
    await row('Laura Bianchi').click();
    await expect(panel().getByRole('button', { name: 'Edit Job title', exact: true }).innerText()).resolves.toBe('Head of Marketing');
    expect(page.errors).toEqual([]);
  }, 120_000);
});
