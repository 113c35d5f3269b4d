/** Journeys on the pipeline board (drag a card, with the same prompts as the lead panel), the task
 * queue, triage of due catch-ups, and settings in the demo workspace. */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Locator, Page } from 'playwright-core';
import { closeDemoApp, closeDialogs, openDemoApp, screenshot } from './support/app.ts';
import type { RunningApp } from './support/app.ts';

let app: RunningApp;
let browser: Browser;
let page: Page & { errors: string[] };

const column = (name: string): Locator => page.locator(`section.column[data-stage="${name}"]`);

beforeAll(async () => ({ app, browser, page } = await openDemoApp()), 240_000);

afterEach(() => closeDialogs(page));

afterAll(() => closeDemoApp(app, browser));

/** The Leads screen's count once it stops changing (a new filter's count arrives after the old one). */
async function settledCount(): Promise<number> {
  let last = '';
  for (let same = 0, tries = 0; same < 3 && tries < 100; tries++) {
    await new Promise((r) => setTimeout(r, 150));
    const now = await page.getByTestId('leads-count').innerText();
    same = now === last && /^[\d,.\s]+ leads?$/.test(now) ? same + 1 : 0;
    last = now;
  }
  return Number(last.replace(/\D/g, ''));
}

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
    await expect(dialog.getByRole('button', { name: 'Move to Lost' }).isDisabled()).resolves.toBe(true);
    await expect(dialog.getByTestId('move-blocked').innerText()).resolves.toBe('Choose why it was lost to move it.');
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
    await expect(dialog.getByRole('button', { name: 'Move to On hold' }).isDisabled()).resolves.toBe(true);
    await expect(dialog.getByTestId('move-blocked').innerText()).resolves.toBe('Choose the day to pick it back up.');
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

  it('fits every stage at 1440 px, counts each column exactly and names the filters it applies', async () => {
    await page.setViewportSize({ width: 1440, height: 900 });
    const board = page.getByTestId('board');
    await column('New').locator('.card').first().waitFor();
    const stages = await page.locator('section.column').count();
    expect(stages).toBe(7);
    // Every column is on screen: no sideways scrolling at a common laptop width.
    await expect(board.evaluate((el) => el.scrollWidth <= el.clientWidth + 1)).resolves.toBe(true);
    // Exact counts (the demo's New stage holds far more than one page of cards).
    const newCount = () => column('New').getByTestId('column-count').innerText();
    await page.waitForFunction(() => /^\d[\d,.\s]*$/.test(document.querySelector('section.column[data-stage="New"] [data-testid="column-count"]')?.textContent ?? ''));
    const total = Number((await newCount()).replace(/\D/g, ''));
    const shown = await column('New').locator('.card').count();
    expect(total).toBeGreaterThan(shown);
    // The same number as the Leads screen filtered to the stage.
    await page.getByRole('button', { name: /^Leads/ }).click();
    await page.getByLabel('Pipeline stage').selectOption('New');
    await page.waitForFunction((n) => document.querySelector('[data-testid="leads-count"]')?.textContent?.replace(/\D/g, '') === String(n), total);
    // A campaign chosen on the Leads screen is named on the board, with a way to clear it, and the
    // column counts what the Leads screen counts for that campaign.
    const campaign = page.getByRole('search', { name: 'Lead filters' }).getByLabel('Campaign');
    const firstCampaign = await campaign.locator('option').nth(1).innerText();
    await campaign.selectOption({ index: 1 });
    const inCampaign = await settledCount();
    await page.getByLabel('Pipeline stage').selectOption('');
    await page.getByRole('button', { name: /^Pipeline/ }).click();
    await page.getByTestId('board-filter-campaign').filter({ hasText: `Campaign: ${firstCampaign}` }).waitFor();
    await page.waitForFunction((n) => document.querySelector('section.column[data-stage="New"] [data-testid="column-count"]')?.textContent?.replace(/\D/g, '') === String(n), inCampaign);
    await screenshot(page, '07b-pipeline-filtered');
    await page.getByRole('button', { name: 'Clear filters' }).click();
    await expect(page.getByTestId('board-filter-summary').innerText()).resolves.toContain('Showing every lead');
    await page.waitForFunction((n) => document.querySelector('section.column[data-stage="New"] [data-testid="column-count"]')?.textContent?.replace(/\D/g, '') === String(n), total);
    // Folding a column keeps its count visible and gives the room to the others.
    await column('Won').getByRole('button', { name: 'Fold Won' }).click();
    await expect(page.locator('section.column.collapsed[data-stage="Won"]').count()).resolves.toBe(1);
    await page.locator('section.column.collapsed[data-stage="Won"]').getByRole('button').click();
    await expect(page.locator('section.column.collapsed').count()).resolves.toBe(0);
    // Cards say who sends to the lead and where its sequence is.
    await expect(page.locator('.card .card-sequence').count()).resolves.toBeGreaterThan(0);
    await screenshot(page, '07c-pipeline-1440');
  }, 90_000);
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
