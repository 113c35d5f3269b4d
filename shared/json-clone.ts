/** A deep copy of a plain JSON value (documents, inputs): about three times faster than
 * JSON.parse(JSON.stringify(v)) and seven times faster than structuredClone, which also handles
 * cycles, Dates, Maps and typed arrays that JSON documents never hold.
 *
 * An object is copied by a spread, then its nested objects and arrays replaced by their copies: V8
 * keeps the copy of a lead (~40 keys) in its fast form, with the source's hidden class. Copying key
 * by key (`out[k] = ...`) turned every object of more than ~16 keys into a hash table: ~3.4 KB a
 * lead instead of ~0.5, ten times slower to copy, slower to read, spread and serialise afterwards.
 * A spread also keeps an own `__proto__` key as a key, as JSON.parse makes it. */
export function cloneJson<T>(v: T): T {
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) {
    const out: unknown[] = new Array(v.length);
    for (let i = 0; i < v.length; i++) out[i] = cloneJson(v[i] as unknown);
    return out as T;
  }
  const out: Record<string, unknown> = { ...(v as Record<string, unknown>) };
  cloneNested(out);
  return out as T;
}

const hasOwn = Object.prototype.hasOwnProperty;

/** Replaces the objects and arrays among an object's own values by copies (cloneJson): a shallow
 * copy made deep. `for...in` reads V8's cached key list of a fast object, where Object.keys makes
 * an array per object (4x slower for a lead). */
export function cloneNested(out: Record<string, unknown>): void {
  for (const k in out) {
    if (!hasOwn.call(out, k)) continue;
    const x = out[k];
    if (x !== null && typeof x === 'object') out[k] = cloneJson(x);
  }
}
