/** Journeys on the leads list: first run into the demo workspace, search, filters, sorting, the
 * command palette and keyboard shortcuts. */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { closeDemoApp, closeDialogs, ensureRendererBuilt, launchBrowser, openDemo, openPage, screenshot, startApp } from './support/app.ts';
import type { RunningApp } from './support/app.ts';

let app: RunningApp;
let browser: Browser;
let page: Page & { errors: string[] };

const rows = () => page.locator('.table [data-lead-id]');
const countText = () => page.getByTestId('leads-count').innerText();

beforeAll(async () => {
  await ensureRendererBuilt();
  app = await startApp();
  browser = await launchBrowser();
  page = await openPage(browser, app.url);
}, 240_000);

afterEach(() => closeDialogs(page));

afterAll(() => closeDemoApp(app, browser));

describe('leads', () => {
  it('first run offers the demo or a sync server, and the demo opens populated', async () => {
    await page.getByRole('heading', { name: 'Welcome to Outreach CRM' }).waitFor();
    await expect(page.getByRole('button', { name: 'Connect' }).isVisible()).resolves.toBe(true);
    await screenshot(page, '01-first-run');
    await openDemo(page, app);
    // The exact size of the workspace, not just what has loaded.
    await page.waitForFunction(() => /^5\d\d leads$/.test(document.querySelector('[data-testid="leads-count"]')?.textContent ?? ''));
    await expect(page.getByTestId('sync-indicator').innerText()).resolves.toContain('Local demo');
    await screenshot(page, '02-leads');
  }, 120_000);

  it('searches by text from the top bar and narrows by tag, stage and campaign', async () => {
    const first = await rows().first().locator('.name').innerText();
    const surname = first.split(' ').slice(-1)[0] ?? first;
    await page.keyboard.press('/');
    await page.keyboard.type(surname);
    await page.waitForFunction((s) => {
      const names = Array.from(document.querySelectorAll('.table [data-lead-id]')).map((r) => r.textContent ?? '');
      return names.length > 0 && names.every((t) => t.toLowerCase().includes(s.toLowerCase()));
    }, surname);
    await expect.poll(countText).toMatch(/^\d+ leads?$/);

    await page.getByRole('button', { name: 'Clear search' }).click();
    await page.getByLabel('Tag', { exact: true }).selectOption({ label: 'Hot' });
    await page.waitForFunction(() => {
      const r = Array.from(document.querySelectorAll('.table [data-lead-id]'));
      return r.length > 0 && r.every((x) => x.textContent?.includes('Hot'));
    });
    const hot = await rows().count();
    expect(hot).toBeGreaterThan(0);

    await page.getByLabel('Tag', { exact: true }).selectOption({ label: 'Uncategorized (no tag)' });
    await page.waitForFunction(() => {
      const r = Array.from(document.querySelectorAll('.table [data-lead-id]'));
      return r.length > 0 && r.every((x) => !/Hot|Warm|Cold|Partner/.test(x.textContent ?? ''));
    });

    await page.getByLabel('Tag', { exact: true }).selectOption('all');
    await page.getByLabel('Pipeline stage').selectOption({ label: 'Meeting booked' });
    await page.waitForFunction(() => {
      const r = Array.from(document.querySelectorAll('.table [data-lead-id]'));
      return (r.length > 0 && r.every((x) => x.textContent?.includes('Meeting booked'))) || document.querySelector('.table .empty') !== null;
    });

    await page.getByLabel('Pipeline stage').selectOption('');
    const campaign = page.getByLabel('Campaign', { exact: true });
    const options = await campaign.locator('option').allInnerTexts();
    const name = options.find((o) => o !== 'All campaigns');
    expect(name).toBeTruthy();
    await campaign.selectOption({ label: name ?? '' });
    // A campaign's leads are those of its lead list, enrolled in it or not yet.
    await page.waitForFunction((n) => {
      const r = Array.from(document.querySelectorAll('.table [data-lead-id]'));
      return r.some((x) => x.textContent?.includes(n)) && r.every((x) => x.textContent?.includes(n) || x.textContent?.includes('Not enrolled'));
    }, name ?? '');
    await screenshot(page, '03-leads-filtered');
    await page.getByRole('button', { name: 'Clear filters' }).click();
    await page.waitForFunction(() => /^5\d\d leads$/.test(document.querySelector('[data-testid="leads-count"]')?.textContent ?? ''));
  }, 120_000);

  it('sorts by a column, both ways', async () => {
    await page.getByRole('columnheader', { name: 'Name' }).click();
    const names = async () => (await rows().locator('.name').allInnerTexts()).slice(0, 10);
    await page.waitForFunction(() => document.querySelector('[aria-sort="ascending"]')?.textContent?.includes('Name'));
    await page.waitForTimeout(300);
    const asc = await names();
    // Names sort the way people read them: case and accents do not change the order.
    const collator = new Intl.Collator('en', { sensitivity: 'base' });
    expect(asc).toEqual([...asc].sort(collator.compare));
    await page.getByRole('columnheader', { name: 'Name' }).click();
    await page.waitForFunction(() => document.querySelector('[aria-sort="descending"]')?.textContent?.includes('Name'));
    await page.waitForTimeout(300);
    const desc = await names();
    expect(desc).toEqual([...desc].sort((a, b) => collator.compare(b, a)));
    expect(desc[0]).not.toBe(asc[0]);
  }, 60_000);

  it('pages through the whole list while scrolling', async () => {
    const viewport = page.getByTestId('leads-viewport');
    const more = () => page.getByTestId('leads-count').getAttribute('data-more');
    for (let i = 0; i < 30 && (await more()) === 'yes'; i++) {
      await viewport.evaluate((el) => el.scrollTo(0, el.scrollHeight));
      await page.waitForTimeout(150);
    }
    expect(await more()).toBe('no');
    const loaded = Number(await page.getByTestId('leads-count').getAttribute('data-loaded'));
    expect(await countText()).toBe(`${loaded} leads`);
    expect(loaded).toBeGreaterThanOrEqual(500);
  }, 60_000);

  it('moves around with keyboard shortcuts and the command palette', async () => {
    await page.locator('body').click({ position: { x: 5, y: 500 } });
    await page.keyboard.press('g');
    await page.keyboard.press('p');
    await page.getByRole('heading', { name: 'Pipeline' }).waitFor();
    await page.keyboard.press('g');
    await page.keyboard.press('t');
    await page.getByRole('heading', { name: 'Tasks' }).waitFor();
    await page.keyboard.press('?');
    await page.getByRole('dialog', { name: 'Keyboard shortcuts' }).waitFor();
    await page.keyboard.press('Escape');
    await page.keyboard.press('Control+k');
    const palette = page.getByRole('dialog', { name: 'Command palette' });
    await palette.waitFor();
    await page.keyboard.type('Aoife');
    await palette.getByRole('option', { name: /Aoife/ }).first().waitFor();
    await screenshot(page, '04-command-palette');
    await page.keyboard.press('ArrowDown');
    // Commands come first; the lead is the only match, so Enter on it opens its panel.
    await palette.getByRole('option', { name: /Aoife/ }).first().click();
    await page.getByTestId('lead-panel').getByRole('heading', { name: /Aoife/ }).waitFor();
    expect(page.errors).toEqual([]);
  }, 60_000);
});
