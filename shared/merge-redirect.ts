/**
 * Writes that name a merged lead, applied to its survivor (ARCHITECTURE.md "Identity"): a desktop
 * that was offline during a merge may push an edit of the merged lead, or a note, task, message or
 * enrollment of it. Nothing of that is lost and nothing refused: the edit lands on the survivor, the
 * new document names the survivor. The sync server applies this to every push; the desktop's own
 * operations never write a merged lead (liveLead answers NOT_FOUND with mergedIntoId).
 */
import { sameJson } from './json-equal.ts';
import type { Enrollment, Lead } from './model/index.ts';
import type { StoreReader } from './store.ts';

type Json = Record<string, unknown>;

/** A survivor may itself have been merged later: follow the chain, a few steps at most. */
const MAX_CHAIN = 8;

/** The live lead that stands for a merged lead now; null when `leadId` is not a merged lead. */
export async function survivorOf(read: StoreReader, leadId: string): Promise<Lead | null> {
  let lead = await read.get('leads', leadId);
  if (!lead?.mergedIntoId) return null;
  for (let i = 0; i < MAX_CHAIN && lead?.mergedIntoId; i++) lead = await read.get('leads', lead.mergedIntoId);
  return lead && !lead.mergedIntoId ? lead : null;
}

/** Fields a redirected edit never carries over: the lead's identity, its own list and its tombstone mark. */
const NOT_CARRIED = new Set(['id', 'workspaceId', 'createdAt', 'updatedAt', 'mergedIntoId', 'leadGroupId', 'groupIds', 'variables']);

/**
 * The survivor with the edit a push made to a merged lead (`assumed` -> `next`, the client's own
 * change): each field the client changed is set on the survivor, lead lists it added are joined,
 * variables it changed are set column by column. Null when the push changed nothing of that.
 */
export function editOnSurvivor(survivor: Lead, assumed: Json, next: Json, now: string): Lead | null {
  const out: Json = { ...survivor, variables: { ...survivor.variables }, groupIds: [...survivor.groupIds] };
  let changed = false;
  for (const [k, v] of Object.entries(next)) {
    if (NOT_CARRIED.has(k) || sameJson(assumed[k], v)) continue;
    if (sameJson(out[k], v)) continue;
    out[k] = v;
    changed = true;
  }
  const had = new Set(Array.isArray(assumed.groupIds) ? (assumed.groupIds as unknown[]) : []);
  for (const g of Array.isArray(next.groupIds) ? (next.groupIds as unknown[]) : []) {
    if (typeof g === 'string' && !had.has(g) && !survivor.groupIds.includes(g)) {
      (out.groupIds as string[]).push(g);
      changed = true;
    }
  }
  const before = (assumed.variables ?? {}) as Json;
  const after = (next.variables ?? {}) as Json;
  const vars = out.variables as Json;
  for (const k of new Set([...Object.keys(before), ...Object.keys(after)])) {
    if (sameJson(before[k], after[k])) continue;
    if (after[k] === undefined) {
      if (k in vars) {
        delete vars[k];
        changed = true;
      }
    } else if (!sameJson(vars[k], after[k])) {
      vars[k] = after[k];
      changed = true;
    }
  }
  if (!changed) return null;
  out.updatedAt = now > survivor.updatedAt ? now : survivor.updatedAt;
  return out as Lead;
}

/**
 * A new enrollment of a merged lead, as the survivor's: moved to the survivor, unless the survivor is
 * enrolled in that campaign already (one enrollment per lead and campaign: it stays with the
 * tombstone, stopped); stopped with reason `merged` when it runs and the survivor runs a sequence
 * already (one running sequence per lead).
 */
export async function enrollmentForSurvivor(read: StoreReader, e: Enrollment, survivor: Lead, now: string): Promise<Enrollment> {
  const theirs = await read.query('enrollments', { where: { op: 'eq', field: 'leadId', value: survivor.id } });
  const active = e.status === 'IN_PROGRESS' || e.status === 'PAUSED';
  const stopped: Enrollment = { ...e, status: 'STOPPED', stoppedReason: 'merged', nextActionAt: null, updatedAt: now };
  if (theirs.docs.some((x) => x.campaignId === e.campaignId && x.id !== e.id)) return active ? stopped : e;
  if (e.status === 'IN_PROGRESS' && theirs.docs.some((x) => x.status === 'IN_PROGRESS' && x.id !== e.id)) return { ...stopped, leadId: survivor.id };
  return { ...e, leadId: survivor.id };
}
