/** Duplicates journey: two leads of one person made by hand show as a pair in the Duplicates view
 * (g d), the side-by-side preview says what a merge does, Merge makes them one, Undo from the toast
 * brings both back, and the m key merges again while the merged lead's panel is open, which then
 * shows the survivor. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { closeDemoApp, openDemoApp, screenshot } from './support/app.ts';
import type { RunningApp } from './support/app.ts';

let app: RunningApp;
let browser: Browser;
let page: Page & { errors: string[] };

beforeAll(async () => ({ app, browser, page } = await openDemoApp()), 240_000);
afterAll(() => closeDemoApp(app, browser));

const toast = (text: string | RegExp) => page.locator('.toast').filter({ hasText: text });
const pairRow = () => page.getByTestId('duplicate-groups').locator('.list-row', { hasText: 'Dora Double · Dora Double' });

async function newLead(fields: Record<string, string>): Promise<void> {
  await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
  await page.keyboard.press('n');
  const dialog = page.getByRole('dialog', { name: 'New lead' });
  for (const [label, value] of Object.entries(fields)) await dialog.getByLabel(label, { exact: true }).fill(value);
  await dialog.getByRole('button', { name: 'Create lead' }).click();
  await dialog.waitFor({ state: 'detached' });
  await page.getByRole('button', { name: 'Close lead' }).click();
}

describe('duplicates', () => {
  it('merges a pair from the Duplicates view, undoes it, and merges again with m', async () => {
    await newLead({ 'First name': 'Dora', 'Last name': 'Double', Email: 'dora@twin.example', Company: 'Twin Corp', 'Job title': 'CTO' });
    await newLead({ 'First name': 'Dora', 'Last name': 'Double', Email: 'dora.d@twin.example', Company: 'Twin Corp', Phone: '+1 555 0100' });

    await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
    await page.keyboard.press('g');
    await page.keyboard.press('d');
    await page.getByRole('heading', { name: 'Duplicates' }).waitFor();
    await pairRow().click();
    const side = page.getByTestId('merge-side-by-side');
    await side.waitFor();
    // The preview: the kept lead's email stays, the phone only the other had is filled in.
    await side.locator('tr', { hasText: 'Phone' }).getByText('+1 555 0100').first().waitFor();
    await expect(side.locator('tr', { hasText: 'Email' }).locator('td').nth(3).innerText()).resolves.toBe('dora@twin.example');
    await screenshot(page, 'duplicates-preview');

    await page.getByTestId('merge-button').click();
    await toast(/^Merged Dora Double into Dora Double/).waitFor();
    await pairRow().waitFor({ state: 'detached' });
    await screenshot(page, 'duplicates-merged');

    await toast(/^Merged Dora Double/).getByRole('button', { name: 'Undo' }).click();
    await toast(/^Undone: Dora Double is a lead of its own again/).waitFor();
    await pairRow().waitFor();

    // The m key merges the selected pair; the lead panel showing the merged lead follows to the survivor.
    await pairRow().click();
    await page.getByTestId('merge-side-by-side').getByRole('link', { name: /^Merged: / }).click();
    const panel = page.getByTestId('lead-panel');
    await panel.getByRole('link', { name: 'dora.d@twin.example' }).waitFor();
    await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
    await page.keyboard.press('m');
    await pairRow().waitFor({ state: 'detached' });
    await panel.getByRole('link', { name: 'dora@twin.example' }).waitFor();
    await screenshot(page, 'duplicates-panel-follows-survivor');
    await page.getByRole('button', { name: 'Close lead' }).click();
    // One Dora Double is left in the leads table, with both leads' data.
    await page.keyboard.press('g');
    await page.keyboard.press('l');
    await page.locator('#global-search').fill('Dora Double');
    await page.locator('.table [data-lead-id]', { hasText: 'Dora Double' }).first().waitFor();
    await page.waitForFunction(() => document.querySelectorAll('.table [data-lead-id]').length === 1);
    expect(page.errors).toEqual([]);
  }, 120_000);
});
