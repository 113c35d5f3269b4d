/**
 * The local demo workspace: a workspace with its owner (you), the realistic CRM of
 * shared/demo-seed.ts (leads, sandbox senders, campaigns, notes and tasks), and a teammate whose notes
 * and task show what you can read but not change. The content comes from a fixed seed, so every demo
 * looks the same; ids are fresh, so two demos never collide on a server.
 */
import type { Ids } from '../../shared/context.ts';
import { demoSeedWrites } from '../../shared/demo-seed.ts';
import { timeOrderedIds } from '../../shared/ids.ts';
import { newActivity } from '../../shared/model/factories.ts';
import type { Lead, Member, Stage } from '../../shared/model/index.ts';
import type { AnyWrite } from '../../shared/store.ts';
import { workspaceCreation } from '../../shared/workspace-setup.ts';
import { seededRandom } from '../../shared/seeded-random.ts';
import type { DemoWorkspace } from './session.ts';

export const DEMO_OWNER = { name: 'Alex Morgan', email: 'alex@demo.outreach.test' };
export const DEMO_TEAMMATE = { name: 'Jordan Lee', email: 'jordan@demo.outreach.test' };

const TEAMMATE_NOTES = [
  'Met at SaaStr last spring; prefers short messages and hates calendar links in the first touch.',
  'Their renewal with the current vendor is in Q3. Worth a catch-up in June.',
  'Spoke with their assistant: the best time to reach them is Tuesday mornings.',
];

export async function buildDemoWorkspace(opts: { now: Date; ids?: Ids; seed?: number; timeZone?: string }): Promise<DemoWorkspace> {
  const ids: Ids = opts.ids ?? timeOrderedIds;
  const now = opts.now.toISOString();
  const ws = workspaceCreation(ids, now, { name: 'Demo workspace', owner: DEMO_OWNER, subscriptionStatus: 'active' });
  const stages = ws.writes.flatMap((w) => (w.collection === 'stages' && w.after ? [w.after as Stage] : []));
  // The campaigns' windows cover every hour of this machine's zone, so a Start sends at once.
  const timeZone = opts.timeZone ?? Intl.DateTimeFormat().resolvedOptions().timeZone;
  const seed = await demoSeedWrites({
    workspaceId: ws.workspaceId, ownerId: ws.ownerId, leadGroupId: ws.leadGroupId, ids, now, random: seededRandom(opts.seed ?? 20261116), stages,
    existing: ws.writes, userTimeZone: timeZone,
  });

  const teammateId = ids.uuid();
  const teammate: Member = { id: teammateId, workspaceId: ws.workspaceId, createdAt: now, updatedAt: now, name: DEMO_TEAMMATE.name, email: DEMO_TEAMMATE.email, role: 'member' };
  const leads = seed.writes.flatMap((w) => (w.collection === 'leads' && w.after ? [w.after as Lead] : []));
  // The teammate worked the first few leads of the list (newest first, as the table shows them).
  const worked = [...leads].sort((a, b) => (a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : a.id < b.id ? -1 : 1)).slice(0, TEAMMATE_NOTES.length);
  const stamp = () => ({ id: ids.uuid(), workspaceId: ws.workspaceId, now });
  const extra: AnyWrite[] = [{ collection: 'members', id: teammateId, before: null, after: teammate }];
  worked.forEach((lead, i) => {
    const note = newActivity(stamp(), lead.id, teammateId, 'NOTE', TEAMMATE_NOTES[i] ?? '');
    extra.push({ collection: 'activities', id: note.id, before: null, after: note });
  });
  const first = worked[0];
  if (first) {
    const due = new Date(opts.now.getTime() + 2 * 86_400_000).toISOString();
    const task = newActivity(stamp(), first.id, teammateId, 'TASK', 'Send them the case study from the fintech pilot', {
      metadata: { taskStatus: 'open', assigneeId: ws.ownerId, completedAt: null, completedBy: null },
      dueAt: due,
    });
    extra.push({ collection: 'activities', id: task.id, before: null, after: task });
  }
  const changed = new Set(seed.writes.filter((w) => w.before !== null).map((w) => `${w.collection}/${w.id}`));
  return {
    workspaceId: ws.workspaceId,
    workspaceName: 'Demo workspace',
    member: { id: ws.ownerId, name: DEMO_OWNER.name, role: 'owner' },
    // The seed returns the workspace's documents it changed too: those replace the creation writes.
    writes: [...ws.writes.filter((w) => !changed.has(`${w.collection}/${w.id}`)), ...seed.writes.map((w) => ({ ...w, before: null })), ...extra],
  };
}
