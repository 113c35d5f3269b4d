/** What a workspace's collection changed after a `seq`: the one query pull pages and live streams
 * read, and documents as they cross the wire (RxDB's `_deleted` flag beside the stored document). */
import type { CollectionName } from '../shared/model/index.ts';
import type { SqlExecutor } from './db.ts';

type Json = Record<string, unknown>;

/** A stored document as the wire carries it. */
export type MasterDoc = Json & { _deleted: boolean };

export const master = (doc: Json, deleted: boolean): MasterDoc => ({ ...doc, _deleted: deleted });

/** One page of a collection's changes after `after`, in seq order. */
export async function changesSince(sql: SqlExecutor, workspaceId: string, c: CollectionName, after: number, limit: number): Promise<{ seq: number; doc: MasterDoc }[]> {
  const rows = await sql.query<{ seq: string | number; deleted: boolean; doc: Json }>(
    `SELECT seq, deleted, doc FROM documents WHERE collection = '${c}' AND workspace_id = $1 AND seq > $2::bigint ORDER BY seq LIMIT $3::int`,
    [workspaceId, after, limit],
  );
  return rows.map((r) => ({ seq: Number(r.seq), doc: master(r.doc, r.deleted) }));
}
