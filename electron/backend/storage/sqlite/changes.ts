/**
 * The changes feed (RxStorageInstance.getChangedDocumentsSince) from the documents table's
 * sequence column: each write of a document gives it the next sequence number, so "what changed
 * since the checkpoint" is one range of an integer index, in write order, whatever the documents'
 * `_meta.lwt` say. Checkpoints keep RxDB's default fields (`id`, `lwt` of the last document) and
 * add `seq`; one without `seq` (written by the persisted-memory storage before migration, or by
 * RxDB's own `[lwt, id]` fallback) is continued from the first later write in `[lwt, id]` order.
 */
import type { Doc, DocTable, SqliteCheckpoint } from './doc-table.ts';

/** The checkpoint after a document written with sequence number `seq`. */
export function checkpointOf(primaryPath: string, doc: Doc, seq: number): SqliteCheckpoint {
  return { id: String((doc as Record<string, unknown>)[primaryPath]), lwt: doc._meta.lwt, seq };
}

/** Documents written after `checkpoint` (all without one), at most `limit`, and the checkpoint
 * after the last of them; with none, the given checkpoint unchanged, as RxDB's contract asks. */
export function changedDocumentsSince(table: DocTable, limit: number, checkpoint?: SqliteCheckpoint | { id: string; lwt: number }): { documents: Doc[]; checkpoint: SqliteCheckpoint | { id: string; lwt: number } } {
  let after = 0;
  if (checkpoint) after = 'seq' in checkpoint && typeof checkpoint.seq === 'number' ? checkpoint.seq : table.seqAfterLwt(checkpoint.lwt, checkpoint.id);
  const rows = table.changedSince(after, limit);
  const last = rows[rows.length - 1];
  if (!last) return { documents: [], checkpoint: checkpoint ?? { id: '', lwt: 0, seq: 0 } };
  return { documents: rows.map((r) => r.doc), checkpoint: checkpointOf(table.primaryPath, last.doc, last.seq) };
}
