/** Journeys on the pipeline board (drag a card, with the same prompts as the lead panel), the task
 * queue, triage of due catch-ups, and settings in the demo workspace. */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Locator, Page } from 'playwright-core';
import { closeDialogs, ensureRendererBuilt, launchBrowser, openDemo, openPage, screenshot, startApp } from './support/app.ts';
import type { RunningApp } from './support/app.ts';

let app: RunningApp;
let browser: Browser;
let page: Page & { errors: string[] };

const column = (name: string): Locator => page.locator(`section.column[data-stage="${name}"]`);

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

async function dragFirstCard(from: string, to: string): Promise<{ id: string; name: string }> {
  const card = column(from).locator('.card').first();
  const id = (await card.getAttribute('data-lead-id')) ?? '';
  const name = await card.locator('.name').innerText();
  await card.dragTo(column(to).locator('.column-body'));
  return { id, name };
}

describe('pipeline board', () => {
  it('asks for a close reason when a card is dragged to Lost, and refuses without one', async () => {
    // Wide enough for every column: a drag needs the source and the target on screen.
    await page.setViewportSize({ width: 1920, height: 1000 });
    await page.getByRole('button', { name: /^Pipeline/ }).click();
    await column('New').locator('.card').first().waitFor();
    await screenshot(page, '07-pipeline');
    const lead = await dragFirstCard('New', 'Lost');
    const dialog = page.getByRole('dialog', { name: `Move ${lead.name} to Lost` });
    await dialog.waitFor();
    await dialog.getByRole('button', { name: 'Move to Lost' }).click();
    await expect(dialog.getByRole('alert').innerText()).resolves.toContain('needs a closeReason');
    await expect(column('Lost').locator(`[data-lead-id="${lead.id}"]`).count()).resolves.toBe(0);
    await dialog.getByLabel('Close reason').selectOption('COMPETITOR');
    await dialog.getByRole('button', { name: 'Move to Lost' }).click();
    await column('Lost').locator(`[data-lead-id="${lead.id}"]`).waitFor();
    await column('New').locator(`[data-lead-id="${lead.id}"]`).waitFor({ state: 'detached' });
  }, 60_000);

  it('asks for a wake date when a card is dragged to On hold', async () => {
    const lead = await dragFirstCard('New', 'On hold');
    const dialog = page.getByRole('dialog', { name: `Move ${lead.name} to On hold` });
    await dialog.waitFor();
    await dialog.getByLabel('Wake date').fill('');
    await dialog.getByRole('button', { name: 'Move to On hold' }).click();
    await expect(dialog.getByRole('alert').innerText()).resolves.toContain('needs a wakeAt date');
    await dialog.getByLabel('Wake date').fill('2031-01-15');
    await dialog.getByRole('button', { name: 'Move to On hold' }).click();
    await column('On hold').locator(`[data-lead-id="${lead.id}"]`).waitFor();
    await column('New').locator(`[data-lead-id="${lead.id}"]`).waitFor({ state: 'detached' });
  }, 60_000);

  it('moves a card to an ordinary stage without asking', async () => {
    const lead = await dragFirstCard('New', 'Contacted');
    await column('Contacted').locator(`[data-lead-id="${lead.id}"]`).waitFor();
    await expect(page.getByRole('dialog').count()).resolves.toBe(0);
    await page.setViewportSize({ width: 1440, height: 900 });
  }, 60_000);
});

describe('tasks and triage', () => {
  it('lists my tasks, completes one from the queue and shows it under Completed', async () => {
    await page.keyboard.press('g');
    await page.keyboard.press('t');
    await page.getByRole('heading', { name: 'Tasks' }).waitFor();
    const list = page.getByTestId('task-list');
    const teammate = list.locator('[data-kind="task"]', { hasText: 'case study from the fintech pilot' });
    await teammate.waitFor();
    await screenshot(page, '08-tasks');
    await teammate.getByRole('button', { name: 'Complete' }).click();
    await teammate.waitFor({ state: 'detached' });
    await page.getByRole('tab', { name: 'Completed' }).click();
    await list.locator('[data-kind="task"]', { hasText: 'case study from the fintech pilot' }).waitFor();
  }, 60_000);

  it('shows an overdue task under Overdue and Due today only when due today', async () => {
    // A task due an hour ago, created on the first lead of the list.
    await page.keyboard.press('g');
    await page.keyboard.press('l');
    await page.locator('.table [data-lead-id]').first().click();
    const panel = page.getByTestId('lead-panel');
    await panel.getByRole('tab', { name: 'Task' }).click();
    await panel.getByLabel('Task text').fill('Chase the signed order form');
    const anHourAgo = new Date(Date.now() - 3_600_000);
    const pad = (n: number) => String(n).padStart(2, '0');
    const local = `${anHourAgo.getFullYear()}-${pad(anHourAgo.getMonth() + 1)}-${pad(anHourAgo.getDate())}T${pad(anHourAgo.getHours())}:${pad(anHourAgo.getMinutes())}`;
    await panel.getByLabel('Due date').fill(local);
    await panel.getByRole('button', { name: 'Create task' }).click();
    await panel.locator('[data-kind="task"]', { hasText: 'Chase the signed order form' }).waitFor();
    await page.keyboard.press('Escape');
    await page.keyboard.press('g');
    await page.keyboard.press('t');
    await page.getByRole('tab', { name: 'Overdue' }).click();
    const overdue = page.getByTestId('task-list').locator('[data-kind="task"]', { hasText: 'Chase the signed order form' });
    await overdue.waitFor();
    await expect(overdue.locator('.due.overdue').count()).resolves.toBe(1);
    await page.getByRole('tab', { name: 'Due today' }).click();
    const sameDay = anHourAgo.getDate() === new Date().getDate();
    await page.waitForTimeout(500);
    await expect(page.getByTestId('task-list').locator('[data-kind="task"]', { hasText: 'Chase the signed order form' }).count()).resolves.toBe(sameDay ? 1 : 0);
  }, 60_000);

  it('puts a lead whose catch-up date has passed in triage, and takes it out when snoozed', async () => {
    await page.keyboard.press('g');
    await page.keyboard.press('l');
    const row = page.locator('.table [data-lead-id]').nth(3);
    const id = (await row.getAttribute('data-lead-id')) ?? '';
    await row.click();
    const panel = page.getByTestId('lead-panel');
    await panel.getByLabel('Catch-up date').fill('2024-01-10T09:00');
    await panel.getByRole('button', { name: 'Save' }).first().click();
    await panel.getByText('due since', { exact: false }).waitFor();
    await page.keyboard.press('Escape');
    await page.keyboard.press('g');
    await page.keyboard.press('r');
    const item = page.getByTestId('triage-list').locator(`[data-lead-id="${id}"]`);
    await item.waitFor();
    await screenshot(page, '09-triage');
    await item.getByRole('button', { name: 'In a week' }).click();
    await item.waitFor({ state: 'detached' });
  }, 60_000);

  it('shows settings: the demo connection, members, and API keys explained as server-side', async () => {
    await page.keyboard.press('g');
    await page.keyboard.press('s');
    await page.getByRole('heading', { name: 'Workspace and connection' }).waitFor();
    await page.getByRole('cell', { name: 'Jordan Lee' }).waitFor();
    const keys = page.locator('section[aria-labelledby="keys-title"]');
    await expect(keys.getByRole('alert').first().innerText()).resolves.toContain('Connect to a sync server');
    await expect(page.getByTestId('sync-section').innerText()).resolves.toContain('not connected to a server');
    await screenshot(page, '10-settings');
    expect(page.errors).toEqual([]);
  }, 60_000);
});
