/**
 * RxDB documents as the Store port sees them, and a Store commit as RxDB rows: what every desktop
 * Store over an RxDB storage shares (the Store port: shared/store.ts).
 */
import type { BulkWriteRow, RxDocumentData } from 'rxdb';
import { createRevision } from 'rxdb';
import { DomainError } from '../../shared/errors.ts';
import type { CollectionName } from '../../shared/model/index.ts';
import { cloneJson, cloneNested } from '../../shared/json-clone.ts';
import { sameJson } from '../../shared/json-equal.ts';
import type { AnyWrite } from '../../shared/store.ts';

type Json = Record<string, unknown>;
export type Raw = RxDocumentData<Json>;

/** The context of the Store's writes (RxDB bulk writes), which the sync status counts as local. */
export const STORE_WRITE_CONTEXT = 'desktop-store-commit';

/** RxDB's fields of a stored document (stripRxFields names the same ones in its destructuring). */
const RX_FIELDS = new Set(['_rev', '_meta', '_deleted', '_attachments']);

/** The document as the Store port knows it: without RxDB's `_rev`, `_meta`, `_deleted`, `_attachments`.
 * A rest copy, which V8 keeps in its fast form (see cloneJson: key by key, a lead became a hash table). */
export function stripRxFields(raw: Json): Json {
  const { _rev, _meta, _deleted, _attachments, ...out } = raw;
  return out;
}

/** A copy of a stored document as the Store port hands it out: without RxDB's fields. */
export function storeCopy(raw: Json): Json {
  const out = stripRxFields(raw);
  cloneNested(out);
  return out;
}

/** sameJson of a stored document (RxDB's fields ignored) and a Store document or null. */
export function sameStored(raw: Json | null, doc: unknown): boolean {
  if (raw === null || doc === null || typeof doc !== 'object') return raw === doc;
  const kr = Object.keys(raw).filter((k) => !RX_FIELDS.has(k) && raw[k] !== undefined);
  const kd = Object.keys(doc).filter((k) => (doc as Json)[k] !== undefined);
  return kr.length === kd.length && kr.every((k) => sameJson(raw[k], (doc as Json)[k]));
}

/** Where replicated collections are missing (apiKeys): the desktop never holds them. */
export const serverOnly = (c: CollectionName): DomainError =>
  new DomainError('SERVER_ONLY', `${c} live only on the sync server; this operation must run there.`, { collection: c });

/**
 * A Store commit as RxDB rows per collection, after checking every write against the stored
 * document (`stored`: the current RxDB document of an id, deleted ones included, or undefined):
 * CONFLICT for a stale `before` or another workspace's document, SERVER_ONLY for a collection the
 * desktop does not hold. Deleting what is not there writes nothing.
 */
export function commitRows<I>(
  writes: readonly AnyWrite[],
  workspaceId: string,
  ctx: { token: string; now: number; instance: (c: CollectionName) => I | null; stored: (instance: I, id: string) => Raw | undefined },
): Map<I, BulkWriteRow<Json>[]> {
  const out = new Map<I, BulkWriteRow<Json>[]>();
  for (const w of writes) {
    const instance = ctx.instance(w.collection);
    if (instance === null) throw serverOnly(w.collection);
    const raw = ctx.stored(instance, w.id);
    const current = raw && !raw._deleted ? raw : null;
    if (current && current.workspaceId !== workspaceId) throw new DomainError('CONFLICT', `Document ${w.id} belongs to another workspace.`);
    if (!sameStored(current, w.before)) {
      throw new DomainError('CONFLICT', `${w.collection}/${w.id} changed since it was read; try again.`, { collection: w.collection, id: w.id });
    }
    if (w.after && (w.after as { workspaceId: string }).workspaceId !== workspaceId) {
      throw new DomainError('CONFLICT', `A write to ${w.collection}/${w.id} names another workspace.`);
    }
    if (!w.after && !current) continue;
    const meta = { ...(raw?._meta ?? {}), lwt: ctx.now };
    const data: Json = w.after ? cloneJson(w.after as Json) : stripRxFields(raw as Raw);
    const document = { ...data, _deleted: !w.after, _attachments: {}, _rev: createRevision(ctx.token, raw), _meta: meta } as Raw;
    let rows = out.get(instance);
    if (!rows) out.set(instance, (rows = []));
    rows.push(raw ? { previous: raw, document } : { document });
  }
  return out;
}
