/**
 * Undo of lead changes. A change remembers what it replaced; Undo (the toast's button, or Ctrl/Cmd+Z
 * while the toast shows) puts it back through the same operations, so the server and every other
 * desktop see an ordinary change. An undo the rules now refuse (say the lead was moved again
 * meanwhile into a stage that needs something) says why in a sentence.
 */
import { chunk } from '../../../shared/chunk.ts';
import type { CloseReason } from '../../../shared/model/common.ts';
import { errorText, run } from './ops.ts';
import { inTextField } from './window-keys.ts';
import { useApp } from '../state/app-store.ts';

/** What a stage, tag or catch-up change replaces on one lead. */
export type LeadState = {
  id: string;
  leadGroupId: string;
  pipelineStageId: string | null;
  closeReason: CloseReason | null;
  followUpAt: string | null;
  tagId: string | null;
};

type StageLike = { id: string; category: string };

export const leadState = (l: LeadState): LeadState => ({
  id: l.id,
  leadGroupId: l.leadGroupId,
  pipelineStageId: l.pipelineStageId,
  closeReason: l.closeReason,
  followUpAt: l.followUpAt,
  tagId: l.tagId,
});

type Pending = { toastId: number; undo: () => Promise<void> };
let latest: Pending | null = null;

/** Shows `text` with an Undo button; Ctrl/Cmd+Z does the same while the toast is up. */
export function offerUndo(text: string, undo: () => Promise<string | void>): void {
  const app = useApp.getState();
  const run = async () => {
    latest = null;
    try {
      const done = await undo();
      useApp.getState().toast(done || 'Undone.');
    } catch (e) {
      useApp.getState().toast(`Could not undo: ${errorText(e)}`, 'error');
    }
  };
  const id = app.toast(text, 'info', { label: 'Undo', run: () => void run() });
  latest = { toastId: id, undo: run };
}

/** Puts a lead's stage (with its close reason or wake date) and catch-up date back. */
export async function restoreStage(before: LeadState, stages: readonly StageLike[]): Promise<void> {
  const target = before.pipelineStageId ? stages.find((s) => s.id === before.pipelineStageId) : stages.find((s) => s.category === 'NEW');
  if (!target) throw new Error('The stage the lead was in no longer exists.');
  await run('campaigns.leads.updateLeadStage', {
    leadId: before.id,
    pipelineStageId: target.id,
    ...(target.category === 'LOST' && before.closeReason ? { closeReason: before.closeReason } : {}),
    ...(target.category === 'ON_HOLD' && before.followUpAt ? { wakeAt: before.followUpAt } : {}),
  });
  // Moving into or out of On hold changes the catch-up date: put the old one back too.
  await run('campaigns.leads.setLeadFollowUp', { leadId: before.id, followUpAt: before.followUpAt });
}

export async function restoreTag(before: LeadState): Promise<void> {
  await run('campaigns.leads.updateTag', { leadGroupId: before.leadGroupId, leadId: before.id, tagId: before.tagId });
}

export async function restoreFollowUp(before: LeadState): Promise<void> {
  await run('campaigns.leads.setLeadFollowUp', { leadId: before.id, followUpAt: before.followUpAt });
}

/** Undoes many leads' changes, a few at a time; returns a sentence that counts what was put back. */
export async function restoreMany(before: readonly LeadState[], restore: (b: LeadState) => Promise<void>): Promise<string> {
  const failures: string[] = [];
  let next = 0;
  let done = 0;
  async function worker() {
    while (next < before.length) {
      const b = before[next++];
      if (!b) break;
      try {
        await restore(b);
        done++;
      } catch (e) {
        failures.push(errorText(e));
      }
    }
  }
  await Promise.all([worker(), worker(), worker(), worker()]);
  if (failures.length > 0) {
    throw new Error(`${done.toLocaleString()} of ${before.length.toLocaleString()} leads were put back; the others were not: ${[...new Set(failures)].join(' ')}`);
  }
  return `Put ${done.toLocaleString()} lead${done === 1 ? '' : 's'} back.`;
}

// Ctrl/Cmd+Z undoes the change whose toast still shows; inside a text field it stays the field's own undo.
window.addEventListener('keydown', (e) => {
  if (!(e.ctrlKey || e.metaKey) || e.shiftKey || e.altKey || e.key.toLowerCase() !== 'z' || inTextField(e.target)) return;
  const pending = latest;
  if (!pending || !useApp.getState().toasts.some((t) => t.id === pending.toastId)) return;
  e.preventDefault();
  useApp.getState().dismissToast(pending.toastId);
  void pending.undo();
});

// ---------------------------------------------------------------------------------------------
// Bulk enrollment and bulk sender change

const plural = (n: number, one: string, many = `${one}s`): string => `${n.toLocaleString()} ${n === 1 ? one : many}`;

/** Takes the leads a bulk enrollment enrolled back out of the campaign (campaigns.leads.unenroll):
 * removed where nothing was sent yet, stopped where something was (a sent message cannot be unsent).
 * Sequences the enrollment stopped or completed in other campaigns stay so: the sentence says it. */
export async function undoEnroll(r: { campaignId: string; enrolledLeadIds: readonly string[]; linkedLeadIds: readonly string[]; stoppedActive: number; completedActive: number }, campaignName: string): Promise<string> {
  const t = { removed: 0, stopped: 0, finished: 0 };
  const linked = new Set(r.linkedLeadIds);
  for (const ids of chunk(r.enrolledLeadIds, 5_000)) {
    const out = await run('campaigns.leads.unenroll', { campaignId: r.campaignId, leadIds: ids, unlinkLeadIds: ids.filter((id) => linked.has(id)) });
    t.removed += out.removed;
    t.stopped += out.stopped;
    t.finished += out.finished;
  }
  const parts = [`Took ${plural(t.removed + t.stopped, 'lead')} back out of ${campaignName}.`];
  if (t.stopped > 0) parts.push(`${plural(t.stopped, 'lead had', 'leads had')} already been contacted: their sequence is stopped, and what was sent stays sent.`);
  if (t.finished > 0) parts.push(`${plural(t.finished, 'lead')} had already finished the sequence and keep that.`);
  const elsewhere = r.stoppedActive + r.completedActive;
  if (elsewhere > 0) parts.push(`The ${plural(elsewhere, 'sequence')} ended in other campaigns stay ended.`);
  return parts.join(' ');
}

/** Moves leads of a bulk sender change back to the sender each had (one bulkChangeSender per
 * previous sender, keeping their place). Leads that had no sender cannot be unassigned again by
 * that operation; a restart's reset place is not restored: the sentence says both. */
export async function undoSenderChange(campaignId: string, moved: readonly { leadId: string; fromSdrProfileId: string | null }[], restarted: boolean): Promise<string> {
  const bySender = new Map<string, string[]>();
  let unassigned = 0;
  for (const m of moved) {
    if (m.fromSdrProfileId === null) unassigned++;
    else bySender.set(m.fromSdrProfileId, [...(bySender.get(m.fromSdrProfileId) ?? []), m.leadId]);
  }
  let back = 0;
  const failures: string[] = [];
  for (const [sender, ids] of bySender) {
    for (const leadIds of chunk(ids, 5_000)) {
      try {
        const r = await run('campaigns.leads.bulkChangeSender', { scope: { kind: 'campaign', campaignId }, selection: { mode: 'ids', leadIds }, targetSdrProfileId: sender, mode: 'keep_position' });
        back += r.changedCount;
      } catch (e) {
        failures.push(errorText(e));
      }
    }
  }
  const parts = [`Moved ${plural(back, 'lead')} back to their previous sender.`];
  if (unassigned > 0) parts.push(`${plural(unassigned, 'lead')} had no sender before and stay${unassigned === 1 ? 's' : ''} with the new one.`);
  if (restarted && back > 0) parts.push('Their place in the sequence was restarted and stays at the first step.');
  if (failures.length > 0) throw new Error(`${parts.join(' ')} Others could not be moved back: ${[...new Set(failures)].join(' ')}`);
  return parts.join(' ');
}
