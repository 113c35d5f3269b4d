/**
 * Child process for test/unit/sqlite-store-crash.test.ts (run with tsx): a desktop's local
 * database committing through the Store until the parent kills it. `writer DIR WORKSPACE`: one bulk
 * commit of BULK leads (which starts a bulk load), `bulk` when it is acknowledged, then one small
 * commit after another (a new lead and an edit of an older one), `ack <id> <jobTitle>` after each,
 * forever; the load's indexes get built in between, once it is quiet.
 */
import { pathToFileURL } from 'node:url';
import { openLocalDatabase } from '../../electron/backend/local-db.ts';
import { newLead } from '../../shared/model/factories.ts';
import type { Lead } from '../../shared/model/index.ts';

export const BULK = 3000;
export const GROUP = 'd0000000-0000-4000-8000-0000000000b1';

export const crashLead = (workspaceId: string, i: number): Lead =>
  newLead({ id: `d0000000-0000-4000-8000-5${String(i).padStart(11, '0')}`, workspaceId, now: new Date(Date.UTC(2026, 6, 1) + i * 1000).toISOString() }, GROUP, {
    firstName: `Crash${i}`,
    lastName: i % 4 ? 'Smith' : 'Okafor',
    email: `c${i}@crash.test`,
    rankingScore: i % 17,
  });

async function main(): Promise<void> {
  const [dir, workspaceId] = process.argv.slice(2);
  if (!dir || !workspaceId) throw new Error('usage: sqlite-store.child.ts DIR WORKSPACE');
  const db = await openLocalDatabase({ dir, workspaceId, actor: { workspaceId, memberId: 'd0000000-0000-4000-8000-0000000000aa', role: 'owner' } });
  const bulk = Array.from({ length: BULK }, (_, i) => crashLead(workspaceId, i));
  await db.store.commit(bulk.map((after) => ({ collection: 'leads', id: after.id, before: null, after })));
  process.stdout.write('bulk\n');
  for (let i = BULK; ; i++) {
    const lead = crashLead(workspaceId, i);
    await db.store.commit([{ collection: 'leads', id: lead.id, before: null, after: lead }]);
    process.stdout.write(`ack ${lead.id} ${lead.jobTitle}\n`);
    const older = await db.store.get('leads', crashLead(workspaceId, i - BULK).id);
    if (older) {
      const jobTitle = `edited at ${i}`;
      await db.store.commit([{ collection: 'leads', id: older.id, before: older, after: { ...older, jobTitle } }]);
      process.stdout.write(`ack ${older.id} ${jobTitle}\n`);
    }
  }
}

// Only when run as a program: the test imports the leads from here.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((e: unknown) => {
    process.stderr.write(`${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}\n`);
    process.exit(1);
  });
}
