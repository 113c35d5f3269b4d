/**
 * A local desktop database filled as the import dialog fills it (5,000-lead calls of generated
 * people, the desktop bench's tags, stages and scores), for the diagnostics that search such files
 * (search-ties.ts, search-during-load.ts).
 */
import { randomUUID } from 'node:crypto';
import type { LocalDatabase } from '../../../electron/backend/local-db.ts';
import { newLead } from '../../../shared/model/factories.ts';
import type { Lead, Stage } from '../../../shared/model/index.ts';
import type { AnyWrite } from '../../../shared/store.ts';
import { workspaceCreation } from '../../../shared/workspace-setup.ts';
import { seededRandom } from '../../support/deterministic.ts';
import { person } from './bench-people.ts';
import { makeTags, work } from '../desktop.bench.ts';

/** Leads per import call: the import dialog's calls (http-seed.ts). */
export const CALL = 5000;

/** A new workspace's setup, to open a local database for and fill with fillLeads. */
export const benchWorkspace = (name: string): ReturnType<typeof workspaceCreation> =>
  workspaceCreation({ uuid: () => randomUUID() }, '2026-01-01T00:00:00.000Z', { name, owner: { name: 'Bench', email: 'bench@local.test' }, subscriptionStatus: 'active' });

/** Commits the workspace's setup, the bench's tags and `count` leads in CALL-lead commits; each lead's
 * creation time is `createdAt(i, done)` (its index, and the first index of its call). */
export async function fillLeads(
  db: LocalDatabase,
  c: ReturnType<typeof benchWorkspace>,
  count: number,
  createdAt: (i: number, done: number) => string,
  updatedAt?: string,
): Promise<void> {
  await db.store.commit(c.writes);
  const stages = (await db.store.query('stages')).docs as Stage[];
  const tags = makeTags(c.workspaceId);
  await db.store.commit(tags.map((t) => ({ collection: 'tags', id: t.id, before: null, after: t })));
  const rnd = seededRandom(99);
  for (let done = 0; done < count; done += CALL) {
    const writes: AnyWrite[] = [];
    for (let i = done; i < Math.min(count, done + CALL); i++) {
      const made = newLead({ id: randomUUID(), workspaceId: c.workspaceId, now: createdAt(i, done) }, c.leadGroupId, { ...person(i), ...work(rnd, stages, tags) });
      const lead: Lead = updatedAt === undefined ? made : { ...made, updatedAt };
      writes.push({ collection: 'leads', id: lead.id, before: null, after: lead });
    }
    await db.store.commit(writes);
  }
}
