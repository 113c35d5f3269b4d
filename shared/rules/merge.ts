/** Moves between a merged lead and its survivor (campaigns.leads.merge and its undo,
 * campaigns.leads.unmerge; a replication push naming a merged lead). Notes, tasks, timeline events
 * and enrollments otherwise keep their lead for life; these are the one exception, and only between
 * the two leads of a merge. */
import type { StoreReader } from '../store.ts';
import { Tx } from '../tx.ts';

/** The state before the commit being judged: a rule's reader shows the commit's final state, and a
 * Tx keeps the store it stages over (the stored state). Null where the reader is not a Tx. */
const storedState = (read: StoreReader): StoreReader | null => (read instanceof Tx ? read.store : null);

/**
 * Whether moving a document from lead `from` to lead `to` is a merge move: `from` is merged into
 * `to` once this commit is in (a merge, or a push redirected to the survivor), or `to` was merged
 * into `from` before this commit and no longer is (an undone merge moving its documents back).
 */
export async function isMergeMove(read: StoreReader, from: string, to: string): Promise<boolean> {
  if (from === to) return false;
  const source = await read.get('leads', from);
  if (source?.mergedIntoId === to) return true;
  const target = await read.get('leads', to);
  if (!target || target.mergedIntoId != null) return false;
  const stored = storedState(read);
  const before = stored ? await stored.get('leads', to) : null;
  return before?.mergedIntoId === from;
}
