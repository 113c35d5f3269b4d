/**
 * Child process for test/unit/sqlite-storage.test.ts (run with tsx).
 * `writer DIR`: writes documents forever through an RxDB collection on the SQLite storage, printing
 * `ack <id> <rev>` after each acknowledged write, until the parent kills it.
 * `holder DIR`: opens the database, prints `ready` and waits.
 */
import { pathToFileURL } from 'node:url';
import { createRxDatabase } from 'rxdb';
import type { RxCollection } from 'rxdb';
import { getRxStorageSqlite } from '../../electron/backend/storage/sqlite/storage.ts';

export const itemSchema = {
  title: 'items',
  version: 0,
  primaryKey: 'id',
  type: 'object',
  properties: { id: { type: 'string', maxLength: 40 }, name: { type: 'string', maxLength: 100 }, n: { type: 'integer', minimum: 0, maximum: 1_000_000_000, multipleOf: 1 } },
  required: ['id', 'name', 'n'],
  indexes: ['name', 'n'],
  additionalProperties: false,
} as const;

export type Item = { id: string; name: string; n: number };

async function main(): Promise<void> {
  const [mode, dir] = process.argv.slice(2);
  if (!dir || (mode !== 'writer' && mode !== 'holder')) throw new Error('usage: sqlite-storage.child.ts writer|holder DIR');
  const db = await createRxDatabase<{ items: RxCollection<Item> }>({ name: 'crashtest', storage: getRxStorageSqlite({ directory: dir, textSearch: { items: ['name'] } }), multiInstance: false });
  await db.addCollections({ items: { schema: itemSchema } });
  if (mode === 'holder') {
    process.stdout.write('ready\n');
    setInterval(() => undefined, 1 << 30);
    return;
  }
  for (let i = 0; ; i++) {
    const id = `item-${String(i).padStart(6, '0')}`;
    const doc = await db.items.insert({ id, name: `Item ${i}`, n: i });
    process.stdout.write(`ack ${id} ${doc.toMutableJSON(true)._rev}\n`);
    if (i % 3 === 2) {
      // An update of an older document, so revisions above 1 are checked too.
      const older = await db.items.findOne(`item-${String(i - 1).padStart(6, '0')}`).exec();
      if (older) {
        const updated = await older.incrementalPatch({ name: `Item ${i - 1} renamed`, n: older.n + 1000 });
        process.stdout.write(`ack ${updated.id} ${updated.toMutableJSON(true)._rev}\n`);
      }
    }
  }
}

// Only when run as a program: the test imports the schema from here.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((e: unknown) => {
    process.stderr.write(`${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}\n`);
    process.exit(1);
  });
}
