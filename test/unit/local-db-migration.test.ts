/**
 * A desktop whose data folder holds the previous storage's format (persisted-memory, written here
 * by that storage's own code) opens on the SQLite storage: the workspace's data moves over once,
 * the session says how far it is (state 'opening', which the window shows), and nothing is lost:
 * every document of every collection reads the same afterwards (that every stored row, tombstones
 * and replication state included, is copied is sqlite-storage-migrate.test.ts's). The next open
 * finds the new file and moves nothing.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { SessionInfo } from '../../electron/bridge.ts';
import { addRxPlugin, createRxDatabase } from 'rxdb';
import type { RxCollectionCreator, RxJsonSchema } from 'rxdb';
import { RxDBMigrationSchemaPlugin } from 'rxdb/plugins/migration-schema';
import { fileCredentialStore } from '../../electron/backend/credentials.ts';
import { localDatabaseName, migrationStrategies, openLocalDatabase } from '../../electron/backend/local-db.ts';
import { SessionManager } from '../../electron/backend/session.ts';
import type { DemoWorkspace } from '../../electron/backend/session.ts';
import { persistedMemoryFilePath } from '../../electron/backend/storage/sqlite/migrate.ts';
import { stripRxFields } from '../../electron/backend/store-documents.ts';
import { newActivity, newLead } from '../../shared/model/factories.ts';
import { COLLECTIONS, REPLICATED_COLLECTIONS } from '../../shared/model/index.ts';
import type { Lead } from '../../shared/model/index.ts';
import { LEAD_QUERY_FIELDS } from '../../shared/ops/lead-search.ts';
import type { Store } from '../../shared/store.ts';
import { workspaceCreation } from '../../shared/workspace-setup.ts';
import { sequentialIds } from '../support/harness.ts';
import { getRxStoragePersistedMemory } from '../support/persisted-memory.ts';

addRxPlugin(RxDBMigrationSchemaPlugin);

type Json = Record<string, unknown>;

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

function sessionOn(dataDir: string): SessionManager {
  const s = new SessionManager({
    dataDir,
    openDb: (o) => openLocalDatabase(o),
    credentials: fileCredentialStore(join(dataDir, 'credentials.json')),
    buildDemo: workspace,
  });
  sessions.push(s);
  return s;
}

/**
 * The previous desktop's data folder, as its code wrote it: the workspace in the persisted-memory
 * storage, with an edit and a deletion on top, and the session files that reopen it. Returns every
 * live document by collection (in id order, as the Store answers them) and the two leads touched.
 */
async function writePreviousDesktop(dataDir: string, w: DemoWorkspace): Promise<{ snapshot: Record<string, unknown[]>; edited: Lead; deleted: Lead }> {
  const rx = await createRxDatabase({ name: localDatabaseName(w.workspaceId), storage: getRxStoragePersistedMemory({ directory: join(dataDir, 'workspaces', w.workspaceId) }), multiInstance: false });
  const creators: Record<string, RxCollectionCreator> = {};
  for (const c of REPLICATED_COLLECTIONS) creators[c] = { schema: COLLECTIONS[c].schema as unknown as RxJsonSchema<Json>, migrationStrategies: migrationStrategies(COLLECTIONS[c].schema.version) };
  await rx.addCollections(creators);
  for (const c of REPLICATED_COLLECTIONS) {
    const docs = w.writes.filter((x) => x.collection === c && x.after).map((x) => ({ ...(x.after as Json) }));
    if (docs.length > 0) await rx.collections[c]?.bulkInsert(docs);
  }
  const [edited, deleted] = w.writes.filter((x) => x.collection === 'leads').map((x) => x.after as Lead);
  if (!edited || !deleted) throw new Error('no leads');
  await (await rx.collections.leads?.findOne(edited.id).exec())?.incrementalPatch({ jobTitle: 'Edited before the upgrade' });
  await (await rx.collections.leads?.findOne(deleted.id).exec())?.remove();
  const snapshot: Record<string, unknown[]> = {};
  for (const c of REPLICATED_COLLECTIONS) {
    const docs = (await rx.collections[c]?.find().exec()) ?? [];
    snapshot[c] = docs.map((d) => stripRxFields(d.toMutableJSON(true) as Json)).sort((a, b) => (String(a.id) < String(b.id) ? -1 : 1));
  }
  await rx.close();
  const saved = { kind: 'demo', workspaceId: w.workspaceId, workspaceName: w.workspaceName, member: w.member, serverUrl: null };
  writeFileSync(join(dataDir, 'session.json'), JSON.stringify(saved));
  writeFileSync(join(dataDir, 'demo-workspace.json'), JSON.stringify(saved));
  return { snapshot, edited, deleted };
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

    // The previous desktop's folder: a workspace with some work done, then quit.
    const w = workspace();
    const { snapshot, edited, deleted } = await writePreviousDesktop(dataDir, w);
    const workspaceId = w.workspaceId;

    // This version starts on the same folder.
    const after = sessionOn(dataDir);
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
    const again = sessionOn(dataDir);
    const states: string[] = [];
    again.onChange((info) => states.push(info.state));
    expect(await again.restore()).toMatchObject({ state: 'open', workspaceId });
    expect(states).toEqual(['open']);
    expect(await everything(storeOf(again))).toEqual(snapshot);
  }, 120_000);
});
