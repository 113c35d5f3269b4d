/** The screens' keyboard shortcuts (renderer/src/lib/window-keys.ts) act on what the screen shows when
 * the key is pressed, in Chromium with React's production build: a key pressed right after a list
 * arrived, or right after a screen appeared, reaches a handler of that render. (Before, the inbox's
 * `r` pressed just after its list arrived went to the previous render's handler and opened nothing.)
 * Each key is sent from a MutationObserver, the first moment a script can see the new DOM. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { ROOT } from '../../scripts/build-app.ts';
import { launchBrowser } from './support/app.ts';
import type { Probe } from './support/window-keys-page.tsx';

let browser: Browser;
let page: Page;

beforeAll(async () => {
  const esbuild = await import('esbuild');
  const built = await esbuild.build({
    entryPoints: [join(ROOT, 'test', 'e2e', 'support', 'window-keys-page.tsx')],
    bundle: true,
    write: false,
    format: 'iife',
    jsx: 'automatic',
    define: { 'process.env.NODE_ENV': '"production"' },
    logLevel: 'silent',
  });
  browser = await launchBrowser();
  page = await browser.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.setContent('<!doctype html><html><body><div id="root"></div><div id="dialog-root"></div></body></html>');
  await page.addScriptTag({ content: built.outputFiles[0]?.text ?? '' });
  expect(errors).toEqual([]);
}, 60_000);

afterAll(() => browser?.close());

/** Runs `start` in the page and presses `key` as soon as `selector`'s children change. */
const pressOnChange = (selector: string, key: string, start: 'mount' | 'arrive', items: string[] = []): Promise<void> =>
  page.evaluate(
    ({ selector, key, start, items }) =>
      new Promise<void>((resolve) => {
        new MutationObserver((_, observer) => {
          observer.disconnect();
          window.dispatchEvent(new KeyboardEvent('keydown', { key, bubbles: true }));
          resolve();
        }).observe(document.querySelector(selector) as Node, { childList: true });
        const probe = (window as unknown as { probe: Probe }).probe;
        if (start === 'mount') probe.mount();
        else probe.arrive(items);
      }),
    { selector, key, start, items },
  );

const seen = (): Promise<string[]> => page.evaluate(() => (window as unknown as { probe: Probe }).probe.seen);

describe('window key handlers', () => {
  it('hear a key pressed in the screen\'s first frame', async () => {
    await pressOnChange('#root', 'j', 'mount');
    expect(await seen()).toEqual(['j:']);
  });

  it('act on the list the screen shows, pressed the moment it arrived', async () => {
    await pressOnChange('ul', 'r', 'arrive', ['ada', 'grace']);
    await pressOnChange('ul', 'e', 'arrive', ['grace']);
    // The screen was mounted by the test above, which saw 'j:'.
    expect((await seen()).slice(-2)).toEqual(['r:ada,grace', 'e:grace']);
  });

  it('leave the focus in the dialog\'s field the user chose when the owner draws again, and Escape closes it with the newest onClose', async () => {
    await page.evaluate(() => (window as unknown as { probe: Probe }).probe.openDialog());
    await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe('First name');
    await page.getByLabel('Last name').focus();
    for (let i = 1; i <= 3; i++) {
      await page.evaluate(() => (window as unknown as { probe: Probe }).probe.redrawOwner());
      await expect.poll(() => page.getByLabel('Owner renders').innerText()).toBe(String(i));
    }
    expect(await page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe('Last name');
    await page.keyboard.press('Escape');
    await expect.poll(() => page.getByRole('dialog').count()).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { probe: Probe }).probe.closedByRender)).toBe(3);
  });
});
