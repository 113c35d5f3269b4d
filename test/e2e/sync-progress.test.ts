/** A desktop's first sync of a team workspace with many leads, seen in the browser: the indicator in
 * the top bar says "Syncing leads: n of m" with a progress bar while the pull runs (m the server's
 * count of the workspace's leads), then "Synced". Real processes: the sync server (embedded PGlite)
 * and the web host, with Chromium. Screenshot: test-results/screenshots/17-sync-progress.png. */
import { randomUUID } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { ROOT } from '../../scripts/build-app.ts';
import { newLead } from '../../shared/model/factories.ts';
import type { LeadGroup } from '../../shared/model/index.ts';
import { createWorkspace, setSubscription } from '../../sync-server/admin.ts';
import { openDatabase } from '../../sync-server/db.ts';
import { migrate } from '../../sync-server/migrate.ts';
import { PgDatabase } from '../../sync-server/pg-database.ts';
import { nodeSecrets } from '../../sync-server/secrets.ts';
import { seededRandom } from '../../shared/seeded-random.ts';
import { startChildServer, stopChildServer } from '../bench/support/child-server.ts';
import { ensureRendererBuilt, launchBrowser, openPage, screenshot, startApp } from './support/app.ts';
import type { RunningApp } from './support/app.ts';

/** Enough for a pull of several seconds here (the rate, and so the time left, is known after 3 s). */
const LEADS = 40_000;

const serverData = mkdtempSync(join(tmpdir(), 'crm-sync-progress-'));
let server: ChildProcess | null = null;
let url = '';
let key = '';
let app: RunningApp;
let browser: Browser;
let page: Page & { errors: string[] };

/** A workspace of LEADS leads, written straight into the server's data folder before it starts. */
async function seed(): Promise<string> {
  const sql = await openDatabase({ dataDir: serverData });
  try {
    await migrate(sql);
    const db = new PgDatabase(sql);
    const deps = { clock: { now: () => new Date() }, ids: { uuid: () => randomUUID() }, secrets: nodeSecrets, random: seededRandom(11) };
    const ws = await createWorkspace(db, { name: 'Progress', ownerEmail: 'pat@progress.test', ownerName: 'Pat Progress' }, deps);
    await setSubscription(db, { workspaceId: ws.workspaceId, status: 'active' }, deps);
    const store = db.forWorkspace(ws.workspaceId);
    const group = (await store.query('leadGroups', { limit: 1 })).docs[0] as LeadGroup;
    const now = new Date().toISOString();
    for (let done = 0; done < LEADS; done += 5000) {
      const leads = Array.from({ length: Math.min(5000, LEADS - done) }, (_, i) =>
        newLead({ id: randomUUID(), workspaceId: ws.workspaceId, now }, group.id, { firstName: `Pulled${done + i}`, lastName: 'Lead', company: `Company ${(done + i) % 97}`, email: `pulled${done + i}@progress.test` }),
      );
      await store.commit(leads.map((l) => ({ collection: 'leads' as const, id: l.id, before: null, after: l })));
    }
    return ws.apiKey;
  } finally {
    await sql.close();
  }
}

beforeAll(async () => {
  await ensureRendererBuilt();
  key = await seed();
  // The seeded PGlite folder, also when the tests run with DATABASE_URL set.
  const started = await startChildServer(join(ROOT, 'sync-server', 'cli.ts'), { DATA_DIR: serverData, DATABASE_URL: '', HOST: '127.0.0.1', LOG_LEVEL: 'warn' }, '/healthz');
  server = started.proc;
  url = started.url;
  app = await startApp();
  browser = await launchBrowser();
  page = await openPage(browser, app.url);
}, 300_000);

afterAll(async () => {
  await browser?.close();
  await app?.stop();
  if (server) await stopChildServer(server);
  rmSync(serverData, { recursive: true, force: true });
});

const indicatorText = (): string => document.querySelector('[data-testid="sync-indicator"]')?.textContent ?? '';

/** Every text the indicator showed, in order (distinct), until one matches `wanted`; fails with the
 * list and the web host's output if none does within `ms`. */
const shownTexts: string[] = [];
async function untilShown(wanted: RegExp, ms: number): Promise<string> {
  const end = Date.now() + ms;
  for (;;) {
    const text = await page.evaluate(indicatorText);
    if (shownTexts[shownTexts.length - 1] !== text) shownTexts.push(text);
    if (wanted.test(text)) return text;
    if (Date.now() > end) {
      const body = await page.evaluate(() => Array.from(document.querySelectorAll<HTMLElement>('[role="alert"], .error-text'), (e) => e.innerText).join(' | ') || document.body.innerText.slice(-600));
      await screenshot(page, 'sync-progress-failed');
      throw new Error(`The sync indicator never showed ${String(wanted)}; it showed: ${JSON.stringify(shownTexts)}\nthe page: ${body}\napp output:\n${app.output().slice(-3000)}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('a first sync of many leads', () => {
  it('shows "Syncing leads: n of m" with a progress bar while it pulls, then "Synced"', async () => {
    await page.getByLabel('Server address').fill(url);
    await page.getByLabel('API key').fill(key);
    await page.getByRole('button', { name: 'Connect' }).click();
    const total = LEADS.toLocaleString('en-US');
    await untilShown(new RegExp(`^Syncing leads: [\\d,]+ of ${total}`), 120_000);
    const bar = page.getByTestId('sync-indicator').getByRole('progressbar', { name: 'Sync progress' });
    await expect(bar.getAttribute('aria-valuemax')).resolves.toBe(String(LEADS));
    const done = Number(await bar.getAttribute('aria-valuenow'));
    expect(done).toBeGreaterThan(0);
    expect(done).toBeLessThanOrEqual(LEADS);
    // Once the rate is known, the time left; the picture is taken then if the pull lasts that long.
    const withTimeLeft = await untilShown(/ · .+ left$|^Synced$|^Building/, 60_000).then((t) => t.endsWith(' left'));
    await screenshot(page, '17-sync-progress');
    const shown = await page.evaluate(indicatorText);
    if (withTimeLeft && shown.startsWith('Syncing')) expect(shown).toMatch(new RegExp(`^Syncing leads: [\\d,]+ of ${total} · (a few seconds|about \\d+ (s|min)|about \\d+ h( \\d+ min)?) left$`));
    await untilShown(/^Synced$/, 300_000);
    await expect(page.getByTestId('sync-indicator').getByRole('progressbar').count()).resolves.toBe(0);
    expect(page.errors).toEqual([]);
  }, 420_000);
});
