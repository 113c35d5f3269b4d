/** New or warmed-up account in Chromium: the connect dialog asks, saying the risk of "warmed up" in
 * one sentence, and a connected new account can be switched to its full limits on its card (and
 * back), with social.getAccountLimits' answer shown there. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { closeDemoApp, openDemoApp, screenshot } from './support/app.ts';
import type { RunningApp } from './support/app.ts';

let app: RunningApp;
let browser: Browser;
let page: Page & { errors: string[] };

beforeAll(async () => {
  ({ app, browser, page } = await openDemoApp());
  await page.locator('nav').getByRole('button', { name: /Senders/ }).click();
  await page.locator('.sender-card').first().waitFor();
}, 240_000);

afterAll(() => closeDemoApp(app, browser));

describe('new or warmed-up account', () => {
  it('connects a warmed-up account at its full limits, after the risk is said; a new one ramps up and can be switched', async () => {
    await page.getByRole('button', { name: 'Connect a sender' }).click();
    const dialog = page.getByRole('dialog');
    const choice = dialog.getByTestId('warm-up-choice');
    expect(await choice.getByLabel('New account').isChecked()).toBe(true);
    expect(await dialog.getByTestId('warm-up-risk').count()).toBe(0);
    await choice.getByLabel('Already warmed up').check();
    expect(await dialog.getByTestId('warm-up-risk').innerText()).toMatch(/^Full volume from an account without months of normal sending gets it flagged as spam or restricted/);
    await screenshot(page, 'connect-warmed-up');
    await dialog.getByLabel('Sender name').fill('Wendy Warm');
    await dialog.getByRole('button', { name: 'Connect' }).click();
    const warm = page.locator('.sender-card', { hasText: 'Wendy Warm' });
    await warm.getByTestId('warmed-up').waitFor({ timeout: 15_000 });
    expect(await warm.getByTestId('ramp-up').count()).toBe(0);

    await page.getByRole('button', { name: 'Connect a sender' }).click();
    await page.getByRole('dialog').getByLabel('Sender name').fill('Nick New');
    await page.getByRole('dialog').getByRole('button', { name: 'Connect' }).click();
    const fresh = page.locator('.sender-card', { hasText: 'Nick New' });
    await fresh.getByTestId('ramp-up').waitFor({ timeout: 15_000 });
    expect(await fresh.getByTestId('ramp-up').innerText()).toMatch(/New account ramping up: day 1 of 14, sending at 20% of its limits/);
    await fresh.getByRole('button', { name: 'The account is already warmed up…' }).click();
    expect(await fresh.getByTestId('warm-up-risk').innerText()).toMatch(/flagged as spam or restricted/);
    await fresh.getByRole('button', { name: 'Send at full limits' }).click();
    await fresh.getByTestId('warmed-up').waitFor({ timeout: 15_000 });
    expect(await fresh.getByTestId('ramp-up').count()).toBe(0);
    await screenshot(page, 'sender-warmed-up');
    // Back to new: the ramp-up goes on from where it began.
    await fresh.getByRole('button', { name: 'It is a new account: ramp up' }).click();
    await fresh.getByTestId('ramp-up').waitFor({ timeout: 15_000 });
    expect(page.errors).toEqual([]);
  }, 120_000);
});
