/** Journeys in the lead panel: stage moves that need a close reason or a wake date, the task
 * lifecycle, and notes (your own editable, a teammate's not). */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { closeDemoApp, closeDialogs, openDemoApp, screenshot } from './support/app.ts';
import type { RunningApp } from './support/app.ts';

let app: RunningApp;
let browser: Browser;
let page: Page & { errors: string[] };

const panel = () => page.getByTestId('lead-panel');

beforeAll(async () => {
  ({ app, browser, page } = await openDemoApp());
  // The newest lead is one the teammate (Jordan Lee) worked: it carries their note and task.
  await page.locator('.table [data-lead-id]').first().click();
  await panel().getByText('Met at SaaStr last spring', { exact: false }).waitFor();
}, 240_000);

afterEach(() => closeDialogs(page));

afterAll(() => closeDemoApp(app, browser));

describe('lead detail', () => {
  it("lets you edit your own note and not a teammate's", async () => {
    const theirs = panel().locator('[data-kind="note"]', { hasText: 'Met at SaaStr' });
    await expect(theirs.getByRole('button', { name: 'Edit' }).isDisabled()).resolves.toBe(true);
    await expect(theirs.innerText()).resolves.toContain('Only the author can edit');
    // The rule holds below the UI too: the operation itself refuses, in words.
    const noteId = await theirs.getAttribute('data-note-id');
    const refusal = await page.evaluate(async (id) => {
      const b = window.outreach;
      if (!b || !id) return null;
      return b.call('leadActivities.update', { activityId: id, content: 'rewritten by someone else' });
    }, noteId);
    expect(refusal).toMatchObject({ ok: false, error: { code: 'NOT_AUTHOR', message: 'Only the author of a note may edit it.' } });
    await expect(theirs.innerText()).resolves.toContain('Met at SaaStr last spring');

    await panel().getByLabel('Note text').fill('Called, left a voicemail.');
    await panel().getByRole('button', { name: 'Add note' }).click();
    await panel().locator('[data-kind="note"]', { hasText: 'Called, left a voicemail.' }).waitFor();
    const mineId = await panel().locator('[data-kind="note"]', { hasText: 'Called, left a voicemail.' }).getAttribute('data-note-id');
    const mine = panel().locator(`[data-note-id="${mineId}"]`);
    await mine.getByRole('button', { name: 'Edit' }).click();
    await mine.getByLabel('Edit note').fill('Called twice, left a voicemail; try email next.');
    await mine.getByRole('button', { name: 'Save' }).click();
    await page.waitForFunction((id) => {
      const el = document.querySelector(`[data-note-id="${id}"]`);
      return el !== null && el.querySelector('textarea') === null && el.querySelector('.content')?.textContent === 'Called twice, left a voicemail; try email next.';
    }, mineId);
    await expect(mine.innerText()).resolves.toContain('edited');
  }, 60_000);

  it('creates a task, completes it, reopens it, cancels it and reopens it again', async () => {
    await panel().getByRole('tab', { name: 'Task' }).click();
    await panel().getByLabel('Task text').fill('Send the pricing one-pager');
    await panel().getByLabel('Due date').fill('2031-05-04T10:30');
    await panel().getByRole('button', { name: 'Create task' }).click();
    const task = panel().locator('[data-kind="task"]', { hasText: 'Send the pricing one-pager' });
    await task.waitFor();
    const status = () => task.getAttribute('data-status');
    await expect(status()).resolves.toBe('open');
    await expect(task.innerText()).resolves.toContain('for you');

    await task.getByRole('button', { name: 'Complete' }).click();
    await page.waitForFunction(() => document.querySelector('[data-kind="task"][data-status="completed"]') !== null);
    await expect(task.getByRole('button', { name: 'Complete' }).count()).resolves.toBe(0);
    await task.getByRole('button', { name: 'Reopen' }).click();
    await page.waitForFunction(() => Array.from(document.querySelectorAll('[data-kind="task"]')).some((t) => t.textContent?.includes('pricing one-pager') && t.getAttribute('data-status') === 'open'));
    await task.getByRole('button', { name: 'Cancel task' }).click();
    await page.waitForFunction(() => Array.from(document.querySelectorAll('[data-kind="task"]')).some((t) => t.textContent?.includes('pricing one-pager') && t.getAttribute('data-status') === 'cancelled'));
    await task.getByRole('button', { name: 'Reopen' }).click();
    await page.waitForFunction(() => Array.from(document.querySelectorAll('[data-kind="task"]')).some((t) => t.textContent?.includes('pricing one-pager') && t.getAttribute('data-status') === 'open'));

    // Editing: only changed fields are sent; the new text shows.
    await task.getByRole('button', { name: 'Edit' }).click();
    await task.getByLabel('Task text').fill('Send the pricing one-pager and the case study');
    await task.getByRole('button', { name: 'Save' }).click();
    await panel().locator('[data-kind="task"]', { hasText: 'and the case study' }).waitFor();

    // A teammate's task: anyone may complete it, only its creator may cancel, edit or delete it.
    const theirs = panel().locator('[data-kind="task"]', { hasText: 'case study from the fintech pilot' });
    await expect(theirs.getByRole('button', { name: 'Cancel task' }).count()).resolves.toBe(0);
    await expect(theirs.getByRole('button', { name: 'Complete' }).isEnabled()).resolves.toBe(true);
    await screenshot(page, '05-lead-detail');
  }, 60_000);

  it('demands a close reason to move the lead to Lost, then moves it', async () => {
    await panel().getByLabel('Stage').selectOption({ label: 'Lost' });
    const dialog = page.getByRole('dialog', { name: /to Lost/ });
    await dialog.waitFor();
    await expect(dialog.getByRole('button', { name: 'Move to Lost' }).isDisabled()).resolves.toBe(true);
    await expect(dialog.getByTestId('move-blocked').innerText()).resolves.toBe('Choose why it was lost to move it.');
    await expect(panel().getByLabel('Stage').inputValue()).resolves.not.toBe(await panel().getByLabel('Stage').locator('option', { hasText: 'Lost' }).getAttribute('value'));
    await screenshot(page, '06-lost-needs-reason');
    await dialog.getByLabel('Close reason').selectOption('NOT_INTERESTED');
    await dialog.getByRole('button', { name: 'Move to Lost' }).click();
    await dialog.waitFor({ state: 'detached' });
    await panel().getByText('Lost: Not interested').waitFor();
    await panel().locator('[data-kind="event"]', { hasText: 'to "Lost"' }).waitFor();
  }, 60_000);

  it('demands a wake date to move the lead to On hold, then sets it as the catch-up date', async () => {
    await panel().getByLabel('Stage').selectOption({ label: 'On hold' });
    const dialog = page.getByRole('dialog', { name: /to On hold/ });
    await dialog.waitFor();
    await dialog.getByLabel('Wake date').fill('');
    await expect(dialog.getByRole('button', { name: 'Move to On hold' }).isDisabled()).resolves.toBe(true);
    await expect(dialog.getByTestId('move-blocked').innerText()).resolves.toBe('Choose the day to pick it back up.');
    await dialog.getByLabel('Wake date').fill('2031-03-02');
    await dialog.getByRole('button', { name: 'Move to On hold' }).click();
    await dialog.waitFor({ state: 'detached' });
    await page.waitForFunction(() => (document.querySelector('[aria-label="Catch-up date"]') as HTMLInputElement | null)?.value.startsWith('2031-03-02'));
    const stageLabel = await panel().getByLabel('Stage').evaluate((el) => (el as HTMLSelectElement).selectedOptions[0]?.textContent);
    expect(stageLabel).toBe('On hold');
    // The table row follows without a reload.
    const id = await page.locator('.table [data-lead-id].open').getAttribute('data-lead-id');
    await page.waitForFunction((leadId) => document.querySelector(`.table [data-lead-id="${leadId}"]`)?.textContent?.includes('On hold'), id);
    expect(page.errors).toEqual([]);
  }, 60_000);
});
