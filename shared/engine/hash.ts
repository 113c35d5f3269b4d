/** Deterministic hashing for the engine (no crypto module in shared/). */

/** 32-bit FNV-1a over the parts, then a murmur finaliser: a well-spread deterministic hash. */
export function hash32(...parts: readonly (string | number)[]): number {
  let h = 0x811c9dc5;
  const s = parts.join('\u001f');
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** A UUID (version 4 layout) derived from the parts: the same parts always give the same id. The
 * runner names the message of a step with it, so a retried send reuses its idempotency key. */
export function derivedUuid(...parts: readonly (string | number)[]): string {
  const hex = [0, 1, 2, 3].map((i) => hash32(i, ...parts).toString(16).padStart(8, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${((parseInt(hex.slice(16, 17), 16) & 0x3) | 0x8).toString(16)}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
