/**
 * Child process for test/unit/sqlite-text-deferred.test.ts (run with tsx): a desktop's local
 * database that imports TEXT_LEADS leads in two bulk commits (a load: its text index is deferred),
 * then builds the text index in small slices while it renames leads, until the parent kills it.
 * Prints `bulk` once the leads are committed, `ack <id> <lastName>` after each acknowledged rename,
 * and `slice` whenever a slice of the text index starts in the worker thread.
 */
import { pathToFileURL } from 'node:url';
import { openLocalDatabase } from '../../electron/backend/local-db.ts';
import { LOAD_TUNING } from '../../electron/backend/storage/sqlite/doc-table.ts';
import { TEXT_TUNING } from '../../electron/backend/storage/sqlite/fts.ts';
import { sqliteInstanceOf } from '../../electron/backend/storage/sqlite/storage.ts';
import { newLead } from '../../shared/model/factories.ts';
import type { Lead } from '../../shared/model/index.ts';

export const TEXT_LEADS = 9000;
export const TEXT_GROUP = 'e0000000-0000-4000-8000-0000000000b1';
const FIRST = ['Ann', 'Bob', 'Céline', 'Dmitri', 'Eve', 'Farah', 'Gus', 'Hana', 'annika', 'Zoë'];
const LAST = ['Smith', 'Jones', 'Ng', 'García', 'Okafor', 'Schmidt', 'Lee'];
const COMPANIES = ['Initech', 'Globex', 'Umbrella', 'Hooli', 'Acme Rockets', ''];

/** Lead `i` of a workspace: names, companies and emails that searches find in many or few leads. */
export const textLead = (workspaceId: string, i: number): Lead =>
  newLead({ id: `e0000000-0000-4000-8000-5${String(i).padStart(11, '0')}`, workspaceId, now: new Date(Date.UTC(2026, 6, 1) + i * 1000).toISOString() }, TEXT_GROUP, {
    firstName: FIRST[i % FIRST.length] as string,
    lastName: `${LAST[(i * 5) % LAST.length] as string}${i % 13 === 0 ? `-${i}` : ''}`,
    email: `p${i}@text${i % 5}.test`,
    company: COMPANIES[(i * 5) % COMPANIES.length] as string,
    phone: i % 11 === 0 ? `+49 30 ${i}` : '',
    rankingScore: i % 17,
  });

async function main(): Promise<void> {
  const [dir, workspaceId] = process.argv.slice(2);
  if (!dir || !workspaceId) throw new Error('usage: sqlite-text-build.child.ts DIR WORKSPACE');
  // Small slices (many of them, so a kill lands in the middle of the build) and a short quiet time.
  TEXT_TUNING.slice = 300;
  LOAD_TUNING.quietMs = 300;
  const db = await openLocalDatabase({ dir, workspaceId, actor: { workspaceId, memberId: 'e0000000-0000-4000-8000-0000000000aa', role: 'owner' } });
  const table = sqliteInstanceOf<Lead>(db.rx.collections.leads?.storageInstance)?.internalsForTests.table;
  if (!table) throw new Error('not on the SQLite storage');
  table.file.watchBuilds((what) => {
    if (what?.startsWith('text index of ')) process.stdout.write('slice\n');
  });
  const leads = Array.from({ length: TEXT_LEADS }, (_, i) => textLead(workspaceId, i));
  for (let i = 0; i < TEXT_LEADS; i += TEXT_LEADS / 2) {
    await db.store.commit(leads.slice(i, i + TEXT_LEADS / 2).map((after) => ({ collection: 'leads', id: after.id, before: null, after })));
  }
  process.stdout.write('bulk\n');
  // Renames while the text index is built: a lead whose text is in the trigram index or still in
  // the queue gets a new name, searchable under it once acknowledged.
  for (let n = 0; ; n++) {
    await new Promise((r) => setTimeout(r, 15));
    const before = await db.store.get('leads', textLead(workspaceId, (n * 397) % TEXT_LEADS).id);
    if (!before) continue;
    const lastName = `Renamed${n}`;
    await db.store.commit([{ collection: 'leads', id: before.id, before, after: { ...before, lastName, fullName: `${before.firstName} ${lastName}` } }]);
    process.stdout.write(`ack ${before.id} ${lastName}\n`);
  }
}

// Only when run as a program: the test imports the leads from here.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((e: unknown) => {
    process.stderr.write(`${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}\n`);
    process.exit(1);
  });
}
