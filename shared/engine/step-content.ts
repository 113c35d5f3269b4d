/**
 * What a campaign step's action says and under which id: the variant an enrollment uses, merge
 * fields filled in for the lead, the channel action (an email in the same thread cites the earlier
 * ones), and the step message's id (also the action's idempotency key).
 */
import { renderMergeFields } from '../merge-fields.ts';
import type { Campaign, Enrollment, Lead, Message, Step } from '../model/index.ts';
import type { Store } from '../store.ts';
import type { Tx } from '../tx.ts';
import type { ChannelAction } from './channel.ts';
import { derivedUuid } from './hash.ts';
import { and, emailThread, eq, reSubject } from './runner-core.ts';
import type { RunnerCore, TickState } from './runner-core.ts';

type Variant = Step['variants'][number];

/** The text a step sends, and the variant it comes from (null: the step's own text). */
export type StepText = { variantId: string | null; text: string; subject: string };

/** The variant of a step with variants for an enrollment: the one it `remembered`, else one chosen
 * by the step's assignment mode (random; round_robin: the least assigned in `counts`, the first on
 * a tie), else the default variant; null when none applies (the step's own text). */
export function pickVariant(step: Step, remembered: string | undefined, random: () => number, counts: ReadonlyMap<string, number> | null): Variant | null {
  if (step.variants.length === 0) return null;
  const kept = step.variants.find((v) => v.id === remembered);
  if (kept) return kept;
  const mode = step.variantAssignment.mode;
  if (mode === 'random') {
    const v = step.variants[Math.floor(random() * step.variants.length)];
    if (v) return v;
  }
  if (mode === 'round_robin' && counts) {
    let best = step.variants[0];
    for (const v of step.variants) if ((counts.get(v.id) ?? 0) < (counts.get(best?.id ?? '') ?? 0)) best = v;
    if (best) return best;
  }
  return step.variants.find((v) => v.id === step.variantAssignment.defaultVariantId) ?? null;
}

/** How many enrollments of the campaign use each variant of the step: read once per tick, then
 * kept up to date by record.ts's recordSent. */
async function roundRobinCounts(store: Store, st: TickState, c: Campaign, step: Step): Promise<Map<string, number>> {
  const key = `${c.id}|${step.id}`;
  let counts = st.rr.get(key);
  if (!counts) {
    counts = new Map(step.variants.map((v) => [v.id, 0]));
    const { docs } = await store.query('enrollments', { where: and(eq('campaignId', c.id), { op: 'in', field: `variants.${step.id}`, values: step.variants.map((v) => v.id) }) });
    for (const x of docs) {
      const id = x.variants[step.id];
      if (id !== undefined) counts.set(id, (counts.get(id) ?? 0) + 1);
    }
    st.rr.set(key, counts);
  }
  return counts;
}

/** The text of a message step for this enrollment: the remembered variant, else one chosen by
 * the step's assignment mode (default, random, round_robin), else the step's own text. */
export async function chooseVariant(core: Pick<RunnerCore, 'store' | 'random'>, st: TickState, c: Campaign, e: Enrollment, step: Step): Promise<StepText> {
  const base = { variantId: null, text: step.content, subject: step.subject };
  if (step.variants.length === 0) return base;
  const remembered = e.variants[step.id];
  const roundRobin = step.variantAssignment.mode === 'round_robin' && !step.variants.some((v) => v.id === remembered);
  const v = pickVariant(step, remembered, core.random, roundRobin ? await roundRobinCounts(core.store, st, c, step) : null);
  return v ? { variantId: v.id, text: v.text, subject: v.subject || step.subject } : base;
}

/** A text with the lead's merge fields filled in (from the campaign's lead group's fields). */
export function renderFor(st: TickState, c: Campaign, lead: Lead, text: string): string {
  const group = st.groups.get(c.leadGroupId);
  return group ? renderMergeFields(text, lead, group) : text;
}

/** The id of a step's message, stable for one enrollment and step while nothing was recorded:
 * a send retried after a transient failure reuses its idempotency key. A step run again after a
 * restart of the sequence finds the earlier message and takes the next id. */
export async function stepRef(tx: Tx, enrollmentId: string, stepId: string): Promise<string> {
  for (let cycle = 0; ; cycle++) {
    const id = derivedUuid('step-message', enrollmentId, stepId, cycle);
    if (!(await tx.get('messages', id))) return id;
  }
}

/** The channel action of a step (same_thread emails cite this campaign's earlier emails to the lead). */
export async function buildAction(tx: Tx, c: Campaign, e: Enrollment, lead: Lead, step: Step, kind: Message['kind'], text: string, subject: string): Promise<ChannelAction> {
  switch (kind) {
    case 'message':
      return { kind: 'message', text, chatId: null, voiceNote: null };
    case 'voice_note':
      return { kind: 'message', text, chatId: null, voiceNote: { mode: step.voiceNote.mode === 'recorded' ? 'recorded' : 'ai_voice', recordingId: step.voiceNote.recordingId ?? null } };
    case 'connection_request':
      return { kind: 'connection_request', note: text };
    case 'inmail':
      return { kind: 'inmail', subject, text };
    case 'email': {
      const emailedBefore = e.doneSteps.some((d) => c.steps.find((s) => s.id === d.stepId)?.type === 'EMAIL');
      if (step.emailThreading === 'same_thread' && emailedBefore) {
        const { docs } = await tx.query('messages', {
          where: and(eq('leadId', lead.id), eq('campaignId', c.id), eq('kind', 'email'), eq('direction', 'out'), eq('status', 'sent')),
          orderBy: [{ field: 'createdAt', dir: 'asc' }],
        });
        const thread = emailThread(docs);
        const root = docs[0];
        if (thread && root) return { kind: 'email', subject: reSubject(root.subject), text, thread };
      }
      return { kind: 'email', subject, text, thread: null };
    }
    case 'profile_visit':
      return { kind: 'profile_visit' };
    case 'reaction':
      return { kind: 'reaction' };
  }
}
