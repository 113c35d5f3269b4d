/**
 * Migration from the previous desktop storage (persisted-memory, kept as
 * test/support/persisted-memory.ts to write its format) into the SQLite storage
 * (electron/backend/storage/sqlite/migrate.ts): a file written by that storage's code, with our real
 * collection schemas and a replication that pulled and pushed, is migrated once with progress, and
 * every stored row of every storage instance comes out the same; replication then resumes from the
 * migrated checkpoints, pulling from where it stopped and pushing only what changed since.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { addRxPlugin, createRxDatabase } from 'rxdb';
import type { RxCollection, RxDatabase, RxJsonSchema, RxStorage } from 'rxdb';
import { RxDBMigrationSchemaPlugin } from 'rxdb/plugins/migration-schema';
import { replicateRxCollection } from 'rxdb/plugins/replication';
import { getRxStoragePersistedMemory } from '../support/persisted-memory.ts';
import { DocCodec } from '../../electron/backend/storage/sqlite/doc-codec.ts';
import { sqliteFilePath, StorageLockedError } from '../../electron/backend/storage/sqlite/file.ts';
import { migrateFromPersistedMemory, persistedMemoryFilePath } from '../../electron/backend/storage/sqlite/migrate.ts';
import type { MigrationProgress } from '../../electron/backend/storage/sqlite/migrate.ts';
import { getRxStorageSqlite, sqliteInstanceOf } from '../../electron/backend/storage/sqlite/storage.ts';
import { COLLECTIONS } from '../../shared/model/index.ts';
import type { Lead, Tag } from '../../shared/model/index.ts';
import { newLead } from '../../shared/model/factories.ts';
import { LEAD_QUERY_FIELDS } from '../../shared/ops/lead-search.ts';
import { tempDir } from './sqlite-storage.fixtures.ts';

type Collections = { leads: RxCollection<Lead>; tags: RxCollection<Tag> };
type Db = RxDatabase<Collections>;

// The leads schema is at version 1: RxDB checks it has a migration strategy, with this plugin.
addRxPlugin(RxDBMigrationSchemaPlugin);

const NAME = 'crm-w-migrate';
const open: Db[] = [];
afterEach(async () => {
  for (const db of open.splice(0)) await db.close();
});

async function openDb(storage: RxStorage<unknown, object>): Promise<Db> {
  const db: Db = await createRxDatabase<Collections>({ name: NAME, storage, multiInstance: false });
  open.push(db);
  await db.addCollections({
    leads: { schema: COLLECTIONS.leads.schema as unknown as RxJsonSchema<Lead>, migrationStrategies: { 1: (d: unknown) => d } },
    tags: { schema: COLLECTIONS.tags.schema as unknown as RxJsonSchema<Tag> },
  });
  return db;
}

async function closeDb(db: Db): Promise<void> {
  open.splice(open.indexOf(db), 1);
  await db.close();
}

const lead = (i: number): Lead => newLead({ id: `lead-${String(i).padStart(4, '0')}`, workspaceId: 'w', now: new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString() }, 'g-1', { firstName: `First${i}`, lastName: i % 3 ? 'Smith' : 'Okafor', email: `p${i}@example.test` });

/** Pull from a fixed remote list (checkpoint = how many were read), push into `pushed`. */
function replicate(db: Db, remote: Lead[], pushed: string[], pulls: unknown[]) {
  return replicateRxCollection<Lead, { i: number }>({
    collection: db.leads,
    replicationIdentifier: 'server-a',
    live: false,
    pull: {
      batchSize: 7,
      handler: async (checkpoint) => {
        pulls.push(checkpoint ?? null);
        const from = checkpoint ? checkpoint.i : 0;
        const documents = remote.slice(from, from + 7).map((d) => ({ ...d, _deleted: false }));
        return { documents, checkpoint: { i: from + documents.length } };
      },
    },
    push: {
      batchSize: 50,
      handler: async (rows) => {
        pushed.push(...rows.map((r) => r.newDocumentState.id));
        return [];
      },
    },
  });
}

/** Every stored row of the persisted-memory file, by instance name and id. */
function oldRows(dir: string): Map<string, unknown> {
  const sqlite = new Database(persistedMemoryFilePath(dir, NAME), { readonly: true });
  const rows = sqlite.prepare<[], { inst: string; id: string; data: string }>('SELECT inst, id, data FROM docs').all();
  sqlite.close();
  return new Map(rows.map((r) => [`${r.inst}/${r.id}`, JSON.parse(r.data) as unknown]));
}

/** Every stored document of the SQLite storage's file, by instance name and id. */
function newRows(dir: string): Map<string, unknown> {
  const sqlite = new Database(sqliteFilePath(dir, NAME), { readonly: true });
  const out = new Map<string, unknown>();
  const codec = new DocCodec(sqlite);
  for (const { name, tbl } of sqlite.prepare<[], { name: string; tbl: string }>('SELECT name, tbl FROM instances').all()) {
    for (const r of sqlite.prepare<[], { id: string; doc: string; lwt: number }>(`SELECT id, doc, lwt FROM "${tbl}"`).all()) out.set(`${name}/${r.id}`, codec.decode(r.doc, r));
  }
  sqlite.close();
  return out;
}

/** A workspace written by today's storage: leads (some changed, some deleted), tags, and a
 * replication that pulled 20 leads and pushed the local ones. */
async function writeTodaysFile(dir: string, remote: Lead[]): Promise<void> {
  const db = await openDb(getRxStoragePersistedMemory({ directory: dir }) as RxStorage<unknown, object>);
  await db.leads.bulkInsert(Array.from({ length: 120 }, (_, i) => lead(i)));
  await db.tags.bulkInsert([{ id: 't-1', workspaceId: 'w', createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-01T00:00:00.000Z', name: 'Hot', color: '#ff0000' }]);
  for (let i = 0; i < 10; i++) await (await db.leads.findOne(lead(i).id).exec())?.incrementalPatch({ jobTitle: `changed ${i}` });
  for (let i = 10; i < 15; i++) await (await db.leads.findOne(lead(i).id).exec())?.remove();
  const pushed: string[] = [];
  const rep = replicate(db, remote, pushed, []);
  await rep.awaitInitialReplication();
  await rep.cancel();
  expect(pushed.length).toBeGreaterThanOrEqual(120);
  await closeDb(db);
}

describe('migration from the persisted-memory storage', () => {
  it('copies every row of every instance once, with progress, and replication resumes from the migrated checkpoints', async () => {
    const dir = tempDir('sqlite-migrate-');
    const remote = Array.from({ length: 20 }, (_, i) => lead(1000 + i));
    await writeTodaysFile(dir, remote);
    const before = oldRows(dir);
    const progress: MigrationProgress[] = [];
    const result = await migrateFromPersistedMemory({ directory: dir, databaseName: NAME, textSearch: { leads: LEAD_QUERY_FIELDS }, onProgress: (p) => progress.push(p) });
    if (!result.migrated) throw new Error(`not migrated: ${result.reason}`);
    expect(result.documents).toBe(before.size);
    expect(result.unrecognized).toEqual([]);
    expect(result.instances.some((i) => i.startsWith('rx-replication-meta-'))).toBe(true);
    expect(progress.length).toBeGreaterThan(3);
    expect(progress.every((p, i) => i === 0 || p.done > (progress[i - 1]?.done ?? 0))).toBe(true);
    expect(progress.at(-1)).toMatchObject({ done: before.size, total: before.size });
    expect(newRows(dir)).toEqual(before);
    // Once: a second call leaves the new file alone; the old one is untouched; nothing temporary is left.
    expect(await migrateFromPersistedMemory({ directory: dir, databaseName: NAME })).toEqual({ migrated: false, reason: 'already migrated' });
    expect(oldRows(dir)).toEqual(before);
    expect(readdirSync(dir).filter((f) => f.includes('migrating'))).toEqual([]);

    const db = await openDb(getRxStorageSqlite({ directory: dir, textSearch: { leads: LEAD_QUERY_FIELDS } }) as RxStorage<unknown, object>);
    expect(await db.leads.count().exec()).toBe(115 + 20);
    expect((await db.leads.findOne(lead(3).id).exec())?.jobTitle).toBe('changed 3');
    // The text index was built on the way.
    const okafors = (await db.leads.find({ selector: { lastName: 'Okafor' } }).exec()).map((d) => d.id).sort();
    expect(okafors.length).toBeGreaterThan(30);
    expect(sqliteInstanceOf<Lead>(db.leads.storageInstance)?.searchText('okafor', 1000).sort()).toEqual(okafors);
    const pushed: string[] = [];
    const pulls: unknown[] = [];
    const again = replicate(db, [...remote, lead(2000)], pushed, pulls);
    await again.awaitInitialReplication();
    await again.cancel();
    // Pulling resumes after the 20 already pulled; nothing already pushed goes up again.
    expect(pulls[0]).toEqual({ i: 20 });
    expect(pushed).toEqual([]);
    expect(await db.leads.findOne(lead(2000).id).exec()).not.toBeNull();
    await (await db.leads.findOne(lead(50).id).exec())?.incrementalPatch({ jobTitle: 'after migration' });
    const third = replicate(db, [...remote, lead(2000)], pushed, pulls);
    await third.awaitInitialReplication();
    await third.cancel();
    expect(pushed).toEqual([lead(50).id]);
  });

  it('refuses while another process holds the old file, and a failed migration leaves no new file', async () => {
    const dir = tempDir('sqlite-migrate-');
    await writeTodaysFile(dir, []);
    const sqlite = new Database(persistedMemoryFilePath(dir, NAME));
    sqlite.pragma('locking_mode = EXCLUSIVE');
    sqlite.exec('BEGIN EXCLUSIVE');
    // Another process: the lock of this connection is held by this process; a child proves the
    // refusal across processes.
    const child = spawn(process.execPath, ['--import', 'tsx', '-e', `
      import { migrateFromPersistedMemory } from ${JSON.stringify(join(import.meta.dirname, '../../electron/backend/storage/sqlite/migrate.ts'))};
      migrateFromPersistedMemory({ directory: ${JSON.stringify(dir)}, databaseName: ${JSON.stringify(NAME)} }).then(() => console.log('migrated'), (e) => console.log(e.name));
    `], { stdio: ['ignore', 'pipe', 'inherit'] });
    const line = await createInterface({ input: child.stdout })[Symbol.asyncIterator]().next();
    await new Promise((r) => child.once('exit', r));
    sqlite.exec('ROLLBACK');
    sqlite.close();
    expect(line.value).toBe(StorageLockedError.name);
    expect(existsSync(sqliteFilePath(dir, NAME))).toBe(false);

    // A failure half-way (here the progress callback throws) leaves neither a new file nor a temporary one.
    let calls = 0;
    await expect(
      migrateFromPersistedMemory({
        directory: dir,
        databaseName: NAME,
        onProgress: () => {
          if (++calls === 2) throw new Error('stopped half-way');
        },
      }),
    ).rejects.toThrow(/stopped half-way/);
    expect(readdirSync(dir).filter((f) => f.includes('rxdb.sqlite'))).toEqual([]);
    const done = await migrateFromPersistedMemory({ directory: dir, databaseName: NAME });
    expect(done.migrated).toBe(true);
    expect(newRows(dir)).toEqual(oldRows(dir));
  });
});
