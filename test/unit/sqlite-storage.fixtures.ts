/**
 * Shared set-up of the SQLite storage's tests (electron/backend/storage/sqlite/): temporary data
 * folders, storage instances that are closed after each test, and RxDB documents.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { now, randomToken } from 'rxdb';
import type { RxDocumentData, RxJsonSchema, RxStorage, RxStorageDefaultCheckpoint, RxStorageInstance } from 'rxdb';

export type Instance<T> = RxStorageInstance<T, unknown, object, RxStorageDefaultCheckpoint>;

const dirs: string[] = [];
const open: Instance<unknown>[] = [];

afterEach(async () => {
  for (const i of open.splice(0)) await i.close().catch(() => undefined);
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

export function tempDir(prefix = 'sqlite-storage-'): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
}

/** Closes the instance after the test, whatever happens. */
export function track<T>(instance: Instance<T>): Instance<T> {
  open.push(instance as Instance<unknown>);
  return instance;
}

export type OpenOptions = { databaseName?: string; collectionName?: string; token?: string };

/** A storage instance of `schema` (random database and collection names unless given). */
export async function openInstance<T>(storage: RxStorage<unknown, object>, schema: RxJsonSchema<RxDocumentData<T>>, opts: OpenOptions = {}): Promise<Instance<T>> {
  const instance = await storage.createStorageInstance<T>({
    databaseInstanceToken: opts.token ?? randomToken(10),
    databaseName: opts.databaseName ?? `db${randomToken(8)}`,
    collectionName: opts.collectionName ?? `c${randomToken(8)}`,
    schema,
    options: {},
    multiInstance: false,
    devMode: true,
  });
  return track(instance as Instance<T>);
}

export type KeyValue = { key: string; value?: string };

/** An RxDB document of a `{key, value}` collection, as a storage receives it (`value: null`
 * leaves the field out). */
export function kv(key: string, fields: { value?: string | null; rev?: number; deleted?: boolean } = {}): RxDocumentData<KeyValue> {
  const rev = fields.rev ?? 1;
  return {
    key,
    ...(fields.value === null ? {} : { value: fields.value ?? `value of ${key}` }),
    _deleted: fields.deleted ?? false,
    _rev: `${rev}-${'r'.repeat(rev)}${key.length}`,
    _meta: { lwt: now() },
    _attachments: {},
  };
}
