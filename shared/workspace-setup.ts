/** Creating a workspace: the workspace, its owner, the default pipeline stages and a first lead group.
 * Returns creation writes for the caller's store (server CLI, desktop demo, tests). */
import type { AnyWrite } from './store.ts';
import type { Ids } from './context.ts';
import type { Member, SubscriptionStatus, Workspace } from './model/index.ts';
import { DEFAULT_STAGES, newLeadGroup, newStage } from './model/factories.ts';

export type NewWorkspace = {
  name: string;
  owner: { name: string; email: string };
  subscriptionStatus?: SubscriptionStatus;
};

export function workspaceCreation(ids: Ids, now: string, input: NewWorkspace): { workspaceId: string; ownerId: string; leadGroupId: string; writes: AnyWrite[] } {
  const workspaceId = ids.uuid();
  const ownerId = ids.uuid();
  const workspace: Workspace = {
    id: workspaceId, workspaceId, createdAt: now, updatedAt: now, name: input.name,
    subscriptionStatus: input.subscriptionStatus ?? 'trialing',
  };
  const owner: Member = { id: ownerId, workspaceId, createdAt: now, updatedAt: now, name: input.owner.name, email: input.owner.email, role: 'owner' };
  const stamp = () => ({ id: ids.uuid(), workspaceId, now });
  const stages = DEFAULT_STAGES.map((s, i) => newStage(stamp(), s.name, s.category, s.colorHex, i));
  const group = newLeadGroup(stamp(), 'All leads', () => ids.uuid());
  const writes: AnyWrite[] = [
    { collection: 'workspaces', id: workspaceId, before: null, after: workspace },
    { collection: 'members', id: ownerId, before: null, after: owner },
    ...stages.map((s): AnyWrite => ({ collection: 'stages', id: s.id, before: null, after: s })),
    { collection: 'leadGroups', id: group.id, before: null, after: group },
  ];
  return { workspaceId, ownerId, leadGroupId: group.id, writes };
}
