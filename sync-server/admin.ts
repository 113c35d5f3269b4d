/** Workspace administration run by the server operator (the CLI), as the system actor: every write
 * still passes the shared rules and is committed in one transaction. */
import type { Clock, Ids, Secrets } from '../shared/context.ts';
import { systemActor } from '../shared/context.ts';
import { demoSeedWrites } from '../shared/demo-seed.ts';
import type { AnyWrite } from '../shared/store.ts';
import type { DemoSeedCounts } from '../shared/demo-seed.ts';
import { DomainError, notFound } from '../shared/errors.ts';
import { isEmailAddress } from '../shared/intake/clean.ts';
import { ROLES, SUBSCRIPTION_STATUSES } from '../shared/model/index.ts';
import type { ApiKey, Role, SubscriptionStatus } from '../shared/model/index.ts';
import { execute } from '../shared/ops/execute.ts';
import { validateWrites } from '../shared/rules/index.ts';
import type { Store } from '../shared/store.ts';
import { Tx } from '../shared/tx.ts';
import { workspaceCreation } from '../shared/workspace-setup.ts';
import type { PgDatabase } from './pg-database.ts';

export type AdminDeps = { clock: Clock; ids: Ids; secrets: Secrets; random: () => number };


/** Runs `build` over a Tx, validates its writes with the rules as the system, commits them. */
async function commitAsSystem<T>(db: PgDatabase, workspaceId: string, deps: AdminDeps, build: (tx: Tx, store: Store) => Promise<T>): Promise<T> {
  return db.withStore(workspaceId, async (store) => {
    const tx = new Tx(store);
    const out = await build(tx, store);
    const writes = tx.writes();
    await validateWrites(writes, { actor: systemActor(workspaceId), read: tx, now: deps.clock.now() });
    await store.commit(writes);
    return out;
  });
}

async function requireWorkspace(store: Store, workspaceId: string): Promise<void> {
  if (!(await store.get('workspaces', workspaceId))) throw notFound('Workspace', workspaceId);
}

export async function createWorkspace(
  db: PgDatabase,
  input: { name: string; ownerEmail: string; ownerName?: string },
  deps: AdminDeps,
): Promise<{ workspaceId: string; memberId: string; apiKey: string }> {
  const name = input.name.trim();
  const email = input.ownerEmail.trim();
  if (!name || name.length > 200) throw new DomainError('INVALID_INPUT', 'The workspace name must be 1 to 200 characters.', { field: 'name' });
  if (!isEmailAddress(email)) throw new DomainError('INVALID_INPUT', `${email} is not an email address.`, { field: 'ownerEmail' });
  const now = deps.clock.now().toISOString();
  const ownerName = input.ownerName?.trim() || nameFromEmail(email);
  const ws = workspaceCreation(deps.ids, now, { name, owner: { name: ownerName, email } });
  const apiKey = deps.secrets.newApiKey();
  const key: ApiKey = {
    id: deps.ids.uuid(), workspaceId: ws.workspaceId, createdAt: now, updatedAt: now, memberId: ws.ownerId, name: 'Owner key',
    prefix: apiKey.slice(0, 12), hash: deps.secrets.hash(apiKey), lastUsedAt: null, revokedAt: null,
  };
  await commitAsSystem(db, ws.workspaceId, deps, async (tx) => {
    for (const w of ws.writes) if (w.after) await tx.put(w.collection, w.after as never);
    await tx.put('apiKeys', key);
  });
  return { workspaceId: ws.workspaceId, memberId: ws.ownerId, apiKey };
}

export async function createMember(
  db: PgDatabase,
  input: { workspaceId: string; name: string; email: string; role: string },
  deps: AdminDeps,
): Promise<{ memberId: string; apiKey: string }> {
  if (!(ROLES as readonly string[]).includes(input.role)) {
    throw new DomainError('INVALID_INPUT', `The role must be one of ${ROLES.join(', ')}.`, { field: 'role' });
  }
  return db.withStore(input.workspaceId, async (store) => {
    await requireWorkspace(store, input.workspaceId);
    return execute('members.create', { name: input.name, email: input.email, role: input.role as Role }, {
      actor: systemActor(input.workspaceId),
      store,
      clock: deps.clock,
      ids: deps.ids,
      random: deps.random,
      secrets: deps.secrets,
    });
  });
}

export async function setSubscription(
  db: PgDatabase,
  input: { workspaceId: string; status: string },
  deps: AdminDeps,
): Promise<{ workspaceId: string; status: SubscriptionStatus }> {
  if (!(SUBSCRIPTION_STATUSES as readonly string[]).includes(input.status)) {
    throw new DomainError('INVALID_INPUT', `The status must be one of ${SUBSCRIPTION_STATUSES.join(', ')}.`, { field: 'status' });
  }
  const status = input.status as SubscriptionStatus;
  await commitAsSystem(db, input.workspaceId, deps, async (tx) => {
    const ws = await tx.get('workspaces', input.workspaceId);
    if (!ws) throw notFound('Workspace', input.workspaceId);
    if (ws.subscriptionStatus !== status) await tx.put('workspaces', { ...ws, subscriptionStatus: status, updatedAt: deps.clock.now().toISOString() });
  });
  return { workspaceId: input.workspaceId, status };
}

export const DEMO_GROUP_NAME = 'Demo prospects';

export async function seedDemo(db: PgDatabase, input: { workspaceId: string }, deps: AdminDeps): Promise<DemoSeedCounts & { workspaceId: string }> {
  const counts = await commitAsSystem(db, input.workspaceId, deps, async (tx) => {
    const ws = await tx.get('workspaces', input.workspaceId);
    if (!ws) throw notFound('Workspace', input.workspaceId);
    const existing = await tx.query('leadGroups', { where: { op: 'eq', field: 'name', value: DEMO_GROUP_NAME }, limit: 1 });
    if (existing.docs.length > 0) {
      throw new DomainError('INVALID_INPUT', `Workspace ${ws.id} already has the demo data (lead group "${DEMO_GROUP_NAME}").`, { workspaceId: ws.id });
    }
    const owners = await tx.query('members', { where: { op: 'eq', field: 'role', value: 'owner' }, orderBy: [{ field: 'createdAt', dir: 'asc' }], limit: 1 });
    const owner = owners.docs[0];
    if (!owner) throw new DomainError('INVALID_INPUT', `Workspace ${ws.id} has no owner to write the demo notes and tasks.`);
    const groups = await tx.query('leadGroups', { orderBy: [{ field: 'createdAt', dir: 'asc' }], limit: 1 });
    const group = groups.docs[0];
    if (!group) throw new DomainError('INVALID_INPUT', `Workspace ${ws.id} has no lead group.`);
    const { docs: stages } = await tx.query('stages', { orderBy: [{ field: 'position', dir: 'asc' }] });
    // The seed runs the product over the workspace's current documents (the ones it may read).
    const current: AnyWrite[] = [
      { collection: 'workspaces', id: ws.id, before: null, after: ws },
      ...(await tx.query('members')).docs.map((m): AnyWrite => ({ collection: 'members', id: m.id, before: null, after: m })),
      ...stages.map((s): AnyWrite => ({ collection: 'stages', id: s.id, before: null, after: s })),
      ...(await tx.query('leadGroups')).docs.map((g): AnyWrite => ({ collection: 'leadGroups', id: g.id, before: null, after: g })),
    ];
    const seed = await demoSeedWrites({
      workspaceId: ws.id, ownerId: owner.id, leadGroupId: group.id, ids: deps.ids, now: deps.clock.now().toISOString(), random: deps.random, stages, existing: current,
    });
    for (const w of seed.writes) if (w.after) await tx.put(w.collection, w.after as never);
    return seed.counts;
  });
  return { workspaceId: input.workspaceId, ...counts };
}

function nameFromEmail(email: string): string {
  const local = email.split('@')[0] ?? email;
  const words = local.split(/[._-]+/).filter(Boolean);
  const name = words.map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join(' ');
  return name || 'Owner';
}
