/**
 * StoreReader.duplicateGroups on a documents table: groups of live documents sharing one value of a
 * Store column (a lead's identity key, computed into its column on every write: store-layout.ts),
 * read from the column's index in key order (GROUP BY along the index: no sort), then the members a
 * merge left as tombstones (a non-empty `mergedIntoId`) taken out in JavaScript, so a group of a
 * survivor and its tombstone is no group.
 */
import { isLiveIdentity, storedKey } from '../../../../shared/intake/identity.ts';
import type { IdentityKind } from '../../../../shared/intake/identity.ts';
import { checkGroupLimit, decodeKeyCursor, duplicateGroupsOf, encodeKeyCursor } from '../../../../shared/query.ts';
import type { DuplicateGroup, DuplicatePage, DuplicatePageOptions } from '../../../../shared/store.ts';
import type { DocTable } from './doc-table.ts';
import { encodeKey, NULL_KEY } from './store-columns.ts';

/** Groups of the workspace's live documents sharing the value of `field` (an identity key field). */
export function storeDuplicateGroups(table: DocTable, field: string, kind: IdentityKind, workspaceId: string, opts: DuplicatePageOptions): DuplicatePage {
  checkGroupLimit(opts.limit);
  const col = table.storeColumn(field);
  const ws = table.storeColumn('workspaceId');
  if (!col || !ws) {
    // A table without the key's column (a layout without it): every live document, in JavaScript.
    const all = table.file.reads.prepare<[], { id: string }>(`SELECT id FROM "${table.table}" WHERE deleted = 0`).all();
    const docs = [...table.get(all.map((r) => r.id)).values()].filter((d) => !d._deleted && (d as { workspaceId?: unknown }).workspaceId === workspaceId);
    return duplicateGroupsOf(docs, kind, opts);
  }
  let after = opts.cursor ? decodeKeyCursor(opts.cursor) : null;
  const want = opts.limit + 1;
  const stmt = table.statement(`dup:${col.column}`, () =>
    `SELECT "${col.column}" AS k, group_concat(id, char(31)) AS ids FROM "${table.table}" AS t
      WHERE deleted = 0 AND "${col.column}" > ? AND "${ws.column}" = ?
      GROUP BY "${col.column}" HAVING count(*) > 1 ORDER BY "${col.column}" LIMIT ?`,
  );
  const groups: DuplicateGroup[] = [];
  for (;;) {
    // Keys are text: every one sorts above NULL_KEY (no key), and the encoding keeps their order.
    const lower = after === null ? NULL_KEY : (encodeKey(after, false) ?? NULL_KEY);
    const rows = stmt.all(lower, encodeKey(workspaceId, false) ?? NULL_KEY, want) as { k: string; ids: string }[];
    for (const r of rows) {
      const ids = r.ids.split('\u001f');
      const docs = table.get(ids);
      const live = ids.filter((id) => {
        const d = docs.get(id);
        return d !== undefined && !d._deleted && isLiveIdentity(d);
      });
      const first = docs.get(live[0] ?? '');
      const key = first ? storedKey(first, kind) : null;
      if (live.length > 1 && key !== null) groups.push({ key, leadIds: live.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)) });
    }
    const last = rows[rows.length - 1];
    if (groups.length >= want || rows.length < want || !last) break;
    const lastDoc = table.get([last.ids.split('\u001f')[0] ?? '']).values().next();
    const lastKey = lastDoc.done ? null : storedKey(lastDoc.value, kind);
    if (lastKey === null) break;
    after = lastKey;
  }
  const page = groups.slice(0, opts.limit);
  const end = page[page.length - 1];
  return { groups: page, nextCursor: groups.length > opts.limit && end ? encodeKeyCursor(end.key) : null };
}
