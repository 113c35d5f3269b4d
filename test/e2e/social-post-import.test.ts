/** Journey on "People from a post": read a post's commenters and reactors with a sender, import them
 * as leads into a lead list, and keep going until the sender's daily search budget runs out: the
 * early-stop flags are explained and a read with no budget left says so. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Locator, Page } from 'playwright-core';
import { closeDemoApp, openDemoApp, screenshot } from './support/app.ts';
import type { RunningApp } from './support/app.ts';

let app: RunningApp;
let browser: Browser;
let page: Page & { errors: string[] };

const result = () => page.getByTestId('post-result');

async function has(locator: Locator, text: string | RegExp): Promise<void> {
  await locator.filter({ hasText: text }).first().waitFor({ timeout: 15_000 });
}

/** Searches left for the chosen sender, as the screen shows it. */
async function budgetLeft(): Promise<number> {
  const text = await page.getByTestId('search-budget').innerText();
  const m = /(\d+) of (\d+) searches left today/.exec(text);
  if (!m) throw new Error(`No budget shown: ${text}`);
  return Number(m[1]);
}

async function readPost(url: string): Promise<void> {
  await page.getByLabel('Post URL').fill(url);
  await page.getByRole('button', { name: 'Read post' }).click();
  await has(result(), new RegExp(`Searches left today`));
  // The result is of this read once the button is enabled again.
  await page.getByRole('button', { name: 'Read post' }).waitFor();
}

beforeAll(async () => ({ app, browser, page } = await openDemoApp()), 240_000);

afterAll(() => closeDemoApp(app, browser));

describe('people from a post', () => {
  it('reads commenters and reactors, imports the selected ones as leads, and repeats until the budget runs out', async () => {
    await page.locator('nav').getByRole('button', { name: /From a post/ }).click();
    await page.getByTestId('search-budget').waitFor();
    const start = await budgetLeft();
    expect(start).toBeGreaterThan(0);

    // The first read: people shown with how they engaged, the budget spent.
    await readPost('https://social.example/posts/e2e-launch-0');
    const rows = result().locator('table.people tbody tr');
    await expect.poll(() => rows.count()).toBeGreaterThan(0);
    await expect(result().locator('tr[data-engagement="comment"]').count()).resolves.toBeGreaterThan(0);
    await expect(result().locator('tr[data-engagement="reaction"]').count()).resolves.toBeGreaterThan(0);
    await expect.poll(budgetLeft).toBeLessThan(start);
    await screenshot(page, 'social-post-read');

    // Import everyone but the first person into the list; the outcome counts what was created.
    await result().locator('tbody tr').first().getByRole('checkbox').uncheck();
    await page.getByLabel('Lead list to import into').selectOption({ index: 0 });
    await result().getByRole('button', { name: /^Import \d+ as leads$/ }).click();
    await has(page.getByTestId('import-outcome'), /\d+ new leads? created/);
    const outcome = await page.getByTestId('import-outcome').innerText();
    expect(Number(/(\d+) new lead/.exec(outcome)?.[1])).toBeGreaterThan(0);

    // Keep reading (and importing) other posts until a read stops early for lack of budget.
    let stopped = false;
    for (let i = 1; i <= 12 && !stopped; i++) {
      await readPost(`https://social.example/posts/e2e-launch-${i}`);
      stopped = (await page.getByTestId('early-stop').count()) > 0;
      if (!stopped && (await result().getByRole('button', { name: /^Import \d+ as leads$/ }).isEnabled())) {
        await result().getByRole('button', { name: /^Import \d+ as leads$/ }).click();
        await page.getByTestId('import-outcome').or(page.getByTestId('import-error').getByRole('alert')).first().waitFor();
      }
    }
    expect(stopped).toBe(true);
    const explained = await page.getByTestId('early-stop').innerText();
    expect(explained).toMatch(/daily search budget/);
    expect(explained).toMatch(/Comments: \d+ of \d+ read|Reactions were not read at all \(reactionsSkippedDueToDailyLimit\)|Reactions: \d+ of \d+ read|Nothing was read/);
    await screenshot(page, 'social-budget-ran-out');

    // With nothing left, the next read says so instead of showing an empty list as if nobody engaged.
    if ((await budgetLeft()) > 0) await readPost('https://social.example/posts/e2e-launch-last');
    await readPost('https://social.example/posts/e2e-launch-nothing-left');
    await has(page.getByTestId('early-stop'), /Nothing was read: .* daily search budget \(\d+ searches\) is already used up/);
    await expect.poll(budgetLeft).toBe(0);
    expect(page.errors).toEqual([]);
  }, 180_000);

  it('refuses an address that is not a post with the reason', async () => {
    await page.getByLabel('Post URL').fill('http://not-https.example/post');
    await page.getByRole('button', { name: 'Read post' }).click();
    await has(page.getByTestId('read-error'), /https/);
  }, 30_000);
});
