/** Validation of documents against the collection schemas (the same schemas RxDB uses) and the field
 * limits of common.ts (text sizes, storable text, timestamps, array and nesting bounds). Every write
 * passes it: operations and the runner through the integrity rule, replication pushes on the server,
 * the desktop's own commits. */
import { Ajv } from 'ajv';
import type { ValidateFunction } from 'ajv';
import {
  DOCUMENT_MAX_DEPTH,
  DOCUMENT_MAX_ITEMS,
  DOCUMENT_MAX_KEYS,
  FIELD_LIMITS,
  INDEXED_TEXT_FIELDS,
  INDEXED_TEXT_MAX_BYTES,
  NULLABLE_TIMESTAMP,
  TEXT_LIMITS,
  TIMESTAMP,
  timestampProblem,
  unstorableText,
} from './common.ts';
import { COLLECTIONS } from './index.ts';
import type { CollectionName } from './index.ts';

const ajv = new Ajv({ strict: false, allErrors: false });
const validators = new Map<CollectionName, ValidateFunction>();

function validatorFor(c: CollectionName): ValidateFunction {
  let v = validators.get(c);
  if (!v) {
    const { primaryKey: _pk, version: _v, indexes: _i, title: _t, ...schema } = COLLECTIONS[c].schema as Record<string, unknown>;
    v = ajv.compile(schema);
    validators.set(c, v);
  }
  return v;
}

/** The first schema or limit problem of a document, in words, or null when it is valid. */
export function schemaProblem(c: CollectionName, doc: unknown): string | null {
  // The schemas bound how deep ajv looks (free-form fields are checked for their type only), so a
  // deeply nested value is safe here; the limit walk below is iterative and refuses it.
  const v = validatorFor(c);
  if (!v(doc)) {
    const e = v.errors?.[0];
    if (!e) return 'invalid document';
    return `${e.instancePath || '(document)'} ${e.message ?? 'is invalid'}${e.params && 'additionalProperty' in e.params ? `: ${String(e.params.additionalProperty)}` : ''}`;
  }
  return limitProblem(c, doc);
}

type Json = Record<string, unknown>;

/** A field-path trie of FIELD_LIMITS; `*` matches any array item or object key. */
type LimitNode = {
  limit?: number;
  bytes?: number;
  timestamp?: boolean;
  children: Map<string, LimitNode>;
  star?: LimitNode;
  /** The last short text found good here: the documents of one write repeat many values (a call's
   * timestamps, its list's id, empty fields), each judged once in a row. */
  good?: string;
};
const limitTries = new Map<CollectionName, LimitNode>();

function limitTrie(c: CollectionName): LimitNode {
  let root = limitTries.get(c);
  if (root) return root;
  const made: LimitNode = { children: new Map() };
  const at = (path: readonly string[]): LimitNode => {
    let node = made;
    for (const seg of path) {
      if (seg === '*') node = node.star ??= { children: new Map() };
      else {
        let next = node.children.get(seg);
        if (!next) node.children.set(seg, (next = { children: new Map() }));
        node = next;
      }
    }
    return node;
  };
  for (const [path, limit] of Object.entries(FIELD_LIMITS[c] ?? {})) at(path.split('.')).limit = limit;
  for (const path of INDEXED_TEXT_FIELDS[c] ?? []) at(path.split('.')).bytes = INDEXED_TEXT_MAX_BYTES;
  // Timestamp fields are the schema's properties declared with TIMESTAMP / NULLABLE_TIMESTAMP.
  const markTimestamps = (schema: unknown, path: string[]): void => {
    if (schema === null || typeof schema !== 'object') return;
    if (schema === TIMESTAMP || schema === NULLABLE_TIMESTAMP) {
      at(path).timestamp = true;
      return;
    }
    const s = schema as { properties?: Record<string, unknown>; items?: unknown };
    if (s.properties) for (const [k, sub] of Object.entries(s.properties)) markTimestamps(sub, [...path, k]);
    if (s.items) markTimestamps(s.items, [...path, '*']);
  };
  markTimestamps(COLLECTIONS[c].schema, []);
  root = made;
  limitTries.set(c, root);
  return root;
}

const utf8 = new TextEncoder();
/** Field names are ours or ids (custom column ids in `variables`), never long text. */
const MAX_KEY_LENGTH = 200;

/** Field names already found storable and short enough: a name is judged by its text alone, and
 * every document of a collection repeats the same few dozen (an import checks 5,000 leads of ~45
 * fields each). Bounded: past GOOD_KEYS_MAX names (custom column ids of many lists) the others are
 * checked each time. */
const goodKeys = new Set<string>();
const GOOD_KEYS_MAX = 10_000;

/** One object or array on the walk; the path is rebuilt from the parents only for a message. */
type Frame = { v: object; node: LimitNode | undefined; depth: number; key: string | number; parent: Frame | null };

const pathOf = (f: Frame | null, key?: string | number): string => {
  const parts: (string | number)[] = key === undefined ? [] : [key];
  for (let at = f; at && at.parent; at = at.parent) parts.unshift(at.key);
  return parts.length === 0 ? '(document)' : `/${parts.join('/')}`;
};

/** Texts up to this length are remembered as good at their node (LimitNode.good). */
const GOOD_TEXT_MAX = 64;

/** What is wrong with one text value at a limit node, or null. */
function textProblem(s: string, node: LimitNode | undefined): string | null {
  if (node === undefined) return textProblemAt(s, undefined);
  if (node.good === s) return null;
  const problem = textProblemAt(s, node);
  if (problem === null && s.length <= GOOD_TEXT_MAX) node.good = s;
  return problem;
}

function textProblemAt(s: string, node: LimitNode | undefined): string | null {
  const bad = unstorableText(s);
  if (bad) return bad;
  const limit = node?.limit ?? TEXT_LIMITS.text;
  if (s.length > limit) return `must not be longer than ${limit} characters`;
  if (node?.bytes !== undefined && s.length * 3 > node.bytes && utf8.encode(s).length > node.bytes) return `must not be longer than ${node.bytes} bytes of UTF-8`;
  if (node?.timestamp) return timestampProblem(s);
  return null;
}

/** Checks a text value, or queues an object or array for the walk. */
function visit(stack: Frame[], value: unknown, node: LimitNode | undefined, key: string | number, frame: Frame): string | null {
  if (typeof value === 'string') {
    const problem = textProblem(value, node);
    return problem ? `${pathOf(frame, key)} ${problem}` : null;
  }
  if (value !== null && typeof value === 'object') stack.push({ v: value, node, depth: frame.depth + 1, key, parent: frame });
  return null;
}

/** Nesting, array and object sizes, field names, text limits, storable text and timestamps of a
 * schema-valid document, in one walk without recursion. */
function limitProblem(c: CollectionName, doc: unknown): string | null {
  if (doc === null || typeof doc !== 'object') return null;
  const stack: Frame[] = [{ v: doc, node: limitTrie(c), depth: 0, key: '', parent: null }];
  for (let f = stack.pop(); f; f = stack.pop()) {
    if (f.depth >= DOCUMENT_MAX_DEPTH) return `${pathOf(f)} is nested more than ${DOCUMENT_MAX_DEPTH} levels deep`;
    if (Array.isArray(f.v)) {
      if (f.v.length > DOCUMENT_MAX_ITEMS) return `${pathOf(f)} has more than ${DOCUMENT_MAX_ITEMS} items`;
      const item = f.node?.star;
      for (let i = 0; i < f.v.length; i++) {
        const problem = visit(stack, f.v[i], item, i, f);
        if (problem) return problem;
      }
      continue;
    }
    const keys = Object.keys(f.v);
    if (keys.length > DOCUMENT_MAX_KEYS) return `${pathOf(f)} has more than ${DOCUMENT_MAX_KEYS} fields`;
    for (const k of keys) {
      if (!goodKeys.has(k)) {
        const bad = unstorableText(k);
        if (bad) return `${pathOf(f, JSON.stringify(k))}: the field name ${bad}`;
        if (k.length > MAX_KEY_LENGTH) return `${pathOf(f)} has a field name longer than ${MAX_KEY_LENGTH} characters`;
        if (goodKeys.size < GOOD_KEYS_MAX) goodKeys.add(k);
      }
      const problem = visit(stack, (f.v as Json)[k], f.node?.children.get(k) ?? f.node?.star, k, f);
      if (problem) return problem;
    }
  }
  return null;
}
