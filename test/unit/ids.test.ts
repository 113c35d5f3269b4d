/**
 * The hosts' ids (shared/ids.ts): UUIDv7, ascending in the order they were made within a process,
 * so every store's unique id index takes new rows at its end.
 */
import { describe, expect, it, vi } from 'vitest';
import { timeOrderedIds } from '../../shared/ids.ts';
import { UUID_V7 } from '../support/uuid-v7.ts';

describe('timeOrderedIds', () => {
  it('makes UUIDv7 ids, unique and ascending in creation order even within one millisecond', () => {
    const before = Date.now();
    const made = Array.from({ length: 20_000 }, () => timeOrderedIds.uuid());
    const after = Date.now();
    expect(made.filter((id) => !UUID_V7.test(id))).toEqual([]);
    expect(made.filter((id, i) => i > 0 && !((made[i - 1] ?? '') < id))).toEqual([]);
    expect(new Set(made).size).toBe(made.length);
    // Their first 48 bits are the millisecond they were made (20,000 ids take far more than one
    // millisecond's worth of the counter, yet stay in order).
    const ms = (id: string) => parseInt(id.replace(/-/g, '').slice(0, 12), 16);
    expect(ms(made[0] ?? '')).toBeGreaterThanOrEqual(before);
    expect(ms(made[made.length - 1] ?? '')).toBeLessThanOrEqual(after + 1);
  });

  it('draws the random bytes of many ids in one call to the host (an import call makes 5,000)', () => {
    const draw = vi.spyOn(globalThis.crypto, 'getRandomValues');
    try {
      const made = Array.from({ length: 1_000 }, () => timeOrderedIds.uuid());
      expect(new Set(made).size).toBe(1_000);
      // 16 bytes per id, 256 ids a draw: at most five draws for 1,000 ids (one per id before).
      expect(draw.mock.calls.length).toBeLessThanOrEqual(5);
    } finally {
      draw.mockRestore();
    }
  });
});
