/**
 * Strict inputs (API contract, "Strict inputs"), applied once at the operation boundary so every
 * transport (HTTP, IPC, WebSocket, the runner, tests) gets them:
 * - `strictInput` turns an input schema into one that refuses fields it does not declare, at any
 *   depth (objects inside arrays, unions, optionals, pipes...). Records (`variables`) stay open by
 *   nature: their keys are data. Output schemas are never made strict: responses may carry more.
 * - `textProblems` finds NUL characters and unpaired UTF-16 surrogates in any string (values and
 *   keys) of a raw input, with a bounded walk, so no such text reaches a store.
 */
import { unstorableText } from '../model/common.ts';
import { z } from 'zod';

type AnyDef = { type: string } & Record<string, unknown>;

const defOf = (s: z.ZodType): AnyDef => s._zod.def as unknown as AnyDef;
/** A schema rebuilt from its own definition with some parts replaced (checks and refinements kept). */
const rebuilt = (s: z.ZodType, parts: Record<string, unknown>): z.ZodType => s.clone({ ...defOf(s), ...parts } as Parameters<z.ZodType['clone']>[0]);

const strictCache = new WeakMap<z.ZodType, z.ZodType>();

/** The same schema, refusing undeclared object fields everywhere inside it (zod's
 * `unrecognized_keys`). Objects that already declare a catchall keep it. */
export function strictInput<T extends z.ZodType>(schema: T): T {
  return strictSchema(schema) as T;
}

function strictSchema(s: z.ZodType): z.ZodType {
  const cached = strictCache.get(s);
  if (cached) return cached;
  const def = defOf(s);
  const inner = (k: string): z.ZodType => strictSchema(def[k] as z.ZodType);
  let out: z.ZodType;
  switch (def.type) {
    case 'object': {
      const shape = Object.fromEntries(Object.entries(def.shape as Record<string, z.ZodType>).map(([k, v]) => [k, strictSchema(v)]));
      out = rebuilt(s, { shape, catchall: def.catchall ?? z.never() });
      break;
    }
    case 'optional':
    case 'nullable':
    case 'default':
    case 'prefault':
    case 'readonly':
    case 'nonoptional':
    case 'catch':
      out = rebuilt(s, { innerType: inner('innerType') });
      break;
    case 'array':
      out = rebuilt(s, { element: inner('element') });
      break;
    case 'record':
      out = rebuilt(s, { valueType: inner('valueType') });
      break;
    case 'union':
      out = rebuilt(s, { options: (def.options as z.ZodType[]).map(strictSchema) });
      break;
    case 'intersection':
      // Each side would refuse the other's fields: leave intersections as they are.
      out = s;
      break;
    case 'tuple':
      out = rebuilt(s, { items: (def.items as z.ZodType[]).map(strictSchema), rest: def.rest ? inner('rest') : def.rest });
      break;
    case 'pipe':
      out = rebuilt(s, { in: inner('in'), out: inner('out') });
      break;
    case 'lazy': {
      const getter = def.getter as () => z.ZodType;
      out = z.lazy(() => strictSchema(getter()));
      break;
    }
    default:
      out = s;
  }
  strictCache.set(s, out);
  return out;
}

export type InputIssue = { path: string; message: string };

/** Deepest nesting a request may have (ours are a handful of levels deep). */
export const MAX_INPUT_DEPTH = 32;
/** Most values (strings, numbers, objects...) one request may hold; far above the 1000-row imports. */
export const MAX_INPUT_NODES = 500_000;

/** An object or array on the walk of textProblems, with the keys of its fields to visit (null: an
 * array's items, all of them) and the next to visit. Paths are rebuilt from the parents only for a
 * problem, so the walk allocates one frame per object, not a path per value (an import's 70,000
 * cells). */
type Walk = { v: object; keys: readonly string[] | null; next: number; depth: number; key: string | number | null; parent: Walk | null };

const pathOf = (w: Walk | null, last?: string | number): string => {
  const parts: (string | number)[] = last === undefined ? [] : [last];
  for (let at = w; at && at.key !== null; at = at.parent) parts.unshift(at.key);
  return parts.join('.');
};

/** The problems of a raw input's text (values and keys), depth-first, at most 20 listed; also a
 * problem when the input nests deeper than MAX_INPUT_DEPTH or holds more than MAX_INPUT_NODES values. */
export function textProblems(raw: unknown): InputIssue[] {
  const issues: InputIssue[] = [];
  let nodes = 0;
  let top: Walk | null = null;
  /** Visits one value (its field `key` of `parent`); false once the walk must stop. */
  const visit = (v: unknown, parent: Walk | null, key: string | number | null): boolean => {
    if (++nodes > MAX_INPUT_NODES) {
      issues.push({ path: '', message: `the request holds more than ${MAX_INPUT_NODES} values; send fewer items per request` });
      return false;
    }
    if (typeof v === 'string') {
      const problem = unstorableText(v);
      if (problem) issues.push({ path: key === null ? '' : pathOf(parent, key), message: problem });
      return true;
    }
    if (v === null || typeof v !== 'object') return true;
    const depth = parent === null ? 0 : parent.depth + 1;
    if (depth >= MAX_INPUT_DEPTH) {
      issues.push({ path: key === null ? '' : pathOf(parent, key), message: `nested more than ${MAX_INPUT_DEPTH} levels deep` });
      return true;
    }
    const walk: Walk = { v, keys: null, next: 0, depth, key, parent };
    if (!Array.isArray(v)) {
      const keys = Object.keys(v);
      // Field names are judged when their object is reached, the last first (as they always were).
      let bad: Set<string> | null = null;
      for (let i = keys.length - 1; i >= 0; i--) {
        const k = keys[i] as string;
        const keyProblem = unstorableText(k);
        if (keyProblem) {
          issues.push({ path: pathOf(walk, JSON.stringify(k)), message: `field name ${keyProblem}` });
          (bad ??= new Set()).add(k);
        }
      }
      walk.keys = bad === null ? keys : keys.filter((k) => !bad.has(k));
    }
    top = walk;
    return true;
  };
  if (!visit(raw, null, null)) return issues;
  while (top !== null && issues.length < 20) {
    const w: Walk = top;
    const length = w.keys === null ? (w.v as unknown[]).length : w.keys.length;
    if (w.next >= length) {
      top = w.parent;
      continue;
    }
    const at = w.next++;
    const key = w.keys === null ? at : (w.keys[at] as string);
    if (!visit((w.v as Record<string | number, unknown>)[key], w, key)) break;
  }
  return issues;
}

/** Zod issues as the contract's `details.issues` (`{path, message}`), one issue per unknown field
 * so each path names the field itself. */
export function inputIssues(error: z.ZodError): InputIssue[] {
  return error.issues.flatMap((i): InputIssue[] => {
    if (i.code === 'unrecognized_keys') {
      return i.keys.map((k) => ({ path: [...i.path, k].join('.'), message: 'is not a field of this request (unknown fields are refused; check the spelling)' }));
    }
    return [{ path: i.path.join('.'), message: i.message }];
  });
}

/** The input without object keys whose value is `undefined`, as JSON would carry it: the desktop's
 * IPC (structured clone) keeps such keys, HTTP and WebSocket drop them, and a key that carries
 * nothing must not make one transport refuse what another accepts. Returns `raw` itself when it
 * holds none (the usual case); depth is bounded like `textProblems`. */
export function withoutUndefined(raw: unknown, depth = 0): unknown {
  if (raw === null || typeof raw !== 'object' || depth >= MAX_INPUT_DEPTH) return raw;
  // Values that are not objects are what they are: no call for each of an import's 70,000 cells.
  if (Array.isArray(raw)) {
    let out: unknown[] | null = null;
    raw.forEach((v, i) => {
      if (v === null || typeof v !== 'object') return;
      const w = withoutUndefined(v, depth + 1);
      if (w !== v) (out ??= [...raw])[i] = w;
    });
    return out ?? raw;
  }
  let out: Record<string, unknown> | null = null;
  for (const k of Object.keys(raw)) {
    const v = (raw as Record<string, unknown>)[k];
    if (v === undefined) {
      out ??= { ...raw };
      delete out[k];
      continue;
    }
    if (v === null || typeof v !== 'object') continue;
    const w = withoutUndefined(v, depth + 1);
    if (w !== v) (out ??= { ...raw })[k] = w;
  }
  return out ?? raw;
}

/** An object as JSON.parse makes it (Object's prototype), with no `__proto__` key of its own: what
 * a quick input check (OpDef.quickInput) may take as it is. */
export function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  return Object.getPrototypeOf(v) === Object.prototype && !Object.prototype.hasOwnProperty.call(v, '__proto__');
}
