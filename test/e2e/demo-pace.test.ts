/**
 * The demo keeps its promise: open it at whatever hour the test runs, press Start on its campaigns,
 * and within two minutes sends go out, a connection request is accepted and a reply arrives (the
 * demo's senders are on the sandbox's demo pace and its windows cover every hour of the user's
 * zone). Then the reply is answered from the inbox, through the conversation's confirmation.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { closeDemoApp, openDemoApp, screenshot } from './support/app.ts';
import type { RunningApp } from './support/app.ts';

const TWO_MINUTES = 120_000;

let app: RunningApp;
let browser: Browser;
let page: Page & { errors: string[] };

const metricValue = async (id: string): Promise<number> => Number((await page.locator(`[data-metric="${id}"] .value`).innerText()).replace(/[^\d]/g, '') || 'NaN');
const inboxCount = async (): Promise<number> => {
  const badge = page.getByTestId('nav-count-inbox');
  return (await badge.count()) === 0 ? 0 : Number((await badge.innerText()).trim());
};

async function start(name: string): Promise<void> {
  await page.locator('nav').getByRole('button', { name: /Campaigns/ }).click();
  const back = page.getByRole('button', { name: 'Back to all campaigns' });
  if (await back.isVisible()) await back.click();
  await page.getByRole('link', { name }).click();
  await page.getByTestId('campaign-metrics').waitFor();
  await page.getByRole('button', { name: 'Start campaign…' }).click();
  await page.getByRole('dialog').getByTestId('readiness-ok').waitFor();
  await page.getByRole('dialog').getByRole('button', { name: 'Start and message people' }).click();
  await page.locator('.campaign-header .run-pill.running').waitFor();
  await page.getByRole('tab', { name: 'Results & activity' }).click();
}

beforeAll(async () => ({ app, browser, page } = await openDemoApp()), 240_000);

afterAll(() => closeDemoApp(app, browser));

describe('the demo at demo pace', () => {
  it('Start: sends, an accept and a reply within two minutes, answered from the inbox', async () => {
    const repliesWaiting = await inboxCount();

    await start('Q4 outbound: Heads of Sales');
    await expect.poll(() => metricValue('accepted')).toBeGreaterThanOrEqual(0);
    const requestsBefore = await metricValue('requests');
    const acceptedBefore = await metricValue('accepted');
    await start('Event follow-up: SaaS Summit');
    await expect.poll(() => metricValue('sent')).toBeGreaterThanOrEqual(0);
    const sentBefore = await metricValue('sent');
    const startedAt = Date.now();

    await expect.poll(() => metricValue('sent'), { timeout: TWO_MINUTES, interval: 1000 }).toBeGreaterThan(sentBefore);
    await expect.poll(inboxCount, { timeout: Math.max(1000, TWO_MINUTES - (Date.now() - startedAt)), interval: 1000 }).toBeGreaterThan(repliesWaiting);
    await screenshot(page, 'demo-pace-event-follow-up');

    await page.getByRole('button', { name: 'Back to all campaigns' }).click();
    await page.getByRole('link', { name: 'Q4 outbound: Heads of Sales' }).click();
    await page.getByRole('tab', { name: 'Results & activity' }).click();
    // Demo-paced senders act seconds apart, so a new request and its accept fit in the two minutes.
    const left = () => Math.max(1000, TWO_MINUTES - (Date.now() - startedAt));
    await expect.poll(() => metricValue('requests'), { timeout: left(), interval: 1000 }).toBeGreaterThan(requestsBefore);
    await expect.poll(() => metricValue('accepted'), { timeout: left(), interval: 1000 }).toBeGreaterThan(acceptedBefore);
    await screenshot(page, 'demo-pace-q4-outbound');

    // Answer the newest reply from the inbox: r opens its conversation with the cursor in the reply box.
    await page.keyboard.press('g');
    await page.keyboard.press('i');
    const list = page.getByRole('list', { name: 'Replies' });
    await list.getByRole('listitem').first().waitFor();
    const who = await list.getByRole('listitem').first().locator('.meta strong').innerText();
    await page.keyboard.press('r');
    const conversation = page.getByTestId('conversation');
    await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe('Direct message');
    await page.keyboard.type('Thanks! Does Thursday at 10:00 work for you?');
    await conversation.getByRole('button', { name: 'Send…' }).click();
    await page.getByRole('dialog').filter({ hasText: `Send this message to ${who}?` }).waitFor();
    await page.getByRole('dialog').getByRole('button', { name: 'Send message' }).click();
    await conversation.locator('.bubble[data-direction="out"]', { hasText: 'Does Thursday at 10:00 work' }).first().waitFor({ timeout: 60_000 });
    await screenshot(page, 'demo-pace-answered');
    expect(page.errors).toEqual([]);
  }, 720_000);
});
