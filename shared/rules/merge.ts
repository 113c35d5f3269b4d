/** Moves between a merged lead and its survivor (campaigns.leads.merge and its undo,
 * campaigns.leads.unmerge; a replication push naming a merged lead). Notes, tasks, timeline events
 * and enrollments otherwise keep their lead for life; these are the one exception, and only between
 * the two leads of a merge. */
import type { StoreReader } from '../store.ts';

/** How the survivor's "merged" timeline entry names the merged lead: the lasting record that the
 * two leads were one, which an undo's moves back are judged by (on a desktop's push the undone
 * lead is already a lead again when its notes come back: each collection is pushed on its own). */
export const mergeRecord = (mergedId: string): string => `(Merged lead id ${mergedId}.)`;

/**
 * Whether moving a document from lead `from` to lead `to` is a merge move: `from` is merged into
 * `to` (a merge, or a push redirected to the survivor), or `to` is a lead of its own again that
 * `from`'s timeline records as merged into it (an undone merge moving its documents back).
 */
export async function isMergeMove(read: StoreReader, from: string, to: string): Promise<boolean> {
  if (from === to) return false;
  const source = await read.get('leads', from);
  if (source?.mergedIntoId === to) return true;
  const target = await read.get('leads', to);
  if (!target || target.mergedIntoId != null || !source || source.mergedIntoId != null) return false;
  const { docs } = await read.query('activities', {
    where: {
      op: 'and',
      conds: [
        { op: 'eq', field: 'leadId', value: from },
        { op: 'eq', field: 'type', value: 'EVENT' },
        { op: 'eq', field: 'metadata.eventKind', value: 'lead_merged' },
        { op: 'contains', fields: ['content'], value: mergeRecord(to) },
      ],
    },
    limit: 1,
  });
  return docs.length > 0;
}
