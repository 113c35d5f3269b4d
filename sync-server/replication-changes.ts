/** What a workspace's collection changed after a `seq`: the one query pull pages and live streams
 * read, and documents as they cross the wire (RxDB's `_deleted` flag beside the stored document). */
import type { CollectionName } from '../shared/model/index.ts';
import type { SqlExecutor } from './db.ts';

type Json = Record<string, unknown>;

/** A stored document as the wire carries it. */
export type MasterDoc = Json & { _deleted: boolean };

export const master = (doc: Json, deleted: boolean): MasterDoc => ({ ...doc, _deleted: deleted });

/** The rows of a workspace's collection changed after a seq ($1 the workspace, $2 the seq): a range
 * of the index documents_pull (collection, workspace_id, seq). */
const changedAfter = (c: CollectionName): string => `FROM documents WHERE collection = '${c}' AND workspace_id = $1 AND seq > $2::bigint`;

/** One page of a collection's changes after `after`, in seq order. */
export async function changesSince(sql: SqlExecutor, workspaceId: string, c: CollectionName, after: number, limit: number): Promise<{ seq: number; doc: MasterDoc }[]> {
  const rows = await sql.query<{ seq: string | number; deleted: boolean; doc: Json }>(`SELECT seq, deleted, doc ${changedAfter(c)} ORDER BY seq LIMIT $3::int`, [workspaceId, after, limit]);
  return rows.map((r) => ({ seq: Number(r.seq), doc: master(r.doc, r.deleted) }));
}

/**
 * The same page, and how many documents of the collection changed after `after` (the page's
 * included): what a client starting a pull from `after` will receive, barring later changes. One
 * statement, so the count and the page are read from one snapshot (an empty page is a count of 0).
 * The count walks the same index range as the pulls it announces (an index-only scan once VACUUM
 * has marked the pages all-visible), so it costs what a full pull of those rows costs at most, and
 * nearly nothing for a client that is up to date: ask for it once per catch-up, not per page.
 */
export async function changesSinceCounted(
  sql: SqlExecutor,
  workspaceId: string,
  c: CollectionName,
  after: number,
  limit: number,
): Promise<{ page: { seq: number; doc: MasterDoc }[]; remaining: number }> {
  const rows = await sql.query<{ seq: string | number | null; deleted: boolean | null; doc: Json | null; remaining: string | number }>(
    `WITH page AS (SELECT seq, deleted, doc ${changedAfter(c)} ORDER BY seq LIMIT $3::int)
     SELECT p.seq, p.deleted, p.doc, n.remaining FROM (SELECT count(*) AS remaining ${changedAfter(c)}) n LEFT JOIN page p ON true ORDER BY p.seq`,
    [workspaceId, after, limit],
  );
  const page: { seq: number; doc: MasterDoc }[] = [];
  for (const r of rows) if (r.seq !== null && r.doc !== null) page.push({ seq: Number(r.seq), doc: master(r.doc, r.deleted === true) });
  return { page, remaining: Number(rows[0]?.remaining ?? 0) };
}
