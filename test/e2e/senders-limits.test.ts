/** Journeys on the senders screen: a daily limit raised above the plan maximum is capped and the cap
 * is explained; today's usage and the search budget show; outreach pauses and resumes; sandbox, SMTP
 * and HTTP-connector senders connect (bad settings refused with the reason). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Locator, Page } from 'playwright-core';
import { closeDemoApp, openDemoApp, screenshot } from './support/app.ts';
import type { RunningApp } from './support/app.ts';

let app: RunningApp;
let browser: Browser;
let page: Page & { errors: string[] };

const dialog = () => page.getByRole('dialog');
const cards = () => page.locator('.sender-card');

async function has(locator: Locator, text: string | RegExp): Promise<void> {
  await locator.filter({ hasText: text }).first().waitFor({ timeout: 15_000 });
}

beforeAll(async () => {
  ({ app, browser, page } = await openDemoApp());
  await page.locator('nav').getByRole('button', { name: /Senders/ }).click();
  await cards().first().waitFor();
}, 240_000);

afterAll(() => closeDemoApp(app, browser));

describe('senders', () => {
  it('caps a daily limit raised above the plan maximum and says so', async () => {
    const card = cards().first();
    const row = card.locator('tr[data-limit="messages"]');
    const planMax = Number(await row.locator('td').last().innerText());
    expect(planMax).toBeGreaterThan(0);
    const input = row.getByLabel('Messages daily limit');
    await input.fill(String(planMax + 350));
    await has(row, `above the plan: it will be lowered to ${planMax}`);
    await card.getByRole('button', { name: 'Save limits' }).click();
    const capped = card.getByTestId('capped');
    await has(capped, `Messages: you asked for ${planMax + 350}, but the account's plan allows at most ${planMax} a day, so the limit is ${planMax}.`);
    await expect.poll(() => input.inputValue()).toBe(String(planMax));
    await screenshot(page, 'senders-limit-capped');

    // Lowering is plain: saved, no cap.
    await input.fill('20');
    await card.getByRole('button', { name: 'Save limits' }).click();
    await has(card.getByTestId('limits-outcome'), `Messages ${planMax} → 20`);
    await expect(card.getByTestId('capped').count()).resolves.toBe(0);
  }, 60_000);

  it("shows today's usage per action and the search budget", async () => {
    const card = cards().first();
    for (const key of ['messages', 'inmails', 'connectionRequests', 'connectionRequestsWithNote', 'comments', 'reactions', 'profileVisits', 'emails']) {
      await card.locator(`tr[data-limit="${key}"]`).waitFor();
    }
    // Remaining today = the limit set above (20) less what was used.
    const cells = card.locator('tr[data-limit="messages"] td');
    await expect
      .poll(async () => {
        const used = Number(await cells.nth(1).innerText());
        const remaining = Number(await cells.nth(2).innerText());
        return Number.isInteger(used) && remaining === Math.max(0, 20 - used);
      })
      .toBe(true);
    await has(card.getByTestId('search-budget'), /\d+ used · \d+ left of \d+/);
  }, 30_000);

  it('pauses and resumes outreach on every campaign', async () => {
    const card = cards().first();
    await card.getByRole('button', { name: 'Pause outreach' }).click();
    await has(card.getByTestId('sender-status'), 'Outreach paused');
    await has(card, 'Outreach is paused on every campaign');
    await card.getByRole('button', { name: 'Resume outreach' }).click();
    await has(card.getByTestId('sender-status'), 'Available');
  }, 30_000);

  it('connects a sandbox sender, an SMTP mailbox (password kept off the workspace) and refuses a bad connector URL', async () => {
    const before = await cards().count();
    await page.getByRole('button', { name: 'Connect a sender' }).click();
    await dialog().getByLabel('Sender name').fill('E2E Sandbox');
    await dialog().getByRole('button', { name: 'Connect' }).click();
    await dialog().waitFor({ state: 'detached' });
    await expect.poll(() => cards().count()).toBe(before + 1);
    await has(page.locator('.sender-card').filter({ hasText: 'E2E Sandbox' }), 'Sandbox network');

    await page.getByRole('button', { name: 'Connect a sender' }).click();
    await dialog().getByRole('tab', { name: 'Email (SMTP)' }).click();
    await dialog().getByLabel('Sender name').fill('E2E Mailbox');
    await dialog().getByLabel('SMTP host').fill('smtp.example.com');
    await dialog().getByLabel('SMTP user').fill('sdr@example.com');
    await dialog().getByLabel('SMTP password').fill('kept-on-this-desktop');
    await dialog().getByLabel('From address').fill('Sam SDR <sdr@example.com>');
    await screenshot(page, 'senders-connect-smtp');
    await dialog().getByRole('button', { name: 'Connect' }).click();
    // The password goes to this desktop's credential store (never into the replicated workspace),
    // so there is nothing to warn about and the dialog closes.
    await dialog().waitFor({ state: 'detached' });
    await has(page.locator('.sender-card').filter({ hasText: 'E2E Mailbox' }), 'Email (SMTP)');

    await page.getByRole('button', { name: 'Connect a sender' }).click();
    await dialog().getByRole('tab', { name: 'HTTP connector' }).click();
    await dialog().getByLabel('Sender name').fill('E2E Connector');
    await dialog().getByLabel('Connector URL').fill('ftp://connector.example.com');
    await dialog().getByRole('button', { name: 'Connect' }).click();
    await has(dialog().getByRole('alert'), /baseUrl/);
    await dialog().getByLabel('Connector URL').fill('https://connector.example.com/api');
    await dialog().getByRole('button', { name: 'Connect' }).click();
    await dialog().waitFor({ state: 'detached' });
    await has(page.locator('.sender-card').filter({ hasText: 'E2E Connector' }), 'HTTP connector');
    await screenshot(page, 'senders');
    expect(page.errors).toEqual([]);
  }, 60_000);
});
