/**
 * Closing the SQLite storage (electron/backend/storage/sqlite/) while its file's worker thread has
 * work: right after a bulk write (a load started, its builds pending, a checkpoint running: in a
 * child process, where nothing else keeps the process alive while the close settles), during an
 * index build, during a checkpoint. Each close settles within a bound, leaves no connection to the file (no `-wal`/`-shm`, another
 * connection gets it in EXCLUSIVE locking mode), and every document is there when it is opened
 * again, the load going on.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { CHECKPOINT_TUNING, sqliteFilePath } from '../../electron/backend/storage/sqlite/file.ts';
import { CLOSE_DB, CLOSE_ROWS, openItems, until, writeItems } from './sqlite-storage-close.child.ts';
import { tempDir } from './sqlite-storage.fixtures.ts';

const CLOSE_BOUND_MS = 30_000;

/** Rejects if `p` has not settled within CLOSE_BOUND_MS. */
function within<T>(p: Promise<T>, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, fail) => (timer = setTimeout(() => fail(new Error(`${what} did not settle within ${CLOSE_BOUND_MS} ms`)), CLOSE_BOUND_MS)));
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/** Runs the child in `mode`; resolves with its exit code and output (killed past the bound). */
function runChild(mode: 'bulk', dir: string): Promise<{ code: number | null; out: string; err: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'sqlite-storage-close.child.ts'), mode, dir], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr.on('data', (b: Buffer) => (err += b.toString()));
  const kill = setTimeout(() => child.kill('SIGKILL'), CLOSE_BOUND_MS + 30_000);
  return new Promise((done) =>
    child.on('exit', (code) => {
      clearTimeout(kill);
      done({ code, out, err });
    }),
  );
}

/** No connection of ours is left on the file: SQLite removed its WAL and shared-memory index with
 * the last connection, and a new connection takes the file in EXCLUSIVE locking mode. */
async function expectNoConnection(dir: string): Promise<void> {
  const path = sqliteFilePath(dir, CLOSE_DB);
  // Work started behind the close would open the file again a moment later.
  await new Promise((r) => setTimeout(r, 300));
  expect(existsSync(`${path}-wal`), 'a -wal file after close').toBe(false);
  expect(existsSync(`${path}-shm`), 'a -shm file after close').toBe(false);
  const other = new Database(path, { timeout: 0 });
  try {
    other.pragma('locking_mode = EXCLUSIVE');
    other.exec('BEGIN EXCLUSIVE');
    other.exec('COMMIT');
  } finally {
    other.close();
  }
}

/** Every document written is there after opening again, and the load the close cut short ends. */
async function expectAllThere(dir: string, rows: number): Promise<void> {
  const instance = await openItems(dir);
  try {
    const { file, table } = instance.internalsForTests;
    expect(file.db.prepare(`SELECT count(*) FROM "${table.table}"`).pluck().get()).toBe(rows);
    const found = await instance.findDocumentsById([`item-0`, `item-${rows - 1}`], false);
    expect(found.map((d) => d.name)).toEqual(['Item 0', `Item ${rows - 1}`]);
    expect(table.isLoading).toBe(true);
    await table.finishLoading();
    expect(table.isLoading).toBe(false);
  } finally {
    await instance.close();
  }
}

describe('SQLite storage: closing while the worker thread has work', () => {
  const tuning = { ...CHECKPOINT_TUNING };
  afterEach(() => Object.assign(CHECKPOINT_TUNING, tuning));

  it('right after a bulk write (a load started, its builds pending, a checkpoint running), the close settles on its own', async () => {
    const dir = tempDir();
    const { code, out, err } = await runChild('bulk', dir);
    expect({ code, out, err }).toEqual({ code: 0, out: 'closed\n', err: '' });
    await expectNoConnection(dir);
    await expectAllThere(dir, CLOSE_ROWS.bulk);
  }, 120_000);

  it('during an index build, waits for it and starts no further build', async () => {
    const dir = tempDir();
    const instance = await openItems(dir);
    const { file, table } = instance.internalsForTests;
    await writeItems(instance, CLOSE_ROWS.build);
    // The load's next build is refused, not run on a new connection behind the close.
    const refused = expect(within(table.finishLoading(), 'finishLoading')).rejects.toThrow(/closed/);
    await until(() => file.building, 'a build');
    await within(instance.close(), 'close');
    await expectNoConnection(dir);
    await refused;
    await expectAllThere(dir, CLOSE_ROWS.build);
  }, 120_000);

  it('during a checkpoint, waits for it and starts no RESTART one behind the close', async () => {
    // Every checkpoint at once, and a RESTART one after each passive one.
    CHECKPOINT_TUNING.delayMs = 0;
    CHECKPOINT_TUNING.walLimitBytes = 0;
    const dir = tempDir();
    const instance = await openItems(dir);
    const { file } = instance.internalsForTests;
    await writeItems(instance, CLOSE_ROWS.bulk);
    await until(() => file.checkpointUnderWay, 'a checkpoint');
    await within(instance.close(), 'close');
    await expectNoConnection(dir);
    await expectAllThere(dir, CLOSE_ROWS.bulk);
  }, 120_000);
});
