/**
 * Reopening a desktop's database while its close is still finishing (the backend restarted by the
 * app: sign-in, switching workspaces) waits for that close instead of failing with
 * StorageLockedError, and sees every write the closed one made. The close's slow part is ending
 * the file's worker threads (a reader, an index builder) and a checkpoint under way.
 */
import { fillWithDefaultSettings, now } from 'rxdb';
import type { RxJsonSchema } from 'rxdb';
import { describe, expect, it } from 'vitest';
import { StorageFile, sqliteFilePath } from '../../electron/backend/storage/sqlite/file.ts';
import { getRxStorageSqlite, sqliteInstanceOf } from '../../electron/backend/storage/sqlite/storage.ts';
import { itemSchema } from './sqlite-storage.child.ts';
import type { Item } from './sqlite-storage.child.ts';
import { openInstance, tempDir, track } from './sqlite-storage.fixtures.ts';

const schema = () => fillWithDefaultSettings(itemSchema as unknown as RxJsonSchema<Item>);
const item = (id: string, name: string) => ({ id, name, n: 1, _deleted: false, _attachments: {}, _rev: '1-a', _meta: { lwt: now() } });
/** Starts the file's reader thread, which its close has to end. */
const readInThread = (file: StorageFile) => file.readInWorker([{ sql: 'SELECT 1 AS one', params: [] }]);
/** One turn of the event loop: a close asked for is then past its queued work, ending the threads. */
const nextTurn = () => new Promise<void>((r) => setImmediate(r));

/** A file of its own, opened, whose close is under way (ending its reader thread, the lock held). */
async function closingFile(name: string): Promise<{ path: string; file: StorageFile; closing: Promise<void> }> {
  const path = sqliteFilePath(tempDir(), name);
  const file = await StorageFile.opened(path, 'NORMAL');
  await readInThread(file);
  const closing = file.release();
  await nextTurn();
  return { path, file, closing };
}

describe('reopening a file while its close is finishing', () => {
  it('waits for the close and opens it again, with what was written', async () => {
    const storage = getRxStorageSqlite({ directory: tempDir() });
    const names = { databaseName: 'reopen', collectionName: 'items' };
    const first = await openInstance<Item>(storage, schema(), names);
    await first.bulkWrite([{ document: item('a', 'Ada') }], 'rx-collection');
    const file = sqliteInstanceOf<Item>(first)?.internalsForTests.file;
    if (!file) throw new Error('not our storage');
    expect(await readInThread(file)).toEqual([[{ one: 1 }]]);
    const closing = first.close();
    // Past the queued work, the close is ending the reader thread with the file's lock held.
    await nextTurn();
    const again = track(await openInstance<Item>(storage, schema(), names));
    await closing;
    const found = await again.findDocumentsById(['a'], false);
    expect(found.map((d) => d.name)).toEqual(['Ada']);
  });

  it('every opener waits for the same close and shares the file it opens next', async () => {
    const { path, file, closing } = await closingFile('plain');
    const [a, b] = await Promise.all([StorageFile.opened(path, 'NORMAL'), StorageFile.opened(path, 'NORMAL')]);
    await closing;
    expect(a).toBe(b);
    expect(a).not.toBe(file);
    await a.release();
    await b.release();
  });

  it('a direct open while the close is under way says so instead of blaming another process', async () => {
    const { path, closing } = await closingFile('direct');
    expect(() => StorageFile.open(path, 'NORMAL')).toThrow(/still closing in this process/);
    await closing;
    const again = StorageFile.open(path, 'NORMAL');
    await again.release();
  });
});
