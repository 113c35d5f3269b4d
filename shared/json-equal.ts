/** Equality of JSON values (documents, their fields) regardless of key order: PostgreSQL's jsonb
 * hands keys back in its own order, RxDB and JSON.parse in the order they were written, so every
 * store compares a document with what a writer read by this one function. A key holding `undefined`
 * counts as absent, as in JSON. */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => sameJson(x, b[i]));
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  const kx = Object.keys(x).filter((k) => x[k] !== undefined);
  const ky = Object.keys(y).filter((k) => y[k] !== undefined);
  // Own keys only: a key such as `constructor` must not be found on y's prototype.
  return kx.length === ky.length && kx.every((k) => Object.prototype.hasOwnProperty.call(y, k) && sameJson(x[k], y[k]));
}
