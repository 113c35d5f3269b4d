/** The UI benchmark's browser as an Electron window has it: without Chromium's own address-bar popup
 * (a WebUI page in a renderer of its own, preloaded for each new window), and still with every
 * feature playwright-core switches off, in the one `--disable-features` switch Chromium keeps. */
import { readFileSync, readdirSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { launchBrowser } from './support/app.ts';

/** The command lines of this process's children (playwright-core starts Chromium from it). */
function childCommandLines(): string[][] {
  const out: string[][] = [];
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      // "pid (comm) state ppid ...": comm may hold spaces, so read after its closing parenthesis.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === process.pid) out.push(readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean));
    } catch {
      // A process that ended meanwhile.
    }
  }
  return out;
}

describe('the benchmark\'s browser', () => {
  let browser: Browser | undefined;
  afterEach(async () => {
    await browser?.close();
    browser = undefined;
  });

  it('opens windows without the browser\'s own UI, and keeps playwright\'s switched-off features', async () => {
    browser = await launchBrowser({ asInElectron: true });
    const page = await (await browser.newContext()).newPage();
    await page.goto('data:text/html,<p>lead</p>');
    // The popup's page is made as the window opens; give it the time it takes under load.
    await new Promise((r) => setTimeout(r, 1000));
    const session = await browser.newBrowserCDPSession();
    const { targetInfos } = await session.send('Target.getTargets');
    expect(targetInfos.map((t) => `${t.type} ${t.url}`)).toEqual(['page data:text/html,<p>lead</p>']);
    const chromium = childCommandLines().find((args) => args.some((a) => a.startsWith('--remote-debugging-pipe')));
    // Chromium applies the last switch alone: it holds every name of the ones before it (playwright's).
    const switches = (chromium ?? []).filter((a) => a.startsWith('--disable-features=')).map((a) => a.slice('--disable-features='.length).split(','));
    const applied = switches.at(-1) ?? [];
    expect(applied).toEqual(expect.arrayContaining([...switches.slice(0, -1).flat(), 'PaintHolding', 'HttpsUpgrades', 'WebUIOmniboxPopup', 'PreloadTopChromeWebUI']));
  }, 60_000);
});
