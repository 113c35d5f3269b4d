/**
 * A desktop whose data folder holds the previous storage's format (persisted-memory, written here
 * by that storage's own code) opens on the SQLite storage: the workspace's data moves over once,
 * the session says how far it is (state 'opening', which the window shows), and nothing is lost:
 * every document of every collection reads the same afterwards (that every stored row, tombstones
 * and replication state included, is copied is sqlite-storage-migrate.test.ts's). The next open
 * finds the new file and moves nothing.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { SessionInfo } from '../../electron/bridge.ts';
import { fileCredentialStore } from '../../electron/backend/credentials.ts';
import { localDatabaseName, openLocalDatabase } from '../../electron/backend/local-db.ts';
import type { LocalStorageKind } from '../../electron/backend/local-db.ts';
import { SessionManager } from '../../electron/backend/session.ts';
import type { DemoWorkspace } from '../../electron/backend/session.ts';
import { persistedMemoryFilePath } from '../../electron/backend/storage/sqlite/migrate.ts';
import { newActivity, newLead } from '../../shared/model/factories.ts';
import { REPLICATED_COLLECTIONS } from '../../shared/model/index.ts';
import type { Lead } from '../../shared/model/index.ts';
import { LEAD_QUERY_FIELDS } from '../../shared/ops/lead-search.ts';
import type { Store } from '../../shared/store.ts';
import { workspaceCreation } from '../../shared/workspace-setup.ts';
import { sequentialIds } from '../support/harness.ts';

const NOW = '2026-11-16T10:00:00.000Z';
const LEADS = 2600;

/** A workspace large enough to move in several batches: leads, notes and tasks. */
function workspace(): DemoWorkspace {
  const ids = sequentialIds(4);
  const ws = workspaceCreation(ids, NOW, { name: 'Moving Co', owner: { name: 'Mo Ver', email: 'mo@moving.test' }, subscriptionStatus: 'active' });
  const leads = Array.from({ length: LEADS }, (_, i) =>
    newLead({ id: ids.uuid(), workspaceId: ws.workspaceId, now: new Date(Date.UTC(2026, 9, 1) + i * 60_000).toISOString() }, ws.leadGroupId, {
      firstName: ['Ann', 'Bob', 'Chen'][i % 3],
      lastName: i % 7 ? `Lee${i}` : 'Okafor',
      email: `m${i}@moving.test`,
    }),
  );
  const notes = leads.slice(0, 300).map((l, i) => newActivity({ id: ids.uuid(), workspaceId: ws.workspaceId, now: NOW }, l.id, ws.ownerId, i % 2 ? 'NOTE' : 'TASK', `about ${l.firstName}`));
  return {
    workspaceId: ws.workspaceId,
    workspaceName: 'Moving Co',
    member: { id: ws.ownerId, name: 'Mo Ver', role: 'owner' },
    writes: [
      ...ws.writes,
      ...leads.map((l) => ({ collection: 'leads' as const, id: l.id, before: null, after: l })),
      ...notes.map((a) => ({ collection: 'activities' as const, id: a.id, before: null, after: a })),
    ],
  };
}

const dirs: string[] = [];
const sessions: SessionManager[] = [];
afterEach(async () => {
  for (const s of sessions.splice(0)) await s.shutdown();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function sessionOn(dataDir: string, storage: LocalStorageKind): SessionManager {
  const s = new SessionManager({
    dataDir,
    openDb: (o) => openLocalDatabase({ ...o, storage }),
    credentials: fileCredentialStore(join(dataDir, 'credentials.json')),
    buildDemo: workspace,
  });
  sessions.push(s);
  return s;
}

async function everything(store: Store): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const c of REPLICATED_COLLECTIONS) out[c] = (await store.query(c, { orderBy: [{ field: 'id', dir: 'asc' }] })).docs;
  return out;
}

const storeOf = (s: SessionManager): Store => {
  const db = s.current()?.db;
  if (!db) throw new Error('no workspace open');
  return db.store;
};

describe('opening a data folder of the previous storage', () => {
  it('moves the workspace into the SQLite storage once, showing progress, losing nothing', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'crm-migration-'));
    dirs.push(dataDir);

    // The previous desktop: a workspace with some work done, then quit.
    const before = sessionOn(dataDir, 'persisted-memory');
    await before.openDemo();
    const old = storeOf(before);
    const { docs } = await old.query('leads', { limit: 3 });
    const [edited, deleted] = docs as [Lead, Lead];
    await old.commit([
      { collection: 'leads', id: edited.id, before: edited, after: { ...edited, jobTitle: 'Edited before the upgrade' } },
      { collection: 'leads', id: deleted.id, before: deleted, after: null },
    ]);
    const snapshot = await everything(old);
    const workspaceId = before.current()?.saved.workspaceId ?? '';
    await before.shutdown();
    sessions.splice(sessions.indexOf(before), 1);

    // This version starts on the same folder.
    const after = sessionOn(dataDir, 'sqlite');
    const seen: SessionInfo[] = [];
    after.onChange((info) => seen.push(info));
    const first = await after.restore();
    // It answers as soon as the move starts, so the window can show it.
    expect(first).toMatchObject({ state: 'opening', workspaceId, workspaceName: 'Moving Co' });
    await expect.poll(() => after.current() !== null, { timeout: 60_000 }).toBe(true);

    const steps = seen.filter((i): i is Extract<SessionInfo, { state: 'opening' }> => i.state === 'opening').map((i) => i.migration);
    expect(steps.length).toBeGreaterThan(1);
    expect(steps.every((p, i) => p.done <= p.total && (i === 0 || p.done >= (steps[i - 1]?.done ?? 0)))).toBe(true);
    expect(steps.some((p) => p.indexing)).toBe(true);
    expect(steps.at(-1)?.done).toBe(steps.at(-1)?.total);
    expect(seen.at(-1)).toMatchObject({ state: 'open', workspaceId });

    const store = storeOf(after);
    expect(await everything(store)).toEqual(snapshot);
    expect(await store.count('leads')).toBe(LEADS - 1);
    expect((await store.get('leads', edited.id))?.jobTitle).toBe('Edited before the upgrade');
    expect(await store.get('leads', deleted.id)).toBeNull();
    const okafors = await store.count('leads', { op: 'contains', fields: LEAD_QUERY_FIELDS, value: 'okafor' });
    expect(okafors).toBe(snapshot.leads?.filter((l) => (l as Lead).lastName === 'Okafor').length);
    // The previous file is left as it was.
    expect(existsSync(persistedMemoryFilePath(join(dataDir, 'workspaces', workspaceId), localDatabaseName(workspaceId)))).toBe(true);
    await after.shutdown();
    sessions.splice(sessions.indexOf(after), 1);

    // Once: the next start opens the new file without moving anything.
    const again = sessionOn(dataDir, 'sqlite');
    const states: string[] = [];
    again.onChange((info) => states.push(info.state));
    expect(await again.restore()).toMatchObject({ state: 'open', workspaceId });
    expect(states).toEqual(['open']);
    expect(await everything(storeOf(again))).toEqual(snapshot);
  }, 120_000);
});
