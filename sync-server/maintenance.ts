/** PGlite has no autovacuum: without VACUUM ANALYZE the planner keeps stale statistics and, worse,
 * a GIN index built on an empty table reports zero entries forever, so lead search stops using its
 * trigram index. This plays autovacuum's part for the embedded database. Postgres does it itself. */
import type { SqlDatabase } from './db.ts';

export type MaintenanceOptions = {
  /** Vacuum soon after this many changed rows (default 5000). */
  rowThreshold?: number;
  /** And at least this often while anything changed (default 10 minutes). */
  intervalMs?: number;
  onError?: (e: unknown) => void;
};

export class Maintenance {
  private changed = 0;
  private soon: NodeJS.Timeout | null = null;
  private readonly every: NodeJS.Timeout | null;
  private running: Promise<void> | null = null;
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
    if (this.every) clearInterval(this.every);
    if (this.soon) clearTimeout(this.soon);
    await this.running;
  }
}
