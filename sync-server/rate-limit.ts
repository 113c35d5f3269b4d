/** Rate limits.
 *
 * Per API key: a token bucket holding a minute's allowance that refills continuously (a client may
 * burst up to the limit, then sustain `perMinute`), kept as GCRA's "theoretical arrival time" (tat):
 * each request moves the key's tat one interval (60 s / limit) later, and a request is refused while
 * the tat is more than a minute minus one interval ahead of now. On PostgreSQL the tat is shared by
 * every server process through the rate_limits table, so N processes allow the limit, not N times it.
 * Each process decides on its own view of the row, read again when it is older than `syncEveryMs`
 * (100 ms), and adds what it counted to the shared row every `syncEveryMs` in one UPSERT for all
 * busy keys (reading back the others' use). So a busy key costs each process at most ~10 reads and
 * ~10 writes a second whatever its request rate, and the processes together overshoot the limit by
 * at most what the others served in the last `syncEveryMs`; at a human pace the limit is exact.
 *
 * Per client address: unknown, revoked or malformed keys cost no more than `perMinute` failed
 * lookups a minute each address, in process memory; past that the address is refused before any
 * database lookup. */
import type { SqlDatabase } from './db.ts';

export type RateDecision = {
  allowed: boolean;
  limit: number;
  /** Requests left in the current allowance. */
  remaining: number;
  /** Seconds until the allowance is full again. */
  resetSeconds: number;
  /** When refused: seconds until one request is allowed. */
  retryAfterSeconds: number;
};

const MINUTE = 60_000;

/** In-memory token bucket (one process). */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    readonly perMinute: number,
    private readonly now: () => number = Date.now,
    private readonly maxKeys = 10_000,
  ) {
    if (!(perMinute > 0)) throw new Error('The rate limit must be a positive number of requests per minute.');
  }

  /** Whether `key` has an allowance left, without using it. */
  allows(key: string): boolean {
    const b = this.buckets.get(key);
    if (!b) return true;
    return b.tokens + (this.now() - b.at) * (this.perMinute / MINUTE) >= 1;
  }

  take(key: string): RateDecision {
    const now = this.now();
    const rate = this.perMinute / MINUTE;
    const b = this.buckets.get(key) ?? { tokens: this.perMinute, at: now };
    b.tokens = Math.min(this.perMinute, b.tokens + (now - b.at) * rate);
    b.at = now;
    this.buckets.set(key, b);
    if (this.buckets.size > this.maxKeys) this.prune(now);
    const resetSeconds = (tokens: number) => Math.ceil((this.perMinute - tokens) / rate / 1000);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return { allowed: true, limit: this.perMinute, remaining: Math.floor(b.tokens), resetSeconds: resetSeconds(b.tokens), retryAfterSeconds: 0 };
    }
    const retryAfterSeconds = Math.max(1, Math.ceil((1 - b.tokens) / rate / 1000));
    return { allowed: false, limit: this.perMinute, remaining: 0, resetSeconds: resetSeconds(b.tokens), retryAfterSeconds };
  }

  /** Full buckets carry no information; drop them so memory stays bounded. */
  private prune(now: number): void {
    const rate = this.perMinute / MINUTE;
    for (const [k, b] of this.buckets) if (b.tokens + (now - b.at) * rate >= this.perMinute) this.buckets.delete(k);
    // Still too many (an address flood): forget the oldest.
    for (const k of this.buckets.keys()) {
      if (this.buckets.size <= this.maxKeys) break;
      this.buckets.delete(k);
    }
  }
}

/** tat: this process's view of the key's arrival time; pending: requests not yet added to the
 * shared row; reach: the arrival time those requests alone make, from an empty row (each taken at
 * max(reach, its time) + interval: the clock's ms; -Infinity with none pending); seenAt: when the
 * view was last read from (or written to) the shared row (monotonic ms).
 *
 * Requests added to a row at `tat` in the order they were taken leave it at
 * max(tat + pending * interval, reach), whenever that addition happens: the shared row is what one
 * process taking every request itself would have. */
type Entry = { tat: number; pending: number; reach: number; seenAt: number };

const monotonic = (): number => performance.now();

/** The per-key limit, shared through PostgreSQL when `sql` is a Postgres database. */
export class SharedRateLimiter {
  private readonly entries = new Map<string, Entry>();
  private readonly loading = new Map<string, Promise<void>>();
  private readonly interval: number;
  private timer: NodeJS.Timeout | null = null;
  private syncing: Promise<void> | null = null;
  private stopped = false;

  constructor(
    readonly perMinute: number,
    private readonly now: () => number,
    private readonly sql: SqlDatabase | null,
    private readonly opts: { syncEveryMs?: number; onError?: (e: unknown) => void } = {},
  ) {
    if (!(perMinute > 0)) throw new Error('The rate limit must be a positive number of requests per minute.');
    this.interval = MINUTE / perMinute;
  }

  /** Whether the limit is shared with other processes. */
  get shared(): boolean {
    return this.sql?.kind === 'postgres';
  }

  /** Decides one request of `key`. A key this process has not seen lately is first read from the
   * shared row (one query), so a new process does not start every key with a full allowance. */
  async take(key: string): Promise<RateDecision> {
    if (this.shared) {
      const e = this.entries.get(key);
      if (!e || monotonic() - e.seenAt > this.syncEvery) await this.load(key);
    }
    return this.decide(key);
  }

  private get syncEvery(): number {
    return this.opts.syncEveryMs ?? 100;
  }

  private load(key: string): Promise<void> {
    const sql = this.sql;
    if (!sql) return Promise.resolve();
    let p = this.loading.get(key);
    if (!p) {
      p = sql
        .query<{ tat_ms: string | number }>('SELECT tat_ms FROM rate_limits WHERE key = $1', [key])
        .then((rows) => {
          const tat = rows[0] ? Number(rows[0].tat_ms) : 0;
          const e = this.entries.get(key);
          if (e) {
            e.tat = Math.max(e.tat, tat + e.pending * this.interval);
            e.seenAt = monotonic();
          } else this.entries.set(key, { tat, pending: 0, reach: -Infinity, seenAt: monotonic() });
        })
        // Decided locally then; the next sync brings the shared count.
        .catch((err: unknown) => this.opts.onError?.(err))
        .finally(() => this.loading.delete(key));
      this.loading.set(key, p);
    }
    return p;
  }

  private decide(key: string): RateDecision {
    const now = this.now();
    const tau = MINUTE - this.interval;
    const e = this.entries.get(key) ?? { tat: now, pending: 0, reach: -Infinity, seenAt: monotonic() };
    const tat = Math.max(e.tat, now);
    if (tat - now > tau + 1e-6) {
      this.entries.set(key, e);
      return {
        allowed: false,
        limit: this.perMinute,
        remaining: 0,
        resetSeconds: Math.ceil((tat - now) / 1000),
        retryAfterSeconds: Math.max(1, Math.ceil((tat - now - tau) / 1000)),
      };
    }
    e.tat = tat + this.interval;
    e.reach = Math.max(e.reach, now) + this.interval;
    e.pending += 1;
    this.entries.set(key, e);
    if (this.shared) this.schedule();
    else if (this.entries.size > 10_000) this.prune(now);
    return {
      allowed: true,
      limit: this.perMinute,
      remaining: Math.max(0, Math.floor((MINUTE - (e.tat - now)) / this.interval)),
      resetSeconds: Math.ceil((e.tat - now) / 1000),
      retryAfterSeconds: 0,
    };
  }

  private schedule(): void {
    if (this.timer || this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.sync();
    }, this.syncEvery);
    this.timer.unref();
  }

  /** Adds this process's counts to the shared rows and takes back the others' use. */
  sync(): Promise<void> {
    if (!this.sql || !this.shared) return Promise.resolve();
    if (this.syncing) return this.syncing;
    const sql = this.sql;
    let now: number;
    try {
      now = this.now();
    } catch (err) {
      // A failing clock (the server's, injected) is reported like a failing database; the counts
      // stay pending and go with a later batch. From a timer, a throw here would be uncaught.
      this.opts.onError?.(err);
      this.schedule();
      return Promise.resolve();
    }
    // Each key's requests count from when they were taken (Entry's reach), not from this batch's
    // time: a batch that leaves late (a busy event loop, a slow database) would otherwise move the
    // shared arrival time by the delay, and the key would be refused for requests it was allowed.
    const batch = [...this.entries].filter(([, e]) => e.pending > 0).map(([key, e]) => ({ key, n: e.pending, reach: Math.round(e.reach) }));
    if (batch.length === 0) return Promise.resolve();
    for (const b of batch) {
      const e = this.entries.get(b.key);
      if (e) {
        e.pending -= b.n;
        e.reach = -Infinity;
      }
    }
    this.syncing = sql
      .query<{ key: string; tat_ms: string | number }>(
        `WITH b AS (SELECT * FROM jsonb_to_recordset($2::jsonb) AS b(key text, n int, reach bigint))
         INSERT INTO rate_limits AS r (key, tat_ms)
         SELECT b.key, b.reach FROM b
         ON CONFLICT (key) DO UPDATE SET tat_ms = GREATEST(r.tat_ms + (SELECT (b.n * $1::float8)::bigint FROM b WHERE b.key = EXCLUDED.key), EXCLUDED.tat_ms)
         RETURNING key, tat_ms`,
        [this.interval, JSON.stringify(batch)],
      )
      .then((rows) => {
        for (const r of rows) {
          const e = this.entries.get(r.key);
          // The shared arrival time, plus what this process counted since the batch left.
          if (e) {
            e.tat = Math.max(e.tat, Number(r.tat_ms) + e.pending * this.interval);
            e.seenAt = monotonic();
          }
        }
        // Entries past their arrival time as of the batch's start (the clock read before it, which
        // also reports a failing clock before anything is sent) hold nothing to keep.
        for (const [k, e] of this.entries) if (e.pending === 0 && e.tat <= now) this.entries.delete(k);
      })
      .catch((err: unknown) => {
        // Counted again with the next batch, before the requests taken since it left.
        for (const b of batch) {
          const e = this.entries.get(b.key);
          if (!e) continue;
          e.reach = Math.max(b.reach + e.pending * this.interval, e.reach);
          e.pending += b.n;
        }
        this.opts.onError?.(err);
      })
      .finally(() => {
        this.syncing = null;
        if ([...this.entries.values()].some((e) => e.pending > 0)) this.schedule();
      });
    return this.syncing;
  }

  private prune(now: number): void {
    for (const [k, e] of this.entries) if (e.tat <= now) this.entries.delete(k);
  }

  /** Writes what is still counted and stops syncing (before the database closes). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.syncing;
    await this.sync();
  }
}

/** The IETF draft's RateLimit headers (draft-ietf-httpapi-ratelimit-headers-07) and Retry-After. */
export function rateLimitHeaders(d: RateDecision): Record<string, string> {
  return {
    'RateLimit-Limit': String(d.limit),
    'RateLimit-Remaining': String(d.remaining),
    'RateLimit-Reset': String(d.resetSeconds),
    'RateLimit-Policy': `${d.limit};w=60`,
    ...(d.allowed ? {} : { 'Retry-After': String(d.retryAfterSeconds) }),
  };
}

/** Deletes shared rows whose allowance is full again (nothing left to remember). */
export async function purgeRateLimits(sql: SqlDatabase, nowMs: number): Promise<number> {
  const rows = await sql.query<{ n: string | number }>('WITH d AS (DELETE FROM rate_limits WHERE tat_ms < $1::bigint RETURNING 1) SELECT count(*) AS n FROM d', [nowMs]);
  return Number(rows[0]?.n ?? 0);
}
