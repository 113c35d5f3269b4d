/** The reply inbox in Chromium: the demo's replies wait there with a count in the sidebar; the
 * keyboard moves through them, opens the lead's conversation to answer, and marks them done. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { closeDemoApp, openDemoApp, screenshot } from './support/app.ts';
import type { RunningApp } from './support/app.ts';

let app: RunningApp;
let browser: Browser;
let page: Page & { errors: string[] };

beforeAll(async () => ({ app, browser, page } = await openDemoApp()), 240_000);

afterAll(() => closeDemoApp(app, browser));

const count = async (): Promise<number> => Number((await page.getByTestId('nav-count-inbox').innerText()).trim());

describe('reply inbox', () => {
  it('lists the replies with a sidebar count; e marks done and the count falls; Back to inbox undoes', async () => {
    await page.getByTestId('nav-count-inbox').waitFor();
    const before = await count();
    expect(before).toBeGreaterThan(0);
    await page.keyboard.press('g');
    await page.keyboard.press('i');
    await page.getByRole('heading', { name: 'Inbox' }).waitFor();
    const list = page.getByRole('list', { name: 'Replies' });
    await expect.poll(() => list.getByRole('listitem').count()).toBe(before);
    await screenshot(page, 'inbox-waiting');
    const firstText = await list.getByRole('listitem').first().innerText();
    await page.keyboard.press('j');
    await page.keyboard.press('k');
    await page.keyboard.press('e');
    await expect.poll(count).toBe(before - 1);
    await expect.poll(async () => (await list.getByRole('listitem').first().innerText()) !== firstText).toBe(true);

    await page.getByRole('tab', { name: 'Done' }).click();
    await expect.poll(() => list.getByRole('listitem').count()).toBe(1);
    await list.getByRole('button', { name: 'Back to inbox' }).click();
    await expect.poll(count).toBe(before);

    // r opens the lead's conversation to answer in the thread, also when pressed the moment the
    // Waiting list is drawn (the first moment a script sees it: a MutationObserver). The key once
    // went to the handler of the render before, which held the Done tab's empty list.
    const pressed = page.evaluate(
      (n) =>
        new Promise<void>((resolve) => {
          const el = document.querySelector('[data-testid="inbox-list"]') as Element;
          new MutationObserver((_, observer) => {
            if (el.querySelectorAll('[role="listitem"]').length !== n) return;
            observer.disconnect();
            document.body.dispatchEvent(new KeyboardEvent('keydown', { key: 'r', bubbles: true, cancelable: true }));
            resolve();
          }).observe(el, { childList: true });
        }),
      before,
    );
    await page.getByRole('tab', { name: 'Waiting' }).click();
    await pressed;
    await page.getByTestId('lead-panel').waitFor({ timeout: 10_000 });
    expect(page.errors).toEqual([]);
  }, 180_000);
});
