/** A workspace in memory with a fake clock and deterministic ids, for operation and rule tests. */
import { expect } from 'vitest';
import { nodeSecrets } from '../../sync-server/secrets.ts';
import { FakeClock, sequentialIds, seededRandom } from './deterministic.ts';
import type { Actor, Secrets } from '../../shared/context.ts';
import { DomainError } from '../../shared/errors.ts';
import type { ErrorCode } from '../../shared/errors.ts';
import { MemoryDatabase } from '../../shared/memory-store.ts';
import type { Lead, Sender, Campaign, Step, Role, Enrollment, Stage } from '../../shared/model/index.ts';
import { newCampaign, newEnrollment, newLead, newSender, newStep } from '../../shared/model/factories.ts';
import { execute } from '../../shared/ops/execute.ts';
import type { OpName, OpInput, OpOutput } from '../../shared/ops/index.ts';
import type { AnyWrite, Store } from '../../shared/store.ts';
import { workspaceCreation } from '../../shared/workspace-setup.ts';
import type { ChannelHost } from '../../shared/engine/channel.ts';

export { FakeClock, sequentialIds, seededRandom };

export const testSecrets: Secrets = nodeSecrets;

/** A random-bytes port that keeps what it was asked for and what it gave. */
export function recordingBytes() {
  const asked: number[] = [];
  const made: Uint8Array[] = [];
  const bytes = (n: number): Uint8Array => {
    asked.push(n);
    const b = testSecrets.randomBytes(n);
    made.push(b);
    return b;
  };
  return { asked, made, bytes };
}

export type Harness = Awaited<ReturnType<typeof makeHarness>>;

export async function makeHarness(opts: { channels?: ChannelHost | null; subscription?: 'active' | 'trialing' | 'past_due' | 'canceled' } = {}) {
  const db = new MemoryDatabase();
  const clock = new FakeClock();
  const ids = sequentialIds(1);
  const random = seededRandom(7);
  const now = () => clock.now().toISOString();

  async function createWorkspace(name: string) {
    const w = workspaceCreation(ids, now(), { name, owner: { name: `${name} Owner`, email: `owner@${name.toLowerCase().replace(/\W/g, '')}.test` }, subscriptionStatus: opts.subscription ?? 'active' });
    await db.forWorkspace(w.workspaceId).commit(w.writes);
    return w;
  }

  const main = await createWorkspace('Acme');
  const other = await createWorkspace('Globex');
  const store: Store = db.forWorkspace(main.workspaceId);

  /** Writes documents directly (no rules): test fixtures. */
  async function seed(writes: AnyWrite[]): Promise<void> {
    await store.commit(writes);
  }
  const stamp = () => ({ id: ids.uuid(), workspaceId: main.workspaceId, now: now() });

  async function addMember(name: string, role: Role = 'member'): Promise<Actor> {
    const id = ids.uuid();
    await seed([{ collection: 'members', id, before: null, after: { id, workspaceId: main.workspaceId, createdAt: now(), updatedAt: now(), name, email: `${name.toLowerCase()}@acme.test`, role } }]);
    return { workspaceId: main.workspaceId, memberId: id, role };
  }

  const owner: Actor = { workspaceId: main.workspaceId, memberId: main.ownerId, role: 'owner' };
  const member = await addMember('Bob', 'member');
  const admin = await addMember('Ada', 'admin');
  const foreignOwner: Actor = { workspaceId: other.workspaceId, memberId: other.ownerId, role: 'owner' };

  async function call<N extends OpName>(name: N, input: OpInput<N>, as: Actor = owner): Promise<OpOutput<N>> {
    return execute(name, input, {
      actor: as,
      store: db.forWorkspace(as.workspaceId),
      clock,
      ids,
      random,
      secrets: testSecrets,
      channels: opts.channels ?? null,
    });
  }

  /** Asserts that the call is refused with `code` and that nothing was stored. */
  async function expectRefused(promise: Promise<unknown>, code: ErrorCode): Promise<DomainError> {
    const before = db.snapshot();
    const commits = db.commits;
    let caught: unknown;
    try {
      await promise;
    } catch (e) {
      caught = e;
    }
    expect(caught, `expected refusal ${code}`).toBeInstanceOf(DomainError);
    expect((caught as DomainError).code).toBe(code);
    expect(db.commits).toBe(commits);
    expect(db.snapshot()).toEqual(before);
    return caught as DomainError;
  }

  async function addLead(fields: Partial<Lead> = {}, leadGroupId = main.leadGroupId): Promise<Lead> {
    const lead = newLead(stamp(), leadGroupId, fields);
    await seed([{ collection: 'leads', id: lead.id, before: null, after: lead }]);
    return lead;
  }

  async function addSender(fields: Partial<Sender> & { name?: string } = {}): Promise<Sender> {
    const sender = newSender(stamp(), { name: fields.name ?? 'Sam Sender', ownerMemberId: main.ownerId, channel: 'sandbox', ...fields });
    await seed([{ collection: 'senders', id: sender.id, before: null, after: sender }]);
    return sender;
  }

  /** A paused campaign with the given senders and steps (default: one message step). */
  async function addCampaign(fields: Partial<Campaign> & { senderIds?: string[]; steps?: Step[] } = {}): Promise<Campaign> {
    const { senderIds = [], ...rest } = fields;
    const c = newCampaign(stamp(), fields.name ?? 'Q4 outreach', fields.leadGroupId ?? main.leadGroupId, ids.uuid());
    const campaign: Campaign = {
      ...c,
      ...rest,
      senders: senderIds.map((sdrProfileId) => ({ sdrProfileId, paused: false })),
      steps: fields.steps ?? [newStep(ids.uuid(), 'SEND_MESSAGE', { content: 'Hi {{First name|there}}' })],
    };
    await seed([{ collection: 'campaigns', id: campaign.id, before: null, after: campaign }]);
    return campaign;
  }

  return {
    db, clock, ids, random, store, main, other, owner, member, admin, foreignOwner,
    call, expectRefused, seed, stamp, addMember, addLead, addSender, addCampaign, now,
  };
}

/** The workspace's pipeline stages by category (NEW, CONTACTED, ..., LOST). */
export async function stagesByCategory(h: Harness): Promise<Record<string, Stage>> {
  const { docs } = await h.store.query('stages', {});
  return Object.fromEntries(docs.map((s) => [s.category, s]));
}

/** Seeds an enrollment of a lead in a campaign (default: in progress, due now). */
export async function seedEnrollment(h: Harness, leadId: string, campaignId: string, fields: Partial<Enrollment> = {}): Promise<Enrollment> {
  const e = newEnrollment(h.stamp(), leadId, campaignId, fields);
  await h.seed([{ collection: 'enrollments', id: e.id, before: null, after: e }]);
  return e;
}
