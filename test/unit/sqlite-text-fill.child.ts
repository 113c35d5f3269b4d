/**
 * Child process for test/unit/sqlite-text-fill.test.ts (run with tsx): `DIR` writes the test's
 * leads into an empty leads table as pulled pages (a bulk load, whose texts wait for the text
 * index's fill: electron/backend/storage/sqlite/fts.ts), then lets the load's index builds and
 * the fill start at once, in small slices, and prints `slice` whenever one has committed, until
 * the parent kills it.
 */
import { pathToFileURL } from 'node:url';
import { fillWithDefaultSettings, now } from 'rxdb';
import type { RxDocumentData, RxJsonSchema, RxStorage } from 'rxdb';
import { LOAD_TUNING, TEXT_FILL_TUNING } from '../../electron/backend/storage/sqlite/doc-table.ts';
import { getRxStorageSqlite, sqliteInstanceOf } from '../../electron/backend/storage/sqlite/storage.ts';
import { STORE_LAYOUT, TEXT_SEARCH } from '../../electron/backend/store-layout.ts';
import { newLead } from '../../shared/model/factories.ts';
import { COLLECTIONS } from '../../shared/model/index.ts';

export type Json = Record<string, unknown>;
export type Doc = RxDocumentData<Json>;

export const DB = 'text-fill';
export const leadSchema = fillWithDefaultSettings(COLLECTIONS.leads.schema as unknown as RxJsonSchema<Json>) as RxJsonSchema<Doc>;
export const storage = (dir: string) => getRxStorageSqlite({ directory: dir, textSearch: TEXT_SEARCH, storeLayout: STORE_LAYOUT }) as RxStorage<unknown, object>;
/** The context RxDB gives a write of pulled documents. */
export const PULLED = 'replication-downstream-test';
/** The fill's words in the sync status. */
export const FILL_LABEL = 'leads for search';

const LAST_NAMES = ['Smith', 'Okafor', 'Émile', 'Nguyen', 'O"Brien'];

/** Lead `i` of the test (every 40th one deleted): names and companies shared by many, an email
 * fragment (`-<i>@`) by one, a capital letter outside ASCII (lower-cased by JavaScript). */
export function lead(i: number): Doc {
  const l = newLead(
    { id: `f0000000-0000-4000-8000-${String(i).padStart(12, '0')}`, workspaceId: 'w1', now: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString() },
    'g1',
    { firstName: i % 3 === 0 ? 'Ann' : 'Bo', lastName: `${LAST_NAMES[i % LAST_NAMES.length] ?? ''}`, email: `ann-${i}@acme.example`, company: i % 7 === 0 ? 'ÉCOLE Polytechnique' : 'Acme' },
  );
  return { ...(l as unknown as Json), _deleted: i % 40 === 39, _rev: '1-a', _meta: { lwt: now() }, _attachments: {} } as Doc;
}

async function main(): Promise<void> {
  const [dir] = process.argv.slice(2);
  if (!dir) throw new Error('usage: sqlite-text-fill.child.ts DIR');
  // The builds and the fill wait until every page is written, then start at once (holdLoad below).
  LOAD_TUNING.quietMs = 600_000;
  Object.assign(TEXT_FILL_TUNING, { rows: 50, minRows: 50, maxRows: 50 });
  const inst = await storage(dir).createStorageInstance<Json>({ databaseInstanceToken: 'tok0000001', databaseName: DB, collectionName: 'leads', schema: leadSchema, options: {}, multiInstance: false, devMode: false });
  const sqlite = sqliteInstanceOf<Json>(inst);
  if (!sqlite) throw new Error('not the SQLite storage');
  let filling = false;
  sqlite.internalsForTests.file.watchBuilds((what) => {
    if (what === FILL_LABEL) filling = true;
    else if (what === null && filling) {
      filling = false;
      process.stdout.write('slice\n');
    }
  });
  for (let page = 0; page < 3; page++) {
    const docs = Array.from({ length: 1000 }, (_, i) => lead(page * 1000 + i));
    const res = await inst.bulkWrite(docs.map((document) => ({ document })), PULLED);
    if (res.error.length > 0) throw new Error(`page ${page}: ${JSON.stringify(res.error[0])}`);
  }
  LOAD_TUNING.quietMs = 0;
  sqlite.holdLoad(false);
  process.stdout.write('written\n');
  setInterval(() => undefined, 1 << 30);
}

// Only when run as a program: the test imports the leads from here.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((e: unknown) => {
    process.stderr.write(`${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}\n`);
    process.exit(1);
  });
}
