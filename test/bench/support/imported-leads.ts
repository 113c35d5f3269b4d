/**
 * The lead documents `campaigns.leads.import` makes of a generated export: the same calls as the
 * import dialog sends (importCalls), run by the same operation on the memory store, before any
 * benchmark clock starts. The import's raw baseline inserts these, so it writes the documents the
 * import writes (every mapped column: seniority, location, the list's custom columns), not a smaller
 * lead made by hand: on the same PostgreSQL the import's documents (1,226 B of JSON a lead) insert
 * 6.5% slower than the hand-made ones (1,080 B) did (README, "The import's raw baseline made of the
 * import's own documents").
 */
import { MemoryDatabase } from '../../../shared/memory-store.ts';
import { timeOrderedIds } from '../../../shared/ids.ts';
import type { Lead } from '../../../shared/model/index.ts';
import { execute } from '../../../shared/ops/execute.ts';
import { workspaceCreation } from '../../../shared/workspace-setup.ts';
import { nodeSecrets } from '../../../sync-server/secrets.ts';
import { seededRandom } from '../../support/deterministic.ts';
import { importCalls } from './http-seed.ts';
import type { GeneratedFile } from './http-seed.ts';

/** The leads the import makes of `file` in a new workspace, in the order it made them. */
export async function importedLeads(file: GeneratedFile): Promise<Lead[]> {
  const db = new MemoryDatabase();
  const clock = { now: () => new Date() };
  const w = workspaceCreation(timeOrderedIds, clock.now().toISOString(), { name: 'Bench', owner: { name: 'Bench Owner', email: 'bench@bench.test' }, subscriptionStatus: 'active' });
  const store = db.forWorkspace(w.workspaceId);
  await store.commit(w.writes);
  const env = { actor: { workspaceId: w.workspaceId, memberId: w.ownerId, role: 'owner' as const }, store, clock, ids: timeOrderedIds, random: seededRandom(7), secrets: nodeSecrets };
  const made: string[] = [];
  for (const body of importCalls(file, w.leadGroupId)) {
    const out = await execute('campaigns.leads.import', JSON.parse(body) as unknown, env);
    for (const r of out.results) if (r.code === 'CREATED' && r.leadId) made.push(r.leadId);
  }
  const leads = await store.getMany('leads', made);
  if (leads.length !== file.rows) throw new Error(`The import made ${leads.length} leads of ${file.rows} rows on the memory store.`);
  return leads;
}
