/** Database housekeeping.
 *
 * Retention: the tables that are logs (push refusals, shared rate-limit rows) are swept on start and
 * every `sweepEveryMs` (default an hour), in batches, so they stay bounded: refusals older than
 * REFUSALS_RETENTION_DAYS (default 30) and rate-limit rows with nothing left to remember.
 *
 * PGlite has no autovacuum: without VACUUM ANALYZE the planner keeps stale statistics and, worse,
 * a GIN index built on an empty table reports zero entries forever, so lead search stops using its
 * trigram index. This plays autovacuum's part for the embedded database. Postgres does it itself. */
import type { SqlDatabase } from './db.ts';
import { purgeRateLimits } from './rate-limit.ts';

export const DEFAULT_REFUSALS_RETENTION_DAYS = 30;
/** Rows deleted per statement, so a sweep never holds long locks. */
const SWEEP_BATCH = 5_000;

export type MaintenanceOptions = {
  /** Vacuum soon after this many changed rows (default 5000). */
  rowThreshold?: number;
  /** And at least this often while anything changed (default 10 minutes). */
  intervalMs?: number;
  onError?: (e: unknown) => void;
  /** Push refusals are kept this many days (default 30). */
  refusalsRetentionDays?: number;
  /** How often the log tables are swept (default an hour). */
  sweepEveryMs?: number;
  now?: () => Date;
};

export type SweepResult = { refusals: number; rateLimits: number };

export class Maintenance {
  private changed = 0;
  private soon: NodeJS.Timeout | null = null;
  private readonly every: NodeJS.Timeout | null;
  private readonly sweeper: NodeJS.Timeout;
  private running: Promise<void> | null = null;
  private sweeping: Promise<SweepResult> | null = null;
  private stopped = false;

  constructor(
    private readonly db: SqlDatabase,
    private readonly opts: MaintenanceOptions = {},
  ) {
    this.every =
      db.kind === 'pglite'
        ? setInterval(() => {
            if (this.changed > 0) void this.run();
          }, opts.intervalMs ?? 600_000)
        : null;
    this.every?.unref();
    this.sweeper = setInterval(() => {
      this.sweep().catch((e: unknown) => this.opts.onError?.(e));
    }, opts.sweepEveryMs ?? 3_600_000);
    this.sweeper.unref();
  }

  /** Deletes what is past retention; concurrent calls share one sweep. */
  sweep(): Promise<SweepResult> {
    if (this.stopped) return Promise.resolve({ refusals: 0, rateLimits: 0 });
    this.sweeping ??= this.sweepNow().finally(() => {
      this.sweeping = null;
    });
    return this.sweeping;
  }

  private async sweepNow(): Promise<SweepResult> {
    const now = this.opts.now?.() ?? new Date();
    const days = this.opts.refusalsRetentionDays ?? DEFAULT_REFUSALS_RETENTION_DAYS;
    const cutoff = new Date(now.getTime() - days * 86_400_000).toISOString();
    let refusals = 0;
    for (;;) {
      const rows = await this.db.query<{ n: string | number }>(
        `WITH d AS (DELETE FROM refusals WHERE id IN (SELECT id FROM refusals WHERE at < $1::timestamptz ORDER BY id LIMIT ${SWEEP_BATCH}) RETURNING 1)
         SELECT count(*) AS n FROM d`,
        [cutoff],
      );
      const n = Number(rows[0]?.n ?? 0);
      refusals += n;
      if (n < SWEEP_BATCH || this.stopped) break;
    }
    const rateLimits = await purgeRateLimits(this.db, now.getTime());
    return { refusals, rateLimits };
  }

  /** Counts changed rows; schedules a vacuum when enough accumulated. */
  noteChanges(rows: number): void {
    if (this.db.kind !== 'pglite' || this.stopped) return;
    this.changed += rows;
    if (this.changed >= (this.opts.rowThreshold ?? 5000) && !this.soon) {
      this.soon = setTimeout(() => {
        this.soon = null;
        void this.run();
      }, 5_000);
      this.soon.unref();
    }
  }

  /** VACUUM ANALYZE now (PGlite only); concurrent calls share one run. */
  run(): Promise<void> {
    if (this.db.kind !== 'pglite' || this.stopped) return Promise.resolve();
    if (this.running) return this.running;
    this.changed = 0;
    this.running = this.db
      .exec('VACUUM ANALYZE documents')
      .catch((e: unknown) => this.opts.onError?.(e))
      .finally(() => {
        this.running = null;
      });
    return this.running;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.sweeper);
    if (this.every) clearInterval(this.every);
    if (this.soon) clearTimeout(this.soon);
    await this.running;
    await this.sweeping?.catch(() => undefined);
  }
}
