/** Shared fixtures of the engine tests: a harness workspace with a sandbox network, a scripted
 * channel whose answers a test controls, and helpers to enroll leads and start campaigns. */
import { makeHarness, seededRandom, testSecrets } from '../support/harness.ts';
import type { Actor } from '../../shared/context.ts';
import { ChannelFailure, channelHostOf } from '../../shared/engine/channel.ts';
import type { Channel, ChannelAction, ChannelEvent, ChannelHost, ChannelSendResult, PollResult, PostReadResult } from '../../shared/engine/channel.ts';
import { createRunner } from '../../shared/engine/runner.ts';
import type { RunnerOptions } from '../../shared/engine/runner.ts';
import { createSandboxNetwork } from '../../shared/engine/sandbox.ts';
import type { SandboxBehaviour } from '../../shared/engine/sandbox.ts';
import { newEnrollment } from '../../shared/model/factories.ts';
import type { Campaign, Docs, Enrollment, Lead, Sender } from '../../shared/model/index.ts';
import { firstStep } from '../../shared/sequence.ts';

export type Sent = { sender: Sender; lead: Lead; action: ChannelAction; ref: string };

/** A channel that records what it is asked and answers what the test scripted. */
export class ScriptedChannel implements Channel {
  sent: Sent[] = [];
  events: ChannelEvent[] = [];
  /** Thrown by the next send (then cleared), e.g. a 429. */
  failNext: ChannelFailure | null = null;
  polls = 0;

  async send(sender: Sender, lead: Lead, action: ChannelAction, ref: string): Promise<ChannelSendResult> {
    const f = this.failNext;
    if (f) {
      this.failNext = null;
      throw f;
    }
    this.sent.push({ sender, lead, action, ref });
    const chatId = action.kind === 'email' ? (action.thread?.chatId ?? `<${ref}@test>`) : `chat-${sender.id.slice(-4)}-${lead.id.slice(-4)}`;
    return { status: 'sent', externalId: action.kind === 'email' ? `<${ref}@test>` : `ext-${ref}`, chatId };
  }

  async poll(_sender: Sender, cursor: string | null): Promise<PollResult> {
    this.polls++;
    const from = Number(cursor ?? '0');
    return { events: this.events.slice(from), cursor: String(this.events.length) };
  }

  async readPost(): Promise<PostReadResult> {
    throw new ChannelFailure('unsupported', 'The scripted channel reads no posts.');
  }

  canSendMessage(): boolean {
    return true;
  }
}

export async function engineWorld(opts: { behaviour?: Partial<SandboxBehaviour>; voiceNotes?: boolean } = {}) {
  const h = await makeHarness();
  const sandbox = createSandboxNetwork({ seed: 'engine-tests', clock: h.clock, behaviour: opts.behaviour, voiceNotes: opts.voiceNotes });
  const scripted = new ScriptedChannel();
  const system: Actor = { ...h.owner, isSystem: true };
  /** Sandbox senders use the sandbox; http senders the scripted channel. */
  const channels: ChannelHost = channelHostOf({ sandbox, http: scripted, email: scripted });

  function runner(extra: Partial<RunnerOptions> = {}) {
    return createRunner({
      store: h.store, clock: h.clock, random: seededRandom(11), ids: h.ids, randomBytes: testSecrets.randomBytes, channels, actor: system,
      spacing: { minSeconds: 0, jitterSeconds: 0 }, ...extra,
    });
  }

  async function enroll(lead: Lead, campaign: Campaign, fields: Partial<Enrollment> = {}): Promise<Enrollment> {
    const e = newEnrollment(h.stamp(), lead.id, campaign.id, { currentStepId: firstStep(campaign.steps)?.id ?? null, nextActionAt: h.now(), ...fields });
    await h.seed([{ collection: 'enrollments', id: e.id, before: null, after: e }]);
    return e;
  }

  /** Writes a new version of a document directly (what an operation or another desktop would do). */
  async function patch<C extends 'campaigns' | 'senders' | 'leads' | 'enrollments'>(collection: C, id: string, change: (doc: Docs[C]) => void): Promise<void> {
    const before = await h.store.get(collection, id);
    if (!before) throw new Error(`${collection}/${id} missing`);
    const after = structuredClone(before);
    change(after);
    await h.seed([{ collection, id, before, after } as never]);
  }

  const start = (c: Campaign) => patch('campaigns', c.id, (d) => void (d.running = true));

  async function messages(where: Partial<{ leadId: string; campaignId: string; direction: 'in' | 'out'; status: string }> = {}) {
    const { docs } = await h.store.query('messages', { orderBy: [{ field: 'createdAt', dir: 'asc' }] });
    return docs.filter((m) => Object.entries(where).every(([k, v]) => (m as Record<string, unknown>)[k] === v));
  }

  async function events(kind: string) {
    const { docs } = await h.store.query('activities', { where: { op: 'eq', field: 'metadata.eventKind', value: kind } });
    return docs;
  }

  const enrollment = async (id: string) => {
    const e = await h.store.get('enrollments', id);
    if (!e) throw new Error(`enrollment ${id} missing`);
    return e;
  };

  return { h, sandbox, scripted, system, channels, runner, enroll, patch, start, messages, events, enrollment };
}
