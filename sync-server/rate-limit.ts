/** Per-key rate limit: a token bucket holding a minute's allowance that refills continuously, so a
 * client may burst up to the limit and then sustain `perMinute`. Kept in process memory. */
export type RateDecision = { allowed: true } | { allowed: false; retryAfterSeconds: number };

export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    readonly perMinute: number,
    private readonly now: () => number = Date.now,
  ) {
    if (!(perMinute > 0)) throw new Error('The rate limit must be a positive number of requests per minute.');
  }

  take(key: string): RateDecision {
    const now = this.now();
    const rate = this.perMinute / 60_000;
    const b = this.buckets.get(key) ?? { tokens: this.perMinute, at: now };
    b.tokens = Math.min(this.perMinute, b.tokens + (now - b.at) * rate);
    b.at = now;
    this.buckets.set(key, b);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      if (this.buckets.size > 10_000) this.prune(now);
      return { allowed: true };
    }
    return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - b.tokens) / rate / 1000)) };
  }

  /** Full buckets carry no information; drop them so memory stays bounded. */
  private prune(now: number): void {
    const rate = this.perMinute / 60_000;
    for (const [k, b] of this.buckets) if (b.tokens + (now - b.at) * rate >= this.perMinute) this.buckets.delete(k);
  }
}
