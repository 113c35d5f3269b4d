/** A commit written ahead (Tx.writeAhead, Store.commitAhead) whose checked parts became wrong: the
 * operation sealed leads in a stage, their rules passed and they went to PostgreSQL, and then it
 * turned that stage into a lost one, which a lead may only be in with a close reason. execute sees
 * that a collection the ahead parts' rules read was written afterwards, takes the parts back and
 * checks the whole commit again: the call is refused and nothing is stored. No operation of the
 * specification does this today (an import's later writes are leads and enrollments, which no lead
 * rule reads), so a test-only operation does it here. On PGlite nothing is written ahead and the same
 * refusal comes from the one check at the end. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { timeOrderedIds } from '../../shared/ids.ts';
import type { Lead, Stage } from '../../shared/model/index.ts';
import { newLead } from '../../shared/model/factories.ts';
import { defineOp } from '../../shared/ops/define.ts';
import type { OpDef } from '../../shared/ops/define.ts';
import { execute } from '../../shared/ops/execute.ts';
import { operations } from '../../shared/ops/index.ts';
import { nodeSecrets } from '../../sync-server/secrets.ts';
import { seededRandom } from '../support/harness.ts';
import { BACKENDS } from './support/db.ts';
import { startTestServer } from './support/server.ts';
import type { TestServer } from './support/server.ts';

const NAME = 'test.leadsAheadThenLoseTheirStage';
/** Two parts' worth of the commit exactly (pg-store's COMMIT_PART, 500): every lead is checked and
 * sent before the stage changes, and the commit's last part holds the stage alone. */
const LEADS = 1_000;

const op = defineOp({
  name: NAME,
  method: 'POST',
  summary: 'Test only: creates leads in a stage, sealed and written ahead, then makes that stage a lost one.',
  input: z.object({ leadGroupId: z.string(), stageId: z.string() }),
  output: z.object({ created: z.number() }),
  permission: 'member',
  dryRun: false,
  mutates: true,
  async handler(input, ctx) {
    const now = ctx.clock.now().toISOString();
    for (let i = 0; i < LEADS; i++) {
      const lead: Lead = newLead({ id: ctx.ids.uuid(), workspaceId: ctx.actor.workspaceId, now }, input.leadGroupId, {
        firstName: `Ahead${i}`, email: `ahead${i}@stale.example`, pipelineStageId: input.stageId,
      });
      await ctx.db.create('leads', lead);
      ctx.db.seal('leads', lead.id);
      if (i % 100 === 99) await ctx.db.writeAhead();
    }
    const stage = await ctx.db.get('stages', input.stageId);
    if (!stage) throw new Error('stage missing');
    await ctx.db.put('stages', { ...stage, category: 'LOST', updatedAt: now });
    return { created: LEADS };
  },
});

describe.each(BACKENDS)('a commit written ahead whose rules read what the operation wrote afterwards (%s)', (backend) => {
  let s: TestServer;
  const registry = operations as Record<string, OpDef>;

  beforeAll(async () => {
    registry[NAME] = op as unknown as OpDef;
    s = await startTestServer(backend);
  }, 60_000);

  afterAll(async () => {
    delete registry[NAME];
    await s?.close();
  });

  it('is checked again as a whole: the call is refused and nothing is stored', async () => {
    const ws = s.ours.workspaceId;
    const store = s.db.forWorkspace(ws);
    const [group] = (await store.query('leadGroups')).docs;
    const stage = (await store.query('stages')).docs.find((st: Stage) => st.category === 'NEW');
    if (!group || !stage) throw new Error('the workspace has no list or no NEW stage');
    const before = await s.snapshot(ws);
    const seqBefore = await s.maxSeq(ws);
    let sentAhead = 0;
    const call = s.db.withStore(ws, async (st) => {
      // Count the parts the store takes ahead: on PostgreSQL the test is only meaningful if some are.
      const commitAhead = st.commitAhead?.bind(st);
      if (commitAhead) {
        st.commitAhead = (check) => commitAhead(async (part) => {
          sentAhead += part.length;
          await check(part);
        });
      }
      return execute(NAME, { leadGroupId: group.id, stageId: stage.id }, {
        actor: { workspaceId: ws, memberId: s.ours.ownerId, role: 'owner' },
        store: st, clock: s.clock, ids: timeOrderedIds, random: seededRandom(1), secrets: nodeSecrets,
      });
    }, { batch: false });
    await expect(call).rejects.toMatchObject({ code: 'CLOSE_REASON_REQUIRED' });
    if (backend === 'postgres') expect(sentAhead).toBe(LEADS);
    expect(await s.maxSeq(ws)).toBe(seqBefore);
    expect(await s.snapshot(ws)).toEqual(before);
    expect((await store.get('stages', stage.id))?.category).toBe('NEW');
  }, 60_000);
});
