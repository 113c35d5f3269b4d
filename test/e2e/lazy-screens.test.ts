/** Code splitting: the page's first screen (the leads table) loads without the other screens' code,
 * in the build (what the first chunks hold, from the build's manifest and source maps) and in the
 * browser (which scripts it fetched before the first row showed); then each screen, reached by its
 * keyboard shortcut, loads its chunk and draws, and so does the lead panel. */
import { readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { RENDERER_DIST, ROOT } from '../../scripts/build-app.ts';
import { closeDemoApp, ensureRendererBuilt, launchBrowser, openDemo, openPage, startApp } from './support/app.ts';
import type { RunningApp } from './support/app.ts';

/** Screens loaded on demand: source, shortcut key (after g), heading. */
const LAZY_SCREENS = [
  ['src/screens/duplicates/DuplicatesScreen.tsx', 'd', 'Duplicates'],
  ['src/screens/pipeline/PipelineBoard.tsx', 'p', 'Pipeline'],
  ['src/screens/inbox/InboxScreen.tsx', 'i', 'Inbox'],
  ['src/screens/tasks/TasksScreen.tsx', 't', 'Tasks'],
  ['src/screens/triage/TriageScreen.tsx', 'r', 'Triage'],
  ['src/screens/campaigns/CampaignsScreen.tsx', 'c', 'Campaigns'],
  ['src/screens/senders/SendersScreen.tsx', 'e', 'Senders'],
  ['src/screens/social/SocialScreen.tsx', 'o', 'People from a post'],
  ['src/screens/settings/SettingsScreen.tsx', 's', 'Settings'],
] as const;
/** Code the first screen must not load: the other screens' components (the navigation uses two
 * small helpers of the tasks and senders folders, the .ts files), the leads screen's CSV import. */
const NOT_FIRST = /^renderer\/src\/screens\/(duplicates|pipeline|inbox|tasks|triage|campaigns|senders|social|settings|lead)\/[^/]+\.tsx$|^renderer\/src\/screens\/leads\/ImportDialog\.tsx$|node_modules\/papaparse\//;

type ManifestChunk = { file: string; name?: string; src?: string; isEntry?: boolean; isDynamicEntry?: boolean; imports?: string[]; dynamicImports?: string[] };

let app: RunningApp;
let browser: Browser;
let page: Page & { errors: string[] };
/** The scripts the page had asked for when the first row of the table was inserted. */
let fetchedBeforeFirstRow: string[] = [];

beforeAll(async () => {
  await ensureRendererBuilt();
  app = await startApp();
  browser = await launchBrowser();
  page = await openPage(browser, 'about:blank');
  // Runs before the page's own scripts: the time the first row was inserted.
  await page.addInitScript({
    content: `new MutationObserver((_, o) => { if (document.querySelector('.table [data-lead-id]')) { o.disconnect(); window.__firstRowAt = performance.now(); } }).observe(document, { subtree: true, childList: true });`,
  });
  await page.goto(app.url);
  await openDemo(page, app);
  fetchedBeforeFirstRow = await page.evaluate(() => {
    const at = (window as unknown as { __firstRowAt: number }).__firstRowAt;
    return performance.getEntriesByType('resource').filter((e) => e.name.endsWith('.js') && e.startTime <= at).map((e) => e.name.split('/').pop() ?? '');
  });
}, 240_000);
afterAll(() => closeDemoApp(app, browser));

function manifest(): Record<string, ManifestChunk> {
  return JSON.parse(readFileSync(join(RENDERER_DIST, '.vite', 'manifest.json'), 'utf8')) as Record<string, ManifestChunk>;
}

/** The page's module script (boot.ts), the entry it imports once the first screen is painted
 * (main.tsx), the app's chunk (app/mount.tsx, which the entry imports at once) and every chunk they
 * import statically. */
function firstChunks(m: Record<string, ManifestChunk>): string[] {
  const entry = Object.entries(m).find(([, c]) => c.isEntry);
  const main = Object.entries(m).find(([, c]) => c.name === 'main' && c.isDynamicEntry);
  const mount = Object.entries(m).find(([, c]) => c.name === 'mount' && c.isDynamicEntry);
  expect(entry, 'the build has an entry chunk').toBeDefined();
  expect(main, 'main.tsx is a chunk of its own').toBeDefined();
  expect(mount, 'app/mount.tsx is a chunk of its own').toBeDefined();
  const out = new Set<string>();
  const add = (key: string) => {
    const c = m[key];
    if (!c || out.has(c.file)) return;
    out.add(c.file);
    for (const i of c.imports ?? []) add(i);
  };
  add(entry?.[0] ?? '');
  add(main?.[0] ?? '');
  add(mount?.[0] ?? '');
  return [...out];
}

describe('lazily loaded screens', () => {
  it('the build: the first chunks hold none of the other screens, each of which is a chunk of its own', () => {
    const m = manifest();
    for (const [src] of LAZY_SCREENS) expect(m[src]?.isDynamicEntry, `${src} is loaded on demand`).toBe(true);
    expect(m['src/screens/lead/LeadPanel.tsx']?.isDynamicEntry).toBe(true);
    expect(m['src/screens/leads/ImportDialog.tsx']?.isDynamicEntry).toBe(true);
    const first = firstChunks(m);
    // Source maps name sources relative to the map's folder: made relative to the repository.
    const sources = first.flatMap((file) => {
      const map = join(RENDERER_DIST, `${file}.map`);
      return (JSON.parse(readFileSync(map, 'utf8')) as { sources: string[] }).sources.map((s) => relative(ROOT, resolve(dirname(map), s)));
    });
    // The leads table is among them (the check reads real source lists), the other screens are not.
    expect(sources).toContain('renderer/src/screens/leads/LeadsTable.tsx');
    expect(sources.filter((s) => NOT_FIRST.test(s))).toEqual([]);
  });

  it('the build: the page\'s module script holds no app code; the entry and the app are chunks the page preloads', () => {
    const m = manifest();
    // The page's one module script runs when the page is parsed, before the first screen the HTML
    // brought is painted: it is a few lines, importing the entry once that frame is painted.
    const [, boot] = Object.entries(m).find(([, c]) => c.isEntry) ?? [];
    const [mainKey, main] = Object.entries(m).find(([, c]) => c.name === 'main' && c.isDynamicEntry) ?? [];
    const mount = Object.values(m).find((c) => c.name === 'mount' && c.isDynamicEntry);
    expect(boot?.imports ?? []).toEqual([]);
    expect(boot?.dynamicImports).toEqual([mainKey]);
    expect(statSync(join(RENDERER_DIST, boot?.file ?? '')).size).toBeLessThan(4096);
    const html = readFileSync(join(RENDERER_DIST, 'index.html'), 'utf8');
    for (const c of [main, mount]) expect(html).toContain(`<link rel="modulepreload" crossorigin href="./${c?.file ?? 'none'}">`);
  });

  it('the browser: no other screen was fetched before the first row showed', () => {
    const m = manifest();
    const lazyFiles = new Set([...LAZY_SCREENS.map(([src]) => src), 'src/screens/lead/LeadPanel.tsx', 'src/screens/leads/ImportDialog.tsx'].map((src) => m[src]?.file.split('/').pop()));
    expect(fetchedBeforeFirstRow.length).toBeGreaterThan(0);
    expect(fetchedBeforeFirstRow.filter((f) => lazyFiles.has(f))).toEqual([]);
  });

  it('each screen draws when reached by its shortcut, and the lead panel opens', async () => {
    for (const [, key, heading] of LAZY_SCREENS) {
      await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
      await page.keyboard.press('g');
      await page.keyboard.press(key);
      await page.getByRole('heading', { name: heading, exact: true }).waitFor({ timeout: 15_000 });
    }
    await page.keyboard.press('g');
    await page.keyboard.press('l');
    await page.locator('.table [data-lead-id]').first().click();
    await page.getByRole('button', { name: 'Close lead' }).waitFor({ timeout: 15_000 });
    expect(page.errors).toEqual([]);
  });
});
