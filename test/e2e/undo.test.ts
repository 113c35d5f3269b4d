/** Undo journeys: a stage move to Lost taken back from the toast (stage and close reason as they
 * were), a tag change taken back with Ctrl+Z, and a bulk stage move taken back for every lead. */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { closeDemoApp, closeDialogs, openDemoApp, screenshot } from './support/app.ts';
import type { RunningApp } from './support/app.ts';

let app: RunningApp;
let browser: Browser;
let page: Page & { errors: string[] };

const panel = () => page.getByTestId('lead-panel');
const rows = () => page.locator('.table [data-lead-id]');
const stageOf = () => panel().getByLabel('Stage').evaluate((el) => (el as HTMLSelectElement).selectedOptions[0]?.textContent ?? '');
const toast = (text: string | RegExp) => page.locator('.toast').filter({ hasText: text });

beforeAll(async () => ({ app, browser, page } = await openDemoApp()), 240_000);

afterEach(() => closeDialogs(page));

afterAll(() => closeDemoApp(app, browser));

describe('undo', () => {
  it('moves a lead to Lost and undoes it from the toast: the stage it had comes back', async () => {
    // A lead that is neither Lost nor Won, so its stage is something to come back to.
    await rows().filter({ hasNotText: /Lost|Won|On hold/ }).nth(3).click();
    await panel().getByLabel('Stage').waitFor();
    const before = await stageOf();
    await panel().getByLabel('Stage').selectOption({ label: 'Lost' });
    const dialog = page.getByRole('dialog', { name: /to Lost/ });
    await dialog.getByLabel('Close reason').selectOption('BAD_TIMING');
    await dialog.getByRole('button', { name: 'Move to Lost' }).click();
    await dialog.waitFor({ state: 'detached' });
    await panel().getByText('Lost: Bad timing').waitFor();
    await screenshot(page, 'undo-toast');
    await toast(/^Moved .* to Lost\./).getByRole('button', { name: 'Undo' }).click();
    await toast(new RegExp(`is back in ${before}`)).waitFor();
    await page.waitForFunction((name) => (document.querySelector('[data-testid="lead-panel"] [aria-label="Stage"]') as HTMLSelectElement | null)?.selectedOptions[0]?.textContent === name, before);
    await expect(panel().getByText('Lost: Bad timing').count()).resolves.toBe(0);
    // The timeline shows both moves: the server saw two ordinary changes.
    await panel().locator('[data-kind="event"]', { hasText: `to "${before}"` }).first().waitFor();
  }, 60_000);

  it('takes a tag change back with Ctrl+Z while its toast shows', async () => {
    const tagSelect = panel().getByRole('combobox', { name: 'Tag', exact: true });
    const before = await tagSelect.inputValue();
    const other = await tagSelect.locator('option').evaluateAll((opts, current) => (opts as HTMLOptionElement[]).map((o) => o.value).find((v) => v && v !== current) ?? '', before);
    await tagSelect.selectOption(other);
    await toast(/^Tagged /).waitFor();
    // Focus off the select, so Ctrl+Z is not a text field's own undo.
    await page.locator('body').click({ position: { x: 5, y: 5 } });
    await page.keyboard.press('Control+z');
    await toast(/tag is back/).waitFor();
    await page.waitForFunction((v) => (document.querySelector('[data-testid="lead-panel"] [aria-label="Tag"]') as HTMLSelectElement | null)?.value === v, before);
    await page.keyboard.press('Escape');
  }, 60_000);

  it('undoes a bulk move to On hold for every lead it moved', async () => {
    const candidates = rows().filter({ hasNotText: /Lost|Won|On hold/ });
    const ids: string[] = [];
    for (let i = 20; i < 23; i++) ids.push((await candidates.nth(i).getAttribute('data-lead-id')) ?? '');
    const stageText = (id: string) => page.locator(`.table [data-lead-id="${id}"] .pill`).first().innerText();
    const before = await Promise.all(ids.map(stageText));
    for (const id of ids) await page.locator(`.table [data-lead-id="${id}"] input[type="checkbox"]`).check();
    await page.getByRole('button', { name: 'Move to stage…' }).click();
    const pick = page.getByRole('dialog', { name: 'Move leads to a stage' });
    await pick.getByLabel('Stage').selectOption({ label: 'On hold' });
    await pick.getByRole('button', { name: 'Move' }).click();
    const prompt = page.getByRole('dialog', { name: 'Move the selected leads to On hold' });
    await prompt.getByLabel('Wake date').fill('2031-05-04');
    await prompt.getByRole('button', { name: 'Move to On hold' }).click();
    await prompt.waitFor({ state: 'detached' });
    for (const id of ids) await page.waitForFunction((leadId) => document.querySelector(`.table [data-lead-id="${leadId}"]`)?.textContent?.includes('On hold'), id);
    await toast('Moved 3 leads to On hold.').getByRole('button', { name: 'Undo' }).click();
    await toast('Put 3 leads back.').waitFor();
    for (const [i, id] of ids.entries()) {
      await page.waitForFunction(([leadId, text]) => document.querySelector(`.table [data-lead-id="${leadId}"] .pill`)?.textContent === text, [id, before[i] ?? ''] as const);
    }
    await page.getByRole('button', { name: 'Clear', exact: true }).click();
    expect(page.errors).toEqual([]);
  }, 90_000);
});
