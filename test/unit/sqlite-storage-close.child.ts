/**
 * Child process for test/unit/sqlite-storage-close.test.ts (run with tsx): closes a storage
 * instance while its file's worker thread still has work, then prints `closed` once the close has
 * settled and lets the process end on its own (nothing else keeps it alive: a close that never
 * settles ends it without `closed`).
 * `bulk DIR`: a local bulk write into the empty table (a load starts, its builds wait for the quiet
 * window), then closes while the checkpoint that write asked for runs in the worker.
 */
import { pathToFileURL } from 'node:url';
import { fillWithDefaultSettings, now, randomToken } from 'rxdb';
import type { RxDocumentData, RxJsonSchema } from 'rxdb';
import { CHECKPOINT_TUNING } from '../../electron/backend/storage/sqlite/file.ts';
import { getRxStorageSqlite, sqliteInstanceOf } from '../../electron/backend/storage/sqlite/storage.ts';
import type { SqliteStorageInstance } from '../../electron/backend/storage/sqlite/instance.ts';
import { itemSchema } from './sqlite-storage.child.ts';
import type { Item } from './sqlite-storage.child.ts';

export const CLOSE_DB = 'closing';

/** Rows of one bulk write: `bulk` as the import bench's 5,000-row run; `build`, a table whose
 * index builds take a while. */
export const CLOSE_ROWS = { bulk: 5000, build: 60_000 } as const;

export const itemDoc = (i: number): RxDocumentData<Item> => ({ id: `item-${i}`, name: `Item ${i}`, n: i, _deleted: false, _rev: '1-a', _meta: { lwt: now() }, _attachments: {} });

/** The items instance of database CLOSE_DB in `dir`. */
export async function openItems(dir: string): Promise<SqliteStorageInstance<Item>> {
  const instance = await getRxStorageSqlite({ directory: dir }).createStorageInstance<Item>({
    databaseInstanceToken: randomToken(10),
    databaseName: CLOSE_DB,
    collectionName: 'items',
    schema: fillWithDefaultSettings(itemSchema as unknown as RxJsonSchema<Item>),
    options: {},
    multiInstance: false,
    devMode: false,
  });
  const sqlite = sqliteInstanceOf<Item>(instance);
  if (!sqlite) throw new Error('not the SQLite storage');
  return sqlite;
}

/** One local bulk write of `rows` items into the instance (a load, when the table holds fewer). */
export async function writeItems(instance: SqliteStorageInstance<Item>, rows: number): Promise<void> {
  const res = await instance.bulkWrite(Array.from({ length: rows }, (_, i) => ({ document: itemDoc(i) })), 'test-local-write');
  if (res.error.length > 0) throw new Error(`${res.error.length} rows refused`);
}

/** Resolves once `ready` holds, looking at every turn of the event loop (at most `ms`). */
export async function until(ready: () => boolean, what: string, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!ready()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setImmediate(r));
  }
}

async function main(): Promise<void> {
  const [mode, dir] = process.argv.slice(2);
  if (!dir || mode !== 'bulk') throw new Error('usage: sqlite-storage-close.child.ts bulk DIR');
  // A checkpoint right after each commit, so one is in the worker when the close comes.
  CHECKPOINT_TUNING.delayMs = 0;
  const instance = await openItems(dir);
  const { file, table } = instance.internalsForTests;
  await writeItems(instance, CLOSE_ROWS.bulk);
  if (!table.isLoading) throw new Error('the bulk write started no load');
  await until(() => file.checkpointUnderWay, 'a checkpoint');
  await instance.close();
  process.stdout.write('closed\n');
}

// Only when run as a program: the test imports the helpers from here.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((e: unknown) => {
    process.stderr.write(`${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}\n`);
    process.exit(1);
  });
}
