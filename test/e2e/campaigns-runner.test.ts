/**
 * Journey: start a campaign of the demo workspace and watch the runner work through the sandbox
 * network: sends, then replies, arrive in the campaign's metrics, its activity and the lead's
 * timeline. The people of the sandbox answer hours after a message (as people do), so the web host
 * runs with its wall clock 4000 times faster (test/e2e/campaigns-fast-clock.mjs): one real second is
 * about an hour. Everything else is the real app: backend, runner, sandbox, UI.
 */
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Locator, Page } from 'playwright-core';
import { ensureRendererBuilt, launchBrowser, openDemo, openPage, screenshot, startApp } from './support/app.ts';
import type { RunningApp } from './support/app.ts';

const SPEED = 4000;
const DAYS = ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday'];

let app: RunningApp;
let browser: Browser;
let page: Page & { errors: string[] };

const metric = (id: string) => page.locator(`[data-metric="${id}"] .value`);
const metricValue = async (id: string): Promise<number> => Number((await metric(id).innerText()).replace(/[^\d]/g, '') || 'NaN');

async function has(locator: Locator, text: string | RegExp, timeout = 15_000): Promise<void> {
  await locator.filter({ hasText: text }).first().waitFor({ timeout });
}

/** Opens the campaign's sending window every day all day (so the test never waits for a weekday),
 * then starts it after the confirmation. */
async function openAllDayAndStart(): Promise<void> {
  await page.getByRole('tab', { name: 'Schedule' }).click();
  await page.getByLabel('Time zone').fill('UTC');
  for (const d of DAYS) {
    const label = d.charAt(0).toUpperCase() + d.slice(1);
    const row = page.locator(`tr[data-day="${d}"]`);
    await row.getByLabel(`${label} enabled`).check();
    await row.getByLabel(`${label} start`).fill('00:00');
    await row.getByLabel(`${label} end`).fill('23:59');
  }
  await page.getByRole('button', { name: 'Save schedule' }).click();
  await page.getByText('Schedule saved.').first().waitFor();

  await page.getByRole('button', { name: 'Start campaign…' }).click();
  await page.getByRole('dialog').getByTestId('readiness-ok').waitFor();
  await page.getByRole('dialog').getByRole('button', { name: 'Start and message people' }).click();
  await page.locator('.campaign-header .run-pill.running').waitFor();
}

beforeAll(async () => {
  await ensureRendererBuilt();
  const clock = pathToFileURL(join(import.meta.dirname, 'campaigns-fast-clock.mjs')).href;
  app = await startApp({ env: { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${clock}`.trim(), E2E_CLOCK_SPEED: String(SPEED) } });
  browser = await launchBrowser();
  page = await openPage(browser, app.url);
  await openDemo(page, app);
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await app?.stop();
});

describe('a running campaign on the sandbox network', () => {
  it('opens every day all day, starts, and sends arrive in the metrics and the runner activity', async () => {
    await page.locator('nav').getByRole('button', { name: /Campaigns/ }).click();
    await page.getByRole('link', { name: 'Event follow-up: SaaS Summit' }).click();
    await page.getByTestId('campaign-metrics').waitFor();
    await expect.poll(() => metricValue('sent')).toBe(0);

    await openAllDayAndStart();

    await page.getByRole('tab', { name: 'Results & activity' }).click();
    await expect.poll(() => metricValue('sent'), { timeout: 90_000, interval: 1000 }).toBeGreaterThan(0);
    await has(page.getByTestId('recent-activity').locator('li[data-type="sent"]'), /Message/, 30_000);
    // The queue says why the others wait (spacing, the sequence's wait, ...), never nothing.
    await has(page.getByTestId('waiting-summary'), /\d/);
    await screenshot(page, 'campaign-running-sends');
  }, 180_000);

  it('replies from the sandbox arrive in the metrics, the activity and the lead timeline', async () => {
    await expect.poll(() => metricValue('replies'), { timeout: 240_000, interval: 2000 }).toBeGreaterThan(0);
    const rate = await metric('replyRate').innerText();
    expect(rate).toMatch(/^\d+(\.\d)?%$/);
    expect(rate).not.toBe('0%');

    const reply = page.getByTestId('recent-activity').locator('li[data-type="reply"]').first();
    await reply.waitFor({ timeout: 30_000 });
    await screenshot(page, 'campaign-running-replies');
    const who = await reply.locator('a').first().innerText();
    await reply.locator('a').first().click();

    const panel = page.getByTestId('lead-panel');
    await has(panel.locator('h2'), who);
    // On the timeline: what the runner sent and the lead's reply.
    await has(panel.getByTestId('timeline').locator('[data-kind="message"]'), /Reply/);
    await has(panel.getByTestId('timeline').locator('[data-kind="message"]'), /message/i);
    // And in the conversation, the reply in the thread.
    await panel.getByTestId('conversation').locator('.bubble[data-direction="in"]').first().waitFor();
    await screenshot(page, 'campaign-reply-on-timeline');

    await panel.getByRole('button', { name: 'Close lead' }).click();

    // A sender paused on this campaign: its leads wait, and the queue says why.
    await page.getByRole('tab', { name: 'Senders' }).click();
    await page.getByLabel('Kenji Watanabe sends on this campaign').uncheck();
    await page.getByRole('tab', { name: 'Results & activity' }).click();
    await has(page.getByTestId('waiting-summary'), /Sender paused: \d+/);
    await screenshot(page, 'campaign-waiting-sender-paused');
    await page.getByRole('button', { name: 'Pause campaign' }).click();
    await page.locator('.campaign-header .run-pill.paused').waitFor();
    expect(page.errors).toEqual([]);
  }, 300_000);

  it('removing a sender explains the leads in conversation with it, and a previewed sender change moves them', async () => {
    await page.getByRole('button', { name: 'Back to all campaigns' }).click();
    await page.getByRole('link', { name: 'Q4 outbound: Heads of Sales' }).click();
    await page.getByTestId('campaign-metrics').waitFor();
    await openAllDayAndStart();
    // Connection requests go out and people accept them: those leads are now in conversation.
    await page.getByRole('tab', { name: 'Results & activity' }).click();
    await expect.poll(() => metricValue('accepted'), { timeout: 180_000, interval: 2000 }).toBeGreaterThan(0);
    await page.getByRole('button', { name: 'Pause campaign' }).click();
    await page.locator('.campaign-header .run-pill.paused').waitFor();

    await page.getByRole('tab', { name: 'Senders' }).click();
    const alex = page.locator('[data-testid="campaign-senders"] tbody tr').filter({ hasText: 'Alex Rivera' });
    const inConversation = alex.locator('td.num').nth(1);
    await expect.poll(async () => Number(await inConversation.innerText())).toBeGreaterThan(0);
    const talking = Number(await inConversation.innerText());

    // A second sender joins; it cannot send the InMail step, which is said (the add still happens).
    await page.getByLabel('Sender to add').selectOption({ label: 'Kenji Watanabe (sandbox)' });
    await page.getByRole('button', { name: 'Add to campaign' }).click();
    await has(page.getByTestId('campaign-senders').locator('.notice.warn'), /Kenji Watanabe cannot perform .*InMail needs a Premium account/);

    // Removing Alex: the preview says who goes back to the campaign and who stays in conversation.
    await alex.getByRole('button', { name: 'Remove…' }).click();
    const preview = page.getByRole('dialog').getByTestId('in-conversation');
    await has(preview, new RegExp(`${talking} leads? (is|are) already in conversation with Alex Rivera`));
    await has(preview, /stay with Alex Rivera and wait until you move them/);
    await screenshot(page, 'campaign-remove-sender-preview');
    await page.getByRole('dialog').getByRole('button', { name: 'Remove sender' }).click();
    await page.getByRole('dialog').waitFor({ state: 'detached' });

    const removed = page.getByTestId('removed-senders');
    await has(removed, new RegExp(`Alex Rivera holds \\d+ leads? \\(${talking} in conversation\\)`));
    await removed.getByRole('button', { name: 'Move them…' }).click();
    const dialog = page.getByRole('dialog');
    await expect.poll(() => dialog.getByLabel('Move leads from').locator('option:checked').innerText()).toMatch(/^Alex Rivera \(removed\)/);
    await dialog.getByLabel('Move leads to').selectOption({ label: 'Kenji Watanabe' });
    const willMove = dialog.locator('[data-count="changedCount"] strong');
    await willMove.waitFor();
    const n = Number(await willMove.innerText());
    expect(n).toBeGreaterThan(0);
    await screenshot(page, 'campaign-move-leads-preview');
    await dialog.getByRole('button', { name: `Move ${n} lead${n === 1 ? '' : 's'}` }).click();
    await dialog.waitFor({ state: 'detached' });
    await expect.poll(() => removed.count()).toBe(0);
    const kenji = page.locator('[data-testid="campaign-senders"] tbody tr').filter({ hasText: 'Kenji Watanabe' });
    await expect.poll(async () => Number(await kenji.locator('td.num').first().innerText())).toBeGreaterThanOrEqual(n);
    await screenshot(page, 'campaign-senders');
    expect(page.errors).toEqual([]);
  }, 300_000);
});
