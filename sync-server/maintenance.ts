/** Database housekeeping.
 *
 * Retention: the tables that are logs (push refusals, shared rate-limit rows) are swept on start and
 * every `sweepEveryMs` (default an hour), in batches, so they stay bounded: refusals older than
 * REFUSALS_RETENTION_DAYS (default 30) and rate-limit rows with nothing left to remember.
 *
 * Planner statistics: PostgreSQL plans every statement from the statistics ANALYZE gathers, and a
 * new team's database has none (autovacuum analyses a table a minute or more after it changed, and
 * never where it is switched off). Without them the planner takes `collection = 'leads' AND
 * workspace_id = $1` for a handful of rows and reads a whole workspace where it should probe an index:
 * measured on a fresh PostgreSQL 15, the second 5,000-row import call took 61-146 s and a lead search
 * 0.5 s at 20k leads. So the server keeps them itself: a commit that doubles the documents table
 * since the last ANALYZE (a first import, a large push) analyses it. The first such commit of a
 * database whose statistics describe a (nearly) empty table waits for it before its call answers, so
 * the next call is planned on them; after that the statistics in place are of a table at least half
 * the size, which give the same plans (the planner scales their row counts to the table's current
 * size), and the ANALYZE runs after the call has answered, not in it (afterCommit). On start, a
 * table never analysed (or changed a lot since) is analysed at once. ANALYZE samples a bounded
 * number of rows (0.1-0.6 s at 100k leads).
 *
 * Where nothing else vacuums (PGlite, which has no autovacuum; PostgreSQL with autovacuum off) this
 * also plays autovacuum's part: VACUUM ANALYZE once enough rows changed and the writes paused for
 * 15 s (at most a minute after it became due, as autovacuum looks at a table about once a
 * minute), and at least every `intervalMs` while anything changed. A bulk import is not vacuumed
 * between its calls: at 50k leads one VACUUM ANALYZE cost PostgreSQL about as much as inserting a
 * 5,000-row call, and an import of 100k ran ten of them beside its own writes (on PGlite, in the
 * server's one thread, ahead of the next call). Without it the embedded database kept stale statistics
 * and, worse, a GIN index built on an empty table reported zero entries forever, so lead search
 * stopped using its trigram index. */
import type { SqlDatabase } from './db.ts';
import { purgeRateLimits } from './rate-limit.ts';

export const DEFAULT_REFUSALS_RETENTION_DAYS = 30;
/** Rows deleted per statement, so a sweep never holds long locks. */
const SWEEP_BATCH = 5_000;

/** A commit of at least this many rows may grow the table enough to analyse it at once. */
export const BULK_COMMIT_ROWS = 1000;

/** A due VACUUM waits for the writes to pause this long (longer than the gap between two calls of
 * an import on a busy machine, 7 s at a load average of 15)... */
const QUIET_MS = 15_000;
/** ...but not longer than this after it became due (autovacuum_naptime's default). */
const MAX_WAIT_MS = 60_000;

export type MaintenanceOptions = {
  /** Vacuum soon after this many changed rows (default 5000) or a fifth of the table, whichever is
   * more, where nothing else vacuums. */
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
  /** Rows of `documents` when it was last analysed (pg_class.reltuples; -1 never), and rows this
   * process has written since. */
  private analyzedRows = -1;
  private writtenSinceAnalyze = 0;
  private analyzing: Promise<void> | null = null;
  /** Whether this process plays autovacuum's part (PGlite; PostgreSQL with autovacuum off). */
  private vacuums: boolean;
  private soon: NodeJS.Timeout | null = null;
  /** When the pending VACUUM became due (ms since the epoch), or null. */
  private dueSince: number | null = null;
  private readonly every: NodeJS.Timeout;
  private readonly sweeper: NodeJS.Timeout;
  private running: Promise<void> | null = null;
  private sweeping: Promise<SweepResult> | null = null;
  private stopped = false;

  constructor(
    private readonly db: SqlDatabase,
    private readonly opts: MaintenanceOptions = {},
  ) {
    this.vacuums = db.kind === 'pglite';
    this.every = setInterval(() => {
      if (this.vacuums && this.changed > 0) void this.run();
    }, opts.intervalMs ?? 600_000);
    this.every.unref();
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

  /** At start: on PostgreSQL, learns whether autovacuum runs and brings the statistics up to date when
   * the table was never analysed or changed a lot since (a database restored from a dump, written by a
   * server that did not keep them); PGlite is vacuumed and analysed before the server serves. */
  async start(): Promise<void> {
    if (this.db.kind === 'postgres') {
      const [setting] = await this.db.query<{ on: boolean }>("SELECT current_setting('autovacuum') = 'on' AS on");
      this.vacuums = setting?.on === false;
      const [state] = await this.db.query<{ analyzed: number; live: string | number | null; changed: string | number | null; ever: boolean | null }>(
        `SELECT c.reltuples AS analyzed, s.n_live_tup AS live, s.n_mod_since_analyze AS changed,
                (s.last_analyze IS NOT NULL OR s.last_autoanalyze IS NOT NULL) AS ever
           FROM pg_class c LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
          WHERE c.oid = 'documents'::regclass`,
      );
      this.analyzedRows = Number(state?.analyzed ?? -1);
      const live = Number(state?.live ?? 0);
      const changed = Number(state?.changed ?? 0);
      if ((state?.ever === false && live > 0) || changed > 50 + 0.1 * Math.max(this.analyzedRows, live)) await this.analyze();
      // Rows changed before this start count towards the next VACUUM (in the background).
      this.noteChanges(changed);
      return;
    }
    await this.run();
  }

  /** A commit of this process: counts it and, when it doubled the documents table since the last
   * ANALYZE, analyses the table. The committing call waits for that only when the statistics in
   * place are of a table that held next to nothing (under BULK_COMMIT_ROWS rows: a new database's
   * first bulk write), since the next statements planned on those would read whole workspaces
   * where they should probe an index. Otherwise the statistics of a table at least half its size
   * are in place, and plan the next statements as well as new ones would (the planner scales
   * them to the table's current size): the ANALYZE runs after the call's answer instead of in it
   * (at 80k leads 0.2-0.6 s, a third of an import call), beside whatever comes next, and concurrent
   * triggers share that one run. */
  afterCommit(rows: number): Promise<void> | undefined {
    this.noteChanges(rows);
    if (this.stopped) return undefined;
    this.writtenSinceAnalyze += rows;
    if (rows < BULK_COMMIT_ROWS || this.writtenSinceAnalyze < Math.max(BULK_COMMIT_ROWS, this.analyzedRows)) return undefined;
    // analyze() reports its own failures (onError): a run the call does not wait for needs no catch.
    const analysed = this.analyze();
    return this.analyzedRows < BULK_COMMIT_ROWS ? analysed : undefined;
  }

  /** ANALYZE documents now; concurrent calls share one run. */
  analyze(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    this.analyzing ??= (async () => {
      const written = this.writtenSinceAnalyze;
      try {
        await this.db.exec('ANALYZE documents');
        this.writtenSinceAnalyze -= written;
        await this.readAnalyzedRows();
      } catch (e) {
        this.opts.onError?.(e);
      }
    })().finally(() => {
      this.analyzing = null;
    });
    return this.analyzing;
  }

  private async readAnalyzedRows(): Promise<void> {
    const [row] = await this.db.query<{ n: number }>("SELECT reltuples AS n FROM pg_class WHERE oid = 'documents'::regclass");
    this.analyzedRows = Number(row?.n ?? -1);
  }

  /** Counts changed rows; once enough accumulated (where this process vacuums), schedules a vacuum
   * for when the writes pause for QUIET_MS, each further write putting it off, up to MAX_WAIT_MS
   * after it became due. */
  noteChanges(rows: number): void {
    if (!this.vacuums || this.stopped) return;
    this.changed += rows;
    // Like autovacuum's thresholds: a share of the table, so a large table is not vacuumed after
    // every import call (VACUUM ANALYZE of 100k leads takes about a second).
    const threshold = Math.max(this.opts.rowThreshold ?? 5000, 0.2 * this.analyzedRows);
    if (this.changed < threshold) return;
    const now = Date.now();
    this.dueSince ??= now;
    if (this.soon) clearTimeout(this.soon);
    this.soon = setTimeout(
      () => {
        this.soon = null;
        void this.run();
      },
      Math.max(0, Math.min(QUIET_MS, this.dueSince + MAX_WAIT_MS - now)),
    );
    this.soon.unref();
  }

  /** VACUUM ANALYZE now where this process plays autovacuum's part; concurrent calls share one run. */
  run(): Promise<void> {
    if (!this.vacuums || this.stopped) return Promise.resolve();
    if (this.running) return this.running;
    this.changed = 0;
    this.dueSince = null;
    if (this.soon) {
      clearTimeout(this.soon);
      this.soon = null;
    }
    const written = this.writtenSinceAnalyze;
    this.running = this.db
      .exec('VACUUM ANALYZE documents')
      .then(async () => {
        this.writtenSinceAnalyze -= written;
        await this.readAnalyzedRows();
      })
      .catch((e: unknown) => this.opts.onError?.(e))
      .finally(() => {
        this.running = null;
      });
    return this.running;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.sweeper);
    clearInterval(this.every);
    if (this.soon) clearTimeout(this.soon);
    await this.running;
    await this.analyzing;
    await this.sweeping?.catch(() => undefined);
  }
}
