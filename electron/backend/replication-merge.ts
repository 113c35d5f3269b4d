/**
 * What a desktop does with a document changed on both sides (the conflict handler of every
 * replicated collection, see ARCHITECTURE.md "Sync").
 *
 * When the server answers a push with a document equal to the one the push assumed, the server
 * refused the change (its rules): the server's state is taken, and replication.ts fetches the
 * reason. Otherwise the document changed on both sides and is merged three ways (assumed = base):
 * local field changes the server did not also change are kept, the server's value wins where both
 * changed. The merged document is pushed again and judged again, so the loop ends.
 */
import type { RxConflictHandler, RxConflictHandlerInput, WithDeleted } from 'rxdb';
import { sameJson } from '../../shared/json-equal.ts';

type Json = Record<string, unknown>;
type Doc = WithDeleted<Json>;

const LOCAL_ONLY_FIELDS = new Set(['_rev', '_meta', '_attachments']);

const isPlainObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Equality of two documents as the server sees them: RxDB's local fields (`_rev`, `_meta`,
 * `_attachments`) are ignored, everything else compared as JSON regardless of key order. */
export function sameDocument(a: unknown, b: unknown): boolean {
  if (!isPlainObject(a) || !isPlainObject(b)) return sameJson(a, b);
  const keys = (o: Json) => Object.keys(o).filter((k) => o[k] !== undefined && !LOCAL_ONLY_FIELDS.has(k));
  const ka = keys(a);
  const kb = keys(b);
  return ka.length === kb.length && ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && sameJson(a[k], b[k]));
}

/**
 * Three-way merge of one document: starts from the server's state and keeps every local change the
 * server did not also make. Plain objects merge key by key (two people editing different variables
 * of one lead both win); arrays and scalars are one value each (a campaign's steps stay one unit).
 */
export function mergeThreeWay(base: unknown, local: unknown, server: unknown): unknown {
  if (sameJson(local, base)) return server;
  if (sameJson(server, base)) return local;
  if (isPlainObject(base) && isPlainObject(local) && isPlainObject(server)) {
    const out: Json = {};
    for (const k of new Set([...Object.keys(server), ...Object.keys(local), ...Object.keys(base)])) {
      const v = mergeThreeWay(base[k], local[k], server[k]);
      if (v !== undefined) out[k] = v;
    }
    return out;
  }
  // Both changed the same value: the server's wins, so every copy ends identical.
  return server;
}

/** Whether a push conflict is a refusal: the server kept exactly the state the push assumed. */
export function isRefusal(input: RxConflictHandlerInput<Json>): boolean {
  const assumed = input.assumedMasterState;
  if (assumed) return sameDocument(input.realMasterState, assumed);
  // A refused creation: the server has no such document and answers with a deleted one.
  return input.realMasterState._deleted === true && input.newDocumentState._deleted !== true;
}

/** The conflict handler of every replicated collection (see the file comment). */
export const mergeConflictHandler: RxConflictHandler<Json> = {
  isEqual: (a, b) => sameDocument(a, b),
  async resolve(input) {
    const server = input.realMasterState;
    if (!input.assumedMasterState || isRefusal(input)) return server;
    const merged = mergeThreeWay(input.assumedMasterState, input.newDocumentState, server) as Doc;
    // The merge is a new write; its updatedAt is the later of the two sides.
    const lu = input.newDocumentState.updatedAt;
    const su = server.updatedAt;
    if (typeof lu === 'string' && typeof su === 'string' && !merged._deleted) merged.updatedAt = lu > su ? lu : su;
    return merged;
  },
};
