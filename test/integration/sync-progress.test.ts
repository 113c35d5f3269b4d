/**
 * What a desktop says during a pull of many pages (issue 27: "synced n of m"), with its replication
 * client (electron/backend/replication.ts) against the real sync server over HTTP on PGlite and on
 * PostgreSQL: "Syncing leads: n of m" page by page, m the server's count of the workspace's leads
 * (another workspace's never in it), then done; and a pull started again after a stop counted
 * from its checkpoint.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openLocalDatabase } from '../../electron/backend/local-db.ts';
import type { LocalDatabase } from '../../electron/backend/local-db.ts';
import { startSync } from '../../electron/backend/replication.ts';
import type { Sync } from '../../electron/backend/replication.ts';
import type { SyncStatus } from '../../electron/backend/sync-status.ts';
import { newLead } from '../../shared/model/factories.ts';
import type { LeadGroup } from '../../shared/model/index.ts';
import { BACKENDS } from './support/db.ts';
import { startTestServer } from './support/server.ts';
import type { Team, TestServer } from './support/server.ts';
import { until } from '../support/until.ts';

const LEADS = 3000;
const PAGE = 500;

/** `n` generated leads in one commit. */
async function addLeads(s: TestServer, team: Team, n: number): Promise<void> {
  const store = s.db.forWorkspace(team.workspaceId);
  const group = (await store.query('leadGroups', { limit: 1 })).docs[0] as LeadGroup;
  const now = s.clock.now().toISOString();
  const leads = Array.from({ length: n }, (_, i) => newLead({ id: randomUUID(), workspaceId: team.workspaceId, now }, group.id, { firstName: `Bulk${i}`, email: `bulk${i}@${team.workspaceId.slice(0, 8)}.test` }));
  await store.commit(leads.map((l) => ({ collection: 'leads' as const, id: l.id, before: null, after: l })));
}

describe.each(BACKENDS)('sync progress against the sync server (%s)', (backend) => {
  let s: TestServer;
  /** The leads of our workspace on the server: what a first pull brings. */
  let total = 0;
  const dirs: string[] = [];
  const open: { db: LocalDatabase; sync: Sync | null }[] = [];

  beforeAll(async () => {
    s = await startTestServer(backend);
    await addLeads(s, s.ours, LEADS);
    // Another workspace on the same server, with leads of its own: never counted for ours.
    await addLeads(s, s.theirs, 1700);
    total = (await s.db.forWorkspace(s.ours.workspaceId).query('leads', { limit: 10_000 })).docs.length;
    expect(total).toBeGreaterThanOrEqual(LEADS);
  }, 120_000);

  // One open database per workspace and process: each test's desktop is closed after it.
  afterEach(async () => {
    for (const o of open.splice(0)) {
      await o.sync?.stop();
      await o.db.close();
    }
  });

  afterAll(async () => {
    await s?.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  /** An empty desktop of our workspace (the member's key). */
  async function desktop(): Promise<{ db: LocalDatabase; start: () => Promise<{ sync: Sync; seen: SyncStatus[] }> }> {
    const dir = mkdtempSync(join(tmpdir(), 'sync-progress-'));
    dirs.push(dir);
    const db = await openLocalDatabase({ dir, workspaceId: s.ours.workspaceId, actor: { workspaceId: s.ours.workspaceId, memberId: s.ours.memberId, role: 'member' } });
    const entry: { db: LocalDatabase; sync: Sync | null } = { db, sync: null };
    open.push(entry);
    return {
      db,
      async start() {
        const sync = await startSync({ db, serverUrl: s.url, apiKey: s.ours.memberKey, pullBatchSize: PAGE, retryMs: 100 });
        entry.sync = sync;
        const seen: SyncStatus[] = [];
        sync.onStatus((st) => seen.push(st));
        return { sync, seen };
      },
    };
  }

  const progressOf = (seen: readonly SyncStatus[]) => seen.flatMap((st) => (st.progress ? [st.progress] : []));

  it("shows 'Syncing leads: n of m' page by page, m the workspace's leads on the server, then done", async () => {
    const d = await desktop();
    const { sync, seen } = await d.start();
    await sync.awaitInSync();
    // Done: the pull's words give way (to an index build's, then to nothing).
    await until('the pull to be done', () => !sync.status().activity?.startsWith('Syncing'));
    expect(sync.status().progress).toBeUndefined();
    expect(await d.db.store.count('leads')).toBe(total);

    const progress = progressOf(seen);
    expect(progress[0]).toEqual({ done: PAGE, total });
    // Rising page by page (a status also changes for other reasons, so a number may repeat).
    expect(new Set(progress.map((p) => p.done)).size).toBeGreaterThanOrEqual(3);
    for (const [i, p] of progress.entries()) {
      expect(p.total, `status ${i}`).toBe(total);
      expect(p.done % PAGE, `status ${i}`).toBe(0);
      expect(p.done).toBeLessThanOrEqual(total);
      if (i > 0) expect(p.done).toBeGreaterThanOrEqual(progress[i - 1]?.done ?? 0);
    }
    expect(seen.map((st) => st.activity)).toContain(`Syncing leads: ${PAGE.toLocaleString('en-US')} of ${total.toLocaleString('en-US')}`);
    // Every status during the pull said so in words, with the same numbers.
    for (const st of seen) if (st.progress) expect(st.activity).toMatch(new RegExp(`^Syncing leads: ${st.progress.done.toLocaleString('en-US')} of ${total.toLocaleString('en-US')}( · .+ left)?$`));
  }, 120_000);

  it('counts a pull started again after a stop from its checkpoint: n of what remained', async () => {
    const d = await desktop();
    const first = await d.start();
    // Stopped as soon as it says two pages came (as a quit would cut it).
    await new Promise<void>((resolve) => {
      const off = first.sync.onStatus((st) => {
        if ((st.progress?.done ?? 0) < 2 * PAGE) return;
        off();
        resolve();
      });
    });
    await first.sync.stop();
    const stored = await d.db.store.count('leads');
    expect(stored).toBeGreaterThan(0);
    expect(stored).toBeLessThan(total);

    const again = await d.start();
    await again.sync.awaitInSync();
    await until('the pull to be done', () => !again.sync.status().activity?.startsWith('Syncing'));
    expect(await d.db.store.count('leads')).toBe(total);
    const progress = progressOf(again.seen);
    expect(progress.length).toBeGreaterThanOrEqual(1);
    const remained = progress[0]?.total ?? 0;
    // What comes after the stored checkpoint: not what was pulled before the stop, at least what was not stored.
    expect(remained).toBeLessThanOrEqual(total - PAGE);
    expect(remained).toBeGreaterThanOrEqual(total - stored);
    expect(progress[0]?.done).toBe(PAGE);
    for (const p of progress) expect(p.total).toBe(remained);
  }, 120_000);
});
