/** Deterministic time, ids and randomness for tests, simulations and benchmarks. No vitest import,
 * so benchmarks run outside the test runner can use them too. */
import type { Clock, Ids } from '../../shared/context.ts';

export class FakeClock implements Clock {
  private t: number;
  constructor(iso = '2026-11-16T10:00:00.000Z') {
    this.t = Date.parse(iso);
  }
  now(): Date {
    return new Date(this.t);
  }
  set(iso: string): void {
    this.t = Date.parse(iso);
  }
  advance(ms: number): void {
    this.t += ms;
  }
}

/** Deterministic RFC 4122 v4-shaped ids from a counter. */
export function sequentialIds(prefix = 0): Ids {
  let n = 0;
  return {
    uuid() {
      n++;
      const hex = (prefix * 1e9 + n).toString(16).padStart(20, '0');
      return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${n.toString(16).padStart(12, '0')}`;
    },
  };
}

/** A seeded PRNG (mulberry32), the one the app's demo workspace uses. */
export { seededRandom } from '../../shared/seeded-random.ts';
