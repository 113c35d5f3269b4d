import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { createRxDatabase, fillWithDefaultSettings, randomToken } from 'rxdb';
import type { RxCollection, RxDatabase, RxDocumentData } from 'rxdb';
import { replicateRxCollection } from 'rxdb/plugins/replication';
import { getRxStoragePersistedMemory, StorageLockedError } from '../../electron/backend/storage/persisted-memory.ts';
import { childSchema } from './persisted-memory.child.ts';

type Item = { id: string; name: string; n: number };
type Db = RxDatabase<{ items: RxCollection<Item> }>;

const dirs: string[] = [];
const open: Db[] = [];
const children: ChildProcess[] = [];

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'pm-test-'));
  dirs.push(d);
  return d;
}

async function openDb(dir: string, name = 'testdb'): Promise<Db> {
  const db: Db = await createRxDatabase({ name, storage: getRxStoragePersistedMemory({ directory: dir }), multiInstance: false });
  await db.addCollections({ items: { schema: childSchema } });
  open.push(db);
  return db;
}

async function closeDb(db: Db): Promise<void> {
  await db.close();
  open.splice(open.indexOf(db), 1);
}

/** Every stored document of the collection, deleted ones included, with RxDB's fields. */
async function rawDocs(db: Db): Promise<RxDocumentData<Item>[]> {
  const storage = db.items.storageInstance;
  const ids = (await db.items.find().exec()).map((d) => d.id);
  const all = await storage.findDocumentsById([...ids, ...deletedIds], true);
  return all.sort((a, b) => a.id.localeCompare(b.id));
}
let deletedIds: string[] = [];

afterEach(async () => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
  for (const db of open.splice(0)) await db.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  deletedIds = [];
});

function spawnChild(mode: 'writer' | 'holder', dir: string): { child: ChildProcess; lines: AsyncIterableIterator<string>; stderr: () => string } {
  const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'persisted-memory.child.ts'), mode, dir], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let err = '';
  child.stderr?.on('data', (b: Buffer) => (err += b.toString()));
  const rl = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  return { child, lines: rl[Symbol.asyncIterator](), stderr: () => err };
}

describe('persisted-memory storage', () => {
  it('reopen keeps every document, deleted ones included, with its _rev and _meta', async () => {
    const dir = tempDir();
    const db = await openDb(dir);
    await db.items.bulkInsert(Array.from({ length: 50 }, (_, i) => ({ id: `d${String(i).padStart(3, '0')}`, name: `n${i}`, n: i })));
    for (let i = 0; i < 10; i++) {
      const d = await db.items.findOne(`d${String(i).padStart(3, '0')}`).exec();
      await d?.incrementalPatch({ name: `patched ${i}` });
      await d?.incrementalPatch({ n: 100 + i });
    }
    for (let i = 40; i < 45; i++) await (await db.items.findOne(`d0${i}`).exec())?.remove();
    deletedIds = Array.from({ length: 5 }, (_, i) => `d0${40 + i}`);
    const before = await rawDocs(db);
    expect(before).toHaveLength(50);
    expect(before.filter((d) => d._deleted)).toHaveLength(5);
    expect(before.find((d) => d.id === 'd003')?._rev.startsWith('3-')).toBe(true);
    await closeDb(db);

    const again = await openDb(dir);
    expect(await rawDocs(again)).toEqual(before);
    expect(await again.items.count().exec()).toBe(45);
    // Indexes and queries work on the loaded state.
    const top = await again.items.find({ selector: { n: { $gte: 100 } }, sort: [{ n: 'desc' }] }).exec();
    expect(top.map((d) => d.n)).toEqual([109, 108, 107, 106, 105, 104, 103, 102, 101, 100]);
  });

  it('reopen reads the disk, not RAM the memory storage kept after close', async () => {
    const dir = tempDir();
    const db = await openDb(dir);
    await db.items.bulkInsert([{ id: 'a', name: 'A', n: 1 }, { id: 'b', name: 'B', n: 2 }]);
    await closeDb(db);
    // Change the file behind the closed database's back: a reopen that reused RAM would still show b.
    const sqlite = new Database(join(dir, 'testdb.sqlite'));
    sqlite.prepare("DELETE FROM docs WHERE id = 'b'").run();
    sqlite.close();
    const again = await openDb(dir);
    expect((await again.items.find().exec()).map((d) => d.id)).toEqual(['a']);
  });

  it('persists the replication checkpoint (the meta instance and the internal store are storage instances too)', async () => {
    const dir = tempDir();
    const remote = Array.from({ length: 7 }, (_, i) => ({ id: `r${i}`, name: `remote ${i}`, n: i, _deleted: false }));
    const seen: unknown[] = [];
    const pullFrom = (db: Db) =>
      replicateRxCollection<Item, { i: number }>({
        collection: db.items,
        replicationIdentifier: 'test-remote',
        live: false,
        pull: {
          batchSize: 3,
          handler: async (checkpoint) => {
            seen.push(checkpoint ?? null);
            const from = checkpoint ? checkpoint.i : 0;
            const documents = remote.slice(from, from + 3);
            return { documents, checkpoint: { i: from + documents.length } };
          },
        },
      });
    const db = await openDb(dir);
    const first = pullFrom(db);
    await first.awaitInitialReplication();
    await first.cancel();
    expect(await db.items.count().exec()).toBe(7);
    expect(seen[0]).toBeNull();
    await closeDb(db);

    seen.length = 0;
    const again = await openDb(dir);
    const second = pullFrom(again);
    await second.awaitInitialReplication();
    await second.cancel();
    // The second run resumes from the stored checkpoint instead of pulling everything again.
    expect(seen[0]).toEqual({ i: 7 });
    expect(await again.items.count().exec()).toBe(7);
  });

  it('mirrors cleanup() purges on disk', async () => {
    const dir = tempDir();
    const storage = getRxStoragePersistedMemory({ directory: dir });
    const schema = fillWithDefaultSettings(childSchema as never) as never;
    const token = randomToken(10);
    const params = { databaseName: 'purge', collectionName: 'items', schema, options: {}, multiInstance: false, devMode: false, databaseInstanceToken: token };
    const inst = await storage.createStorageInstance<Item>(params);
    const meta = { lwt: 1 };
    await inst.bulkWrite([
      { document: { id: 'x', name: 'x', n: 1, _deleted: true, _rev: '1-a', _meta: meta, _attachments: {} } },
      { document: { id: 'y', name: 'y', n: 2, _deleted: false, _rev: '1-a', _meta: meta, _attachments: {} } },
    ], 'test');
    expect(await inst.cleanup(0)).toBe(true);
    expect(await inst.findDocumentsById(['x', 'y'], true)).toHaveLength(1);
    await inst.close();
    const again = await storage.createStorageInstance<Item>(params);
    expect((await again.findDocumentsById(['x', 'y'], true)).map((d) => d.id)).toEqual(['y']);
    await again.close();
  });

  it('a failed disk write rejects the write and leaves memory exactly as the disk', async () => {
    const dir = tempDir();
    const db = await openDb(dir);
    await db.items.insert({ id: 'keep', name: 'Keep', n: 1 });
    await closeDb(db);
    // A real SQLite failure, injected with triggers: inserting id "poison" or storing the name
    // "poison" aborts the transaction, the way a full disk or an I/O error would.
    const sqlite = new Database(join(dir, 'testdb.sqlite'));
    sqlite.exec(`CREATE TRIGGER fail_insert BEFORE INSERT ON docs WHEN NEW.id = 'poison' BEGIN SELECT RAISE(ABORT, 'simulated disk failure'); END;
      CREATE TRIGGER fail_update BEFORE UPDATE ON docs WHEN json_extract(NEW.data, '$.name') = 'poison' BEGIN SELECT RAISE(ABORT, 'simulated disk failure'); END;`);
    sqlite.close();

    const again = await openDb(dir);
    await expect(again.items.insert({ id: 'poison', name: 'P', n: 2 })).rejects.toThrow(/simulated disk failure/);
    expect(await again.items.findOne('poison').exec()).toBeNull();

    // A batch is one disk transaction: the good row is not kept in memory either.
    await expect(again.items.bulkInsert([{ id: 'fine', name: 'F', n: 3 }, { id: 'poison', name: 'P', n: 4 }])).rejects.toThrow(/simulated disk failure/);
    expect(await again.items.findOne('fine').exec()).toBeNull();

    const keep = await again.items.findOne('keep').exec();
    const revBefore = keep?.toMutableJSON(true)._rev;
    await expect(keep?.incrementalPatch({ name: 'poison' })).rejects.toThrow(/simulated disk failure/);
    const still = await again.items.findOne('keep').exec();
    expect(still?.name).toBe('Keep');
    expect(still?.toMutableJSON(true)._rev).toBe(revBefore);

    // The storage keeps working after a failure, and what memory shows is what the disk holds.
    await again.items.insert({ id: 'after', name: 'After', n: 5 });
    const shown = (await again.items.find().exec()).map((d) => d.toMutableJSON(true));
    await closeDb(again);
    const reopened = await openDb(dir);
    expect((await reopened.items.find().exec()).map((d) => d.toMutableJSON(true))).toEqual(shown);
    expect(shown.map((d) => d.id).sort()).toEqual(['after', 'keep']);
  });

  it('a process killed with SIGKILL right after acknowledged writes loses none of them', async () => {
    const dir = tempDir();
    const { child, lines, stderr } = spawnChild('writer', dir);
    const acked = new Map<string, string>();
    for (;;) {
      const next = await lines.next();
      if (next.done) throw new Error(`writer exited early: ${stderr()}`);
      const [tag, id, rev] = next.value.split(' ');
      if (tag !== 'ack' || !id || !rev) continue;
      acked.set(id, rev);
      if (acked.size >= 300) break;
    }
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));

    const db = await openDb(dir, 'crashtest');
    const stored = new Map((await db.items.find().exec()).map((d) => [d.id, d.toMutableJSON(true)._rev]));
    const missing = [...acked].filter(([id, rev]) => {
      const got = stored.get(id);
      // A later write the parent did not read yet may have raised the revision; never lowered it.
      return got === undefined || Number(got.split('-')[0]) < Number(rev.split('-')[0]);
    });
    expect(missing).toEqual([]);
    expect(acked.size).toBeGreaterThanOrEqual(300);
  });

  it('refuses a second owner of the file, in another process or in this one, with a clear error', async () => {
    const dir = tempDir();
    const { child, lines, stderr } = spawnChild('holder', dir);
    const first = await lines.next();
    expect(first.value, stderr()).toBe('ready');

    const err = await openDb(dir, 'crashtest').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StorageLockedError);
    expect((err as Error).message).toMatch(/already open by another process/);

    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    // The OS drops the dead owner's lock: the data folder is usable again.
    const db = await openDb(dir, 'crashtest');
    expect(await db.items.count().exec()).toBe(0);

    const otherStorage = getRxStoragePersistedMemory({ directory: dir });
    const schema = fillWithDefaultSettings(childSchema as never) as never;
    await expect(
      otherStorage.createStorageInstance({ databaseName: 'crashtest', collectionName: 'items', schema, options: {}, multiInstance: false, devMode: false, databaseInstanceToken: 'someone-else' }),
    ).rejects.toThrow(StorageLockedError);
  });
});
