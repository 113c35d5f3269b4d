/** A list cut into lists of at most `size` items, in order: for requests and lookups that have a
 * bound per call (ids per `in` list, leads per operation). */
export function chunk<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
