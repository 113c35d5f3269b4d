/** The leads table's first rows come in the page's HTML (the web host draws them into it, before any
 * script runs), or are drawn by the page's entry in plain DOM when the page comes without them (a
 * slow backend: here the test takes them out of the page), before the app's chunk (React and the
 * leads screen) has run; React's table takes their place without a visible change: the same rows,
 * text and geometry, and what the person did meanwhile (scroll, focus, a checked row, a key, a
 * click) carried over. The app's chunk (and, where said, the entry) is held back by the test (its
 * request waits) so the first paint can be looked at alone. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { RENDERER_DIST } from '../../scripts/build-app.ts';
import { closeDemoApp, ensureRendererBuilt, launchBrowser, openDemo, openPage, screenshot } from './support/app.ts';
import { startApp } from './support/app.ts';
import type { RunningApp } from './support/app.ts';

let app: RunningApp;
let browser: Browser;
/** The file names of the app's chunk (app/mount.tsx) and of the page's module script (boot.ts, which
 * imports the entry, main.tsx) in the build. */
let mountFile = '';
let entryFile = '';
/** A lead whose name is markup: shown as text, first (the newest). */
const EVIL = '<img src=x onerror="document.title=1">';

beforeAll(async () => {
  await ensureRendererBuilt();
  const manifest = JSON.parse(readFileSync(join(RENDERER_DIST, '.vite', 'manifest.json'), 'utf8')) as Record<string, { file: string; name?: string; isDynamicEntry?: boolean; isEntry?: boolean }>;
  mountFile = Object.values(manifest).find((c) => c.name === 'mount' && c.isDynamicEntry)?.file.split('/').pop() ?? '';
  entryFile = Object.values(manifest).find((c) => c.isEntry)?.file.split('/').pop() ?? '';
  expect(mountFile).not.toBe('');
  expect(entryFile).not.toBe('');
  app = await startApp();
  browser = await launchBrowser();
  // The first run: the demo workspace, so that the next windows open on it (rows with stages, tags
  // and sequences).
  const first = await openPage(browser, app.url);
  await openDemo(first, app);
  await first.evaluate(async (name) => {
    const list = await window.outreach?.call('campaigns.getBasic', {});
    const c = list?.ok ? list.value.basicCampaigns[0] : undefined;
    if (!c) throw new Error('no campaign');
    const r = await window.outreach?.call('campaigns.leads.create', { leadGroupId: c.leadGroupId, leads: [{ firstName: name, lastName: 'Markup', company: '"><b>Bold</b>', socialUrl: 'https://www.linkedin.com/in/markup-name' }] });
    if (!r?.ok) throw new Error(r ? r.error.message : 'no bridge');
  }, EVIL);
  await first.context().close();
}, 240_000);
afterAll(() => closeDemoApp(app, browser));

/** Where the first rows come from: the page's HTML (the web host's), or the page's entry (the page
 * without them, as the web host sends it when the backend is slow: here the test takes them out of
 * the page before the entry runs). */
type Source = 'html' | 'entry';

/** Holds a request of the context until the returned function is called. */
async function hold(context: BrowserContext, file: string): Promise<() => void> {
  let release = () => undefined as void;
  const held = new Promise<void>((r) => (release = r));
  await context.route(`**/assets/${file}`, async (route) => {
    await held;
    await route.continue();
  });
  return release;
}

/** A new window on the open workspace whose app chunk is held until `release()` (and its entry until
 * `releaseEntry()` when `holdEntry`). */
async function openHeld(source: Source, opts: { holdEntry?: boolean; hash?: string; pausedClock?: boolean } = {}): Promise<{ context: BrowserContext; page: Page; errors: string[]; release: () => void; releaseEntry: () => void; mountEvaluated: () => Promise<boolean> }> {
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
  const release = await hold(context, mountFile);
  const holdEntry = opts.holdEntry === true || source === 'entry';
  const releaseEntry = holdEntry ? await hold(context, entryFile) : () => undefined;
  const page = await context.newPage();
  // The page's timers and animation frames on Playwright's clock, stopped: they come when the test
  // runs the clock.
  if (opts.pausedClock === true) {
    await page.clock.install();
    await page.clock.pauseAt(Date.now() + 1_000);
  }
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  page.on('dialog', (d) => {
    errors.push(`dialog: ${d.message()}`);
    void d.dismiss();
  });
  // The page's load waits for its scripts: with the entry held, only for the answer to begin.
  await page.goto(`${app.url}${opts.hash ?? ''}`, { waitUntil: holdEntry ? 'commit' : 'load' });
  if (source === 'entry') {
    // The page parsed (its entry, a module, runs after that): without the first screen it brought.
    await page.waitForFunction(() => document.readyState !== 'loading');
    expect(await page.evaluate(() => {
      const layer = document.querySelector('[data-first-paint]');
      layer?.remove();
      return layer !== null;
    })).toBe(true);
    releaseEntry();
  }
  // React renders into #root: while the app's chunk has not run, nothing is there.
  const mountEvaluated = () => page.evaluate(() => (document.getElementById('root')?.childElementCount ?? 0) > 0);
  return { context, page, errors, release, releaseEntry, mountEvaluated };
}

/** The first rows, once the page's entry has drawn or adopted them (they answer clicks and keys). */
const liveRows = '[data-first-paint][data-live] .table [data-lead-id]';

type Box = { x: number; y: number; w: number; h: number };
type Drawn = { rows: { id: string; box: Box; cells: { text: string; title: string; box: Box }[] }[]; headers: { text: string; box: Box }[]; nav: string[]; h1: Box | null; count: string };

/** What the leads table and its frame show: the rows in view (id, cells' text, tooltip and place),
 * the headers, the navigation and the count. */
function drawn(page: Page): Promise<Drawn> {
  return page.evaluate(() => {
    const box = (e: Element): Box => {
      const r = e.getBoundingClientRect();
      return { x: Math.round(r.x), y: Math.round(r.y), w: Math.round(r.width), h: Math.round(r.height) };
    };
    const visible = (e: Element) => {
      const s = getComputedStyle(e);
      return s.visibility !== 'hidden' && e.closest('#root[style*="hidden"]') === null;
    };
    const viewport = Array.from(document.querySelectorAll('.table .viewport')).find(visible);
    if (!viewport) return { rows: [], headers: [], nav: [], h1: null, count: '' };
    const bottom = viewport.getBoundingClientRect().bottom;
    const rows = Array.from(viewport.querySelectorAll('[data-lead-id]'))
      .filter((r) => r.getBoundingClientRect().top < bottom)
      .map((r) => ({ id: r.getAttribute('data-lead-id') ?? '', box: box(r), cells: Array.from(r.children).map((c) => ({ text: (c as HTMLElement).innerText, title: c.getAttribute('title') ?? '', box: box(c) })) }))
      .sort((a, b) => a.box.y - b.box.y);
    const screen = viewport.closest('.app');
    return {
      rows,
      headers: Array.from(viewport.querySelectorAll('.thead [role="columnheader"]')).map((h) => ({ text: (h as HTMLElement).innerText, box: box(h) })),
      // Labels and keys (a badge, a live count, may come and go at any time).
      nav: Array.from(screen?.querySelectorAll('nav button') ?? []).map((b) => Array.from(b.querySelectorAll('span:not(.badge), kbd')).map((x) => (x as HTMLElement).innerText).join(' ')),
      h1: screen?.querySelector('h1') ? box(screen.querySelector('h1') as Element) : null,
      count: (screen?.querySelector('.screen-header .sub') as HTMLElement | null)?.innerText ?? '',
    };
  });
}

const takenOver = (page: Page) => page.waitForFunction(() => !document.querySelector('[data-first-paint]') && document.querySelector('#root .table [data-lead-id]') !== null, undefined, { timeout: 60_000 });

/** The font stacks of the app's style sheet (app.css): families every desktop has, the system's own
 * face first. The browser asks the system for each family it tries, one call at a time, before it
 * can lay out the first frame; a family the machine lacks costs a call for nothing. */
const DESKTOP_STACKS = ['system-ui, sans-serif', 'Menlo, Consolas, monospace'];

/** Every element under `root` (and its generated content) is set in one of the desktop stacks, and
 * each stack's text is drawn in one face: no character sent the browser looking through the system's
 * fonts for one that has it (the platform fonts Chromium drew each text and generated content in). */
async function expectSystemFonts(page: Page, root: string): Promise<string[]> {
  const stacks = await page.evaluate((sel) => {
    const out = new Set<string>();
    for (const e of Array.from(document.querySelectorAll(`${sel}, ${sel} *`))) {
      out.add(getComputedStyle(e).fontFamily);
      for (const p of ['::before', '::after']) if (!['none', 'normal'].includes(getComputedStyle(e, p).content)) out.add(getComputedStyle(e, p).fontFamily);
    }
    return [...out].map((f) => f.replaceAll('"', ''));
  }, root);
  for (const stack of stacks) expect(DESKTOP_STACKS, 'a font stack of the page').toContain(stack);
  const cdp = await page.context().newCDPSession(page);
  try {
    await cdp.send('DOM.enable');
    await cdp.send('CSS.enable');
    const { root: doc } = await cdp.send('DOM.getDocument', { depth: -1, pierce: true });
    const { nodeId } = await cdp.send('DOM.querySelector', { nodeId: doc.nodeId, selector: root });
    type DomNode = { nodeId: number; nodeType: number; nodeName: string; nodeValue: string; children?: DomNode[]; pseudoElements?: DomNode[] };
    const find = (n: DomNode): DomNode | undefined => (n.nodeId === nodeId ? n : (n.children ?? []).map(find).find((x) => x !== undefined));
    // Each text, and each generated content, with the element whose font stack it is set in.
    const texts: { node: number; element: number }[] = [];
    const walk = (n: DomNode, parent: DomNode | null) => {
      if (parent && n.nodeType === 3 && n.nodeValue.trim() !== '') texts.push({ node: n.nodeId, element: parent.nodeId });
      if (n.nodeName.startsWith('::')) texts.push({ node: n.nodeId, element: n.nodeId });
      for (const c of [...(n.pseudoElements ?? []), ...(n.children ?? [])]) walk(c, n);
    };
    const top = find(doc as DomNode);
    if (top) walk(top, null);
    expect(texts.length).toBeGreaterThan(100);
    const stackOf = new Map<number, string>();
    await Promise.all([...new Set(texts.map((t) => t.element))].map(async (element) => {
      const { computedStyle } = await cdp.send('CSS.getComputedStyleForNode', { nodeId: element });
      stackOf.set(element, computedStyle.find((p) => p.name === 'font-family')?.value ?? '');
    }));
    const faces = new Map<string, Set<string>>();
    await Promise.all(texts.map(async ({ node, element }) => {
      const { fonts } = await cdp.send('CSS.getPlatformFontsForNode', { nodeId: node });
      const stack = stackOf.get(element) ?? '';
      faces.set(stack, new Set([...(faces.get(stack) ?? []), ...fonts.map((f) => f.familyName)]));
    }));
    for (const [stack, used] of faces) expect(used.size, `${stack} drawn in ${[...used].join(', ')}`).toBeLessThanOrEqual(1);
  } finally {
    await cdp.detach();
  }
  return stacks;
}

type Held = Awaited<ReturnType<typeof openHeld>>;

/** The header once the count has answered: "503 leads", not the loaded page's "100+ leads". */
const COUNTED = /^[\d,]+ leads?$/;

/** Runs `check` on a fresh page whose app chunk is held back; the page must log no error. */
async function withHeld(source: Source, check: (held: Held) => Promise<void>, opts: { holdEntry?: boolean; hash?: string; pausedClock?: boolean } = {}): Promise<void> {
  const held = await openHeld(source, opts);
  try {
    await check(held);
    expect(held.errors).toEqual([]);
  } finally {
    await held.context.close();
  }
}

describe.each<Source>(['html', 'entry'])('first rows before the app chunk, from the %s', (source) => {
  it('draws real rows of the first page before the app chunk has run, and React takes them over unchanged', async () => {
    await withHeld(source, async ({ page, release, mountEvaluated }) => {
    await page.locator(liveRows).first().waitFor({ timeout: 60_000 });
    expect(await mountEvaluated()).toBe(false);
    // The count is not waited for by the first paint: it answers later and is drawn into the plain
    // layer then (at the next frame), still before the app chunk runs. Until then the layer may say
    // "100+ leads" (the loaded page), which is not the count.
    await expect.poll(async () => (await drawn(page)).count, { timeout: 30_000 }).toMatch(COUNTED);
    expect(await mountEvaluated()).toBe(false);
    const before = await drawn(page);
    // Real data: the rows are the backend's first page in the table's default order.
    const page1 = await page.evaluate(async () => {
      const r = await window.outreach?.call('campaigns.leads.search', { tagId: 'all', sortBy: 'createdAt', sortOrder: 'desc', limit: 100 });
      if (!r?.ok) throw new Error('search failed');
      return r.value.leads.map((l) => ({ id: l.id, name: l.fullName || l.email || l.leadIdentifier }));
    });
    expect(before.rows.length).toBeGreaterThan(8);
    expect(before.rows.map((r) => r.id)).toEqual(page1.slice(0, before.rows.length).map((l) => l.id));
    expect(before.rows.map((r) => r.cells[1]?.text.split('\n')[0])).toEqual(page1.slice(0, before.rows.length).map((l) => l.name));
    // Readable: the first row's name is in view, not zero-sized or covered.
    await expect(page.locator('[data-first-paint] .table [data-lead-id] .name').first().isVisible()).resolves.toBe(true);
    await screenshot(page, `first-rows-${source}`);

    release();
    await takenOver(page);
    expect(await mountEvaluated()).toBe(true);
    const after = await drawn(page);
    await screenshot(page, 'first-rows-react');
    expect(after.headers).toEqual(before.headers);
    expect(after.nav).toEqual(before.nav);
    expect(after.h1).toEqual(before.h1);
    expect(after.count).toBe(before.count);
    expect(after.rows).toEqual(before.rows);
    });
  }, 120_000);

  it('draws what changes while the app chunk loads: a lead created then is the first row and the count counts it', async () => {
    await withHeld(source, async ({ page, mountEvaluated }) => {
      await page.locator(liveRows).first().waitFor({ timeout: 60_000 });
      await expect.poll(async () => (await drawn(page)).count, { timeout: 30_000 }).toMatch(COUNTED);
      const before = await drawn(page);
      const digits = (count: string) => Number(count.replace(/\D/g, ''));
      // A lead comes in (another window, the sync) while the app's chunk is still held (one person per
      // source: the same profile again would be the same lead).
      const id = await page.evaluate(async (source) => {
        const list = await window.outreach?.call('campaigns.getBasic', {});
        const c = list?.ok ? list.value.basicCampaigns[0] : undefined;
        if (!c) throw new Error('no campaign');
        const r = await window.outreach?.call('campaigns.leads.create', { leadGroupId: c.leadGroupId, leads: [{ firstName: 'Latecomer', lastName: 'Plain', company: 'Frame Co', socialUrl: `https://www.linkedin.com/in/latecomer-plain-${source}` }] });
        if (!r?.ok) throw new Error(r ? r.error.message : 'no bridge');
        return r.value.leadIds[0] ?? '';
      }, source);
      expect(id).not.toBe('');
      // The plain layer draws the live answers that follow: the new lead first, the count one more.
      await expect.poll(async () => (await drawn(page)).rows[0]?.id, { timeout: 30_000 }).toBe(id);
      await expect.poll(async () => digits((await drawn(page)).count), { timeout: 30_000 }).toBe(digits(before.count) + 1);
      expect((await drawn(page)).rows[0]?.cells[1]?.text).toContain('Latecomer Plain');
      expect(await mountEvaluated()).toBe(false);
    });
  }, 120_000);

  it('hands over the scroll position, the focus, a checked row and a key given to the first rows', async () => {
    await withHeld(source, async ({ page, release }) => {
    await page.locator(liveRows).first().waitFor({ timeout: 60_000 });
    const plainRows = page.locator('[data-first-paint] .table [data-lead-id]');
    const fourth = await plainRows.nth(3).getAttribute('data-lead-id');
    const first = await plainRows.nth(0).getAttribute('data-lead-id');
    await plainRows.nth(3).locator('input[type="checkbox"]').click();
    await page.locator('[data-first-paint] .table .viewport').evaluate((v) => {
      v.scrollTop = 100;
      v.focus();
    });
    // x checks the row under the keyboard cursor (the first): given now, done by React's table.
    await page.keyboard.press('x');
    release();
    await takenOver(page);
    const state = () => page.evaluate((ids) => {
      const v = document.querySelector('#root [data-testid="leads-viewport"]') as HTMLElement;
      const selected = (id: string | null) => {
        const row = document.querySelector(`#root .table [data-lead-id="${id}"]`);
        return [row?.getAttribute('aria-selected'), (row?.querySelector('input[type="checkbox"]') as HTMLInputElement | null)?.checked];
      };
      return { scrollTop: v.scrollTop, focused: document.activeElement === v, fourth: selected(ids[1] ?? null), first: selected(ids[0] ?? null) };
    }, [first, fourth]);
    await expect.poll(state).toEqual({ scrollTop: 100, focused: true, fourth: ['true', true], first: ['true', true] });
    });
  }, 120_000);

  it('replays a click given to the first paint on the app once it has taken over', async () => {
    await withHeld(source, async ({ page, release }) => {
    await page.locator(liveRows).first().waitFor({ timeout: 60_000 });
    await page.locator('[data-first-paint] nav').getByRole('button', { name: /Pipeline/ }).click();
    release();
    await page.getByRole('heading', { name: 'Pipeline', exact: true }).waitFor({ timeout: 30_000 });
    expect(await page.locator('[data-first-paint]').count()).toBe(0);
    });
  }, 120_000);
});

describe('first rows in the page\'s HTML', () => {
  it('carries the first page\'s rows, painted before any script has run, escaped, and the entry adopts them', async () => {
    // The page itself, as the browser gets it: the rows in it, never to be cached.
    const res = await fetch(app.url);
    const html = await res.text();
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('content-security-policy')).toMatch(/script-src 'self';/);
    const served = [...html.matchAll(/data-lead-id="([^"]+)"/g)].map((m) => m[1]);
    expect(served.length).toBeGreaterThan(8);
    expect(html).not.toContain(EVIL);

    await withHeld('html', async ({ page, release, releaseEntry, mountEvaluated }) => {
      // No script has run (the entry is held): the rows are painted from the HTML alone.
      await page.locator('[data-first-paint] .table [data-lead-id] .name').first().waitFor({ timeout: 60_000 });
      expect(await page.evaluate(() => window.outreach === undefined && document.getElementById('root')?.childElementCount === 0)).toBe(true);
      expect(await page.locator('[data-first-paint][data-live]').count()).toBe(0);
      const before = await drawn(page);
      expect(before.rows.length).toBeGreaterThan(8);
      expect(before.rows.map((r) => r.id)).toEqual(served.slice(0, before.rows.length));
      expect(before.count).toMatch(/\d/);
      // A lead's name is markup, shown as text: no element made of it.
      expect(before.rows.some((r) => r.cells[1]?.text.split('\n')[0] === `${EVIL} Markup`)).toBe(true);
      expect(await page.locator('[data-first-paint] img, [data-first-paint] b').count()).toBe(0);
      await expect(page.locator('[data-first-paint] .table [data-lead-id] .name').first().isVisible()).resolves.toBe(true);
      await screenshot(page, 'first-rows-html-before-scripts');
      // The entry adopts that layer (the same element, now live) instead of drawing its own.
      await page.evaluate(() => document.querySelector('[data-first-paint]')?.setAttribute('data-test-served', ''));
      releaseEntry();
      await page.locator(liveRows).first().waitFor({ timeout: 60_000 });
      expect(await page.locator('[data-first-paint][data-test-served]').count()).toBe(1);
      expect(await page.locator('[data-first-paint]').count()).toBe(1);
      expect(await mountEvaluated()).toBe(false);
      // React takes them over as before.
      release();
      await takenOver(page);
      const after = await drawn(page);
      expect(after.rows.map((r) => r.id)).toEqual(before.rows.map((r) => r.id));
      expect(after.rows).toEqual(before.rows);
      expect(after.headers).toEqual(before.headers);
    }, { holdEntry: true });
  }, 120_000);

  it('goes when the window opens on another screen (the host does not see the hash): the entry removes it', async () => {
    await withHeld('html', async ({ page, release, releaseEntry }) => {
      await page.waitForFunction(() => document.readyState !== 'loading');
      expect(await page.locator('[data-first-paint]').count()).toBe(1);
      releaseEntry();
      await expect.poll(() => page.locator('[data-first-paint]').count(), { timeout: 30_000 }).toBe(0);
      release();
      await page.getByRole('heading', { name: 'Inbox', exact: true }).waitFor({ timeout: 30_000 });
      expect(await page.locator('[data-first-paint]').count()).toBe(0);
    }, { holdEntry: true, hash: '#/inbox' });
  }, 120_000);
  it('starts the app\'s chunk as soon as the entry has adopted the painted rows, without waiting for a frame or a timer', async () => {
    await withHeld('html', async ({ page, release, releaseEntry }) => {
      // The page's clock is stopped (its timers and animation frames come only when the test says).
      await page.locator('[data-first-paint] .table [data-lead-id] .name').first().waitFor({ timeout: 60_000 });
      release();
      releaseEntry();
      // The page's module script has run (the page is loaded): it imports the entry after a frame,
      // then a task, or a second.
      await expect.poll(() => page.evaluate(() => document.readyState), { timeout: 30_000 }).toBe('complete');
      await page.clock.runFor(1_000);
      // No frame or timer comes now; the socket's answers and React's scheduler still run. React's
      // table takes the rows over: the entry started the app's chunk as it adopted them.
      await page.locator('#root .table [data-lead-id]').first().waitFor({ timeout: 30_000 });
      expect(await page.locator('[data-first-paint]').count()).toBe(0);
      await page.clock.resume();
    }, { holdEntry: true, pausedClock: true });
  }, 120_000);

  it('draws its text in the system\'s fonts: no family a desktop lacks, no glyph from a fallback font, no font file', async () => {
    await withHeld('html', async ({ page, release, releaseEntry }) => {
      await page.locator('[data-first-paint] .table [data-lead-id] .name').first().waitFor({ timeout: 60_000 });
      // The first screen from the HTML alone, then React's.
      // One stack: the browser looks for each family of each stack before the first frame.
      expect(await expectSystemFonts(page, '[data-first-paint]')).toEqual([DESKTOP_STACKS[0]]);
      releaseEntry();
      release();
      await takenOver(page);
      await expectSystemFonts(page, '#root');
      // No web font in the style sheets, none fetched.
      expect(await page.evaluate(() => {
        let faces = 0;
        document.fonts.forEach(() => faces++);
        return faces;
      })).toBe(0);
      expect(await page.evaluate(() => performance.getEntriesByType('resource').filter((e) => /\.(woff2?|ttf|otf)$/.test(e.name) || (e as PerformanceResourceTiming).initiatorType === 'css').map((e) => e.name))).toEqual([]);
    }, { holdEntry: true });
  }, 120_000);
});
