/** Pacing settings of a runner host, from its environment: the gap between two actions of one
 * sender (RUNNER_SPACING_SECONDS, default 60) plus a random jitter of up to RUNNER_JITTER_SECONDS
 * (default 120). A bad value is refused with a message naming the variable, never guessed. */
import type { Spacing } from './runner-core.ts';

export const DEFAULT_SPACING: Spacing = { minSeconds: 60, jitterSeconds: 120 };

export function spacingFromEnv(env: Readonly<Record<string, string | undefined>>): Spacing {
  const read = (name: string, fallback: number): number => {
    const raw = env[name]?.trim();
    if (raw === undefined || raw === '') return fallback;
    const n = Number(raw);
    if (!/^\d+(\.\d+)?$/.test(raw) || !Number.isFinite(n) || n > 86_400) {
      throw new Error(`${name} must be a number of seconds between 0 and 86400 (got "${raw}").`);
    }
    return n;
  };
  return { minSeconds: read('RUNNER_SPACING_SECONDS', DEFAULT_SPACING.minSeconds), jitterSeconds: read('RUNNER_JITTER_SECONDS', DEFAULT_SPACING.jitterSeconds) };
}
