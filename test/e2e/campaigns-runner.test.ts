/**
 * Journey: start a campaign of the demo workspace and watch the runner work through the sandbox
 * network: sends, then replies, arrive in the campaign's metrics, its activity and the lead's
 * timeline. The demo's senders are on the sandbox's demo pace (people answer within a minute), so
 * the app runs on the real clock: backend, runner, sandbox and UI as a user gets them. The demo
 * comes with ten days of history, so the journey watches the numbers grow.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Locator, Page } from 'playwright-core';
import { closeDemoApp, openDemoApp, screenshot } from './support/app.ts';
import type { RunningApp } from './support/app.ts';

const DAYS = ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday'];

let app: RunningApp;
let browser: Browser;
let page: Page & { errors: string[] };
let sentBefore = 0;
let repliesBefore = 0;

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

beforeAll(async () => ({ app, browser, page } = await openDemoApp()), 240_000);

afterAll(() => closeDemoApp(app, browser));

describe('a running campaign on the sandbox network', () => {
  it('opens every day all day, starts, and sends arrive in the metrics and the runner activity', async () => {
    await page.locator('nav').getByRole('button', { name: /Campaigns/ }).click();
    await page.getByRole('link', { name: 'Event follow-up: SaaS Summit' }).click();
    await page.getByTestId('campaign-metrics').waitFor();
    await expect.poll(() => metricValue('sent')).toBeGreaterThan(0);
    sentBefore = await metricValue('sent');
    repliesBefore = await metricValue('replies');

    await openAllDayAndStart();

    await page.getByRole('tab', { name: 'Results & activity' }).click();
    await expect.poll(() => metricValue('sent'), { timeout: 90_000, interval: 1000 }).toBeGreaterThan(sentBefore);
    await has(page.getByTestId('recent-activity').locator('li[data-type="sent"]'), /Message/, 30_000);
    // The queue says why the others wait (spacing, the sequence's wait, ...), never nothing.
    await has(page.getByTestId('waiting-summary'), /\d/);
    await screenshot(page, 'campaign-running-sends');
    // A sender paused on this campaign while its leads run: they wait, and the queue says why; then
    // it is resumed. (Done now: at demo pace the campaign's sequences may all end before the replies.)
    // The sender that holds the most running leads (the campaign's per-sender load), polled until a
    // first send has assigned one.
    const busySender = (): Promise<string | null> =>
      page.evaluate(async () => {
        const list = await window.outreach?.call('campaigns.getBasic', { search: 'Event follow-up' });
        const c = list?.ok ? list.value.basicCampaigns[0] : undefined;
        if (!c) throw new Error('no campaign');
        const r = await window.outreach?.call('campaigns.getEnrollments', { campaignId: c.id, limit: 1 });
        const held = r?.ok ? r.value.senders.filter((s) => s.onCampaign && s.active > 0).sort((x, y) => y.active - x.active) : [];
        return held[0]?.name ?? null;
      });
    await expect.poll(busySender, { timeout: 30_000, message: 'a sender of the campaign holds running leads' }).not.toBeNull();
    const busy = await busySender();
    expect(busy).not.toBeNull();
    await page.getByRole('tab', { name: 'Senders' }).click();
    await page.getByLabel(`${busy ?? ''} sends on this campaign`).uncheck();
    await page.getByRole('tab', { name: 'Results & activity' }).click();
    await has(page.getByTestId('waiting-summary'), /Sender paused: \d+/);
    await screenshot(page, 'campaign-waiting-sender-paused');
    await page.getByRole('tab', { name: 'Senders' }).click();
    await page.getByLabel(`${busy ?? ''} sends on this campaign`).check();
    await page.getByRole('tab', { name: 'Results & activity' }).click();
  }, 180_000);

  it('replies from the sandbox arrive in the metrics, the activity and the lead timeline', async () => {
    await expect.poll(() => metricValue('replies'), { timeout: 240_000, interval: 2000 }).toBeGreaterThan(repliesBefore);
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

    await page.getByRole('button', { name: 'Pause campaign' }).click();
    await page.locator('.campaign-header .run-pill.paused').waitFor();
    expect(page.errors).toEqual([]);
  }, 300_000);

  it('removing a sender explains the leads in conversation with it, and a previewed sender change moves them', async () => {
    await page.getByRole('button', { name: 'Back to all campaigns' }).click();
    await page.getByRole('link', { name: 'Q4 outbound: Heads of Sales' }).click();
    await page.getByTestId('campaign-metrics').waitFor();
    await expect.poll(() => metricValue('accepted')).toBeGreaterThanOrEqual(0);
    const acceptedBefore = await metricValue('accepted');
    await openAllDayAndStart();
    // Connection requests go out and people accept them: those leads are now in conversation.
    await page.getByRole('tab', { name: 'Results & activity' }).click();
    // Alex first works the conversations already due (InMails, messages), then new requests.
    await expect.poll(() => metricValue('accepted'), { timeout: 480_000, interval: 2000 }).toBeGreaterThan(acceptedBefore);
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
