/** One SQL surface over two engines: PostgreSQL through `pg` (DATABASE_URL) and embedded PGlite (a data
 * folder). Everything above this file writes the same SQL for both. */
import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { btree_gin } from '@electric-sql/pglite/contrib/btree_gin';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
import pg from 'pg';

/** Runs statements; rows come back as plain objects (jsonb already parsed). */
export type SqlExecutor = {
  query<R = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<R[]>;
};

export type NotificationHandler = (payload: string) => void;

/** A transaction-scoped advisory lock: `pg_advisory_xact_lock(classId, hashtext(key))`. */
export type AdvisoryLock = { classId: number; key: string };

export type TransactionOptions = {
  /** Taken right after BEGIN, in the same round trip, and held until COMMIT or ROLLBACK. PGlite runs
   * one transaction at a time, so there it is already held by construction and costs nothing. */
  lock?: AdvisoryLock;
  /** A statement without parameters (quote values with quoteLiteral) run right after BEGIN and the
   * lock, in the same round trip; its rows are fn's second argument. */
  first?: string;
  /** Called once COMMIT or ROLLBACK has been sent (not yet acknowledged): a writer queued behind this
   * transaction may send its BEGIN and lock request now, and the database grants the lock the moment
   * this transaction ends. May be called more than once. */
  onEnd?: () => void;
};

/** Rows of TransactionOptions.first (empty without one). */
export type FirstRows = Record<string, unknown>[];

/** Statements worth a named prepared statement on PostgreSQL (parsed and planned once per
 * connection): the few fixed texts every request runs. Register with `prepared(text)`. */
const PREPARED = new Map<string, string>();

/** Marks a fixed statement text to be prepared once per PostgreSQL connection; returns the text. */
export function prepared(text: string): string {
  if (!PREPARED.has(text)) PREPARED.set(text, `crm_${PREPARED.size + 1}`);
  return text;
}

const statement = (text: string, values: unknown[]): pg.QueryConfig => {
  const name = PREPARED.get(text);
  return name ? { name, text, values } : { text, values };
};

/** A string as an SQL literal, for statements sent without parameters. */
export const quoteLiteral = (s: string): string => pg.escapeLiteral(s);

export type SqlDatabase = SqlExecutor & {
  readonly kind: 'pglite' | 'postgres';
  /** BEGIN ... COMMIT around fn (ROLLBACK when it throws). */
  transaction<T>(fn: (tx: SqlExecutor, first: FirstRows) => Promise<T>, opts?: TransactionOptions): Promise<T>;
  /** A consistent read-only view for fn (a snapshot on Postgres). */
  readOnly<T>(fn: (tx: SqlExecutor, first: FirstRows) => Promise<T>, opts?: Pick<TransactionOptions, 'first'>): Promise<T>;
  /** Several statements in one string (migrations). */
  exec(sql: string): Promise<void>;
  /** LISTEN on a channel; returns the unlisten function. */
  listen(channel: string, handler: NotificationHandler): Promise<() => Promise<void>>;
  close(): Promise<void>;
};

export type OpenOptions = {
  /** postgres://... ; when absent an embedded PGlite database is opened in `dataDir`. */
  databaseUrl?: string | null;
  /** PGlite folder (default ./data). `memory://` keeps it in memory. */
  dataDir?: string;
  /** Postgres schema to use (created when missing); tests use a fresh one per run. */
  schema?: string;
  /** Max pooled connections on Postgres. */
  poolSize?: number;
};

const IDENT = /^[a-z_][a-z0-9_]*$/;

export async function openDatabase(opts: OpenOptions = {}): Promise<SqlDatabase> {
  if (opts.databaseUrl) return openPostgres(opts.databaseUrl, opts.schema, opts.poolSize ?? 10);
  return openPglite(opts.dataDir ?? './data');
}

async function openPglite(dataDir: string): Promise<SqlDatabase> {
  const inMemory = dataDir.startsWith('memory://');
  if (!inMemory) mkdirSync(dataDir, { recursive: true });
  const release = inMemory ? () => undefined : lockDataDir(dataDir);
  let db: PGlite;
  try {
    db = await PGlite.create({ dataDir, extensions: { pg_trgm, btree_gin } });
  } catch (e) {
    release();
    throw e;
  }
  const wrap = (q: { query: PGlite['query'] }): SqlExecutor => ({
    async query<R>(text: string, params: readonly unknown[] = []) {
      const res = await q.query<R>(text, [...params]);
      return res.rows;
    },
  });
  const direct = wrap(db);
  const inTransaction = <T>(fn: (tx: SqlExecutor, first: FirstRows) => Promise<T>, first: string | undefined): Promise<T> =>
    db.transaction(async (t) => {
      const tx = wrap(t);
      return fn(tx, first ? await tx.query<FirstRows[number]>(first) : []);
    });
  // PGlite runs one transaction at a time: a queued writer simply waits for this one to end.
  return {
    kind: 'pglite',
    query: direct.query,
    transaction: (fn, opts) => inTransaction(fn, opts?.first),
    // One connection: a transaction is already exclusive, so reads need nothing stronger.
    readOnly: (fn, opts) => inTransaction(fn, opts?.first),
    async exec(sql) {
      await db.exec(sql);
    },
    async listen(channel, handler) {
      const unlisten = await db.listen(channel, handler);
      return async () => unlisten();
    },
    async close() {
      try {
        await db.close();
      } finally {
        release();
      }
    },
  };
}

/** An embedded database has exactly one process owning its folder: a second one (a CLI command next
 * to a running server) would corrupt it. The lock file holds the owner's pid; a dead owner's lock is
 * taken over. Returns the release function. */
export function lockDataDir(dataDir: string): () => void {
  const file = join(dataDir, 'crm-server.lock');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(file, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        try {
          unlinkSync(file);
        } catch {
          // Already gone.
        }
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const pid = Number(readFileSync(file, 'utf8').trim());
      if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && isAlive(pid)) {
        throw new Error(`The data folder ${dataDir} is in use by process ${pid} (a running sync server?). Stop it first, or use PostgreSQL (DATABASE_URL) to share one database between processes.`);
      }
      if (pid === process.pid) throw new Error(`The data folder ${dataDir} is already open in this process.`);
      unlinkSync(file);
    }
  }
  throw new Error(`Could not lock the data folder ${dataDir}.`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function lockClass(lock: AdvisoryLock): number {
  if (!Number.isInteger(lock.classId) || Math.abs(lock.classId) > 2 ** 31 - 1) throw new Error(`Invalid advisory lock class ${lock.classId}.`);
  return lock.classId;
}

async function openPostgres(url: string, schema: string | undefined, max: number): Promise<SqlDatabase> {
  if (schema !== undefined && !IDENT.test(schema)) throw new Error(`Invalid schema name ${schema}.`);
  if (schema) {
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      await admin.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    } finally {
      await admin.end();
    }
  }
  const pool = new pg.Pool({
    connectionString: url,
    max,
    ...(schema ? { options: `-c search_path=${schema},public` } : {}),
  });
  // An idle client that loses its connection emits 'error' on the pool; without a listener Node exits.
  pool.on('error', () => undefined);
  const exec: SqlExecutor = {
    async query<R>(text: string, params: readonly unknown[] = []) {
      const res = await pool.query(statement(text, [...params]));
      return res.rows as R[];
    },
  };
  async function inTransaction<T>(beginWith: string, fn: (tx: SqlExecutor, first: FirstRows) => Promise<T>, opts: TransactionOptions = {}): Promise<T> {
    const client = await pool.connect();
    // BEGIN, the lock and the first statement in one simple-protocol round trip (values are quoted
    // literals there).
    const statements = [beginWith];
    if (opts.lock) statements.push(`SELECT pg_advisory_xact_lock(${lockClass(opts.lock)}, hashtext(${quoteLiteral(opts.lock.key)}))`);
    if (opts.first) statements.push(opts.first);
    // One statement at a time on the connection, in call order: handlers read in parallel
    // (Promise.all), and pg only queues overlapping queries on one client as a deprecated
    // behaviour (removed in pg 9). COMMIT and ROLLBACK wait their turn the same way.
    let tail: Promise<unknown> = Promise.resolve();
    const inTurn = <R>(run: () => Promise<R>): Promise<R> => {
      const next = tail.then(run);
      tail = next.catch(() => undefined);
      return next;
    };
    const tx: SqlExecutor = {
      async query<R>(text: string, params: readonly unknown[] = []) {
        const res = await inTurn(() => client.query(statement(text, [...params])));
        return res.rows as R[];
      },
    };
    let broken: Error | undefined;
    try {
      const began: unknown = await client.query(statements.join('; '));
      const results = (Array.isArray(began) ? began : [began]) as pg.QueryResult[];
      const first: FirstRows = opts.first ? (results[results.length - 1]?.rows ?? []) : [];
      const out = await fn(tx, first);
      const committing = inTurn(() => client.query('COMMIT'));
      opts.onEnd?.();
      await committing;
      return out;
    } catch (e) {
      try {
        const rollingBack = inTurn(() => client.query('ROLLBACK'));
        opts.onEnd?.();
        await rollingBack;
      } catch (rollbackError) {
        broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
      }
      throw e;
    } finally {
      client.release(broken);
    }
  }
  const listeners: pg.Client[] = [];
  return {
    kind: 'postgres',
    query: exec.query,
    transaction: (fn, opts) => inTransaction('BEGIN', fn, opts),
    readOnly: (fn, opts) => inTransaction('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY', fn, { first: opts?.first }),
    async exec(sql) {
      await pool.query(sql);
    },
    async listen(channel, handler) {
      if (!IDENT.test(channel)) throw new Error(`Invalid channel name ${channel}.`);
      const client = new pg.Client({ connectionString: url });
      client.on('error', () => undefined);
      await client.connect();
      client.on('notification', (n) => {
        if (n.channel === channel) handler(n.payload ?? '');
      });
      await client.query(`LISTEN ${channel}`);
      listeners.push(client);
      return async () => {
        const i = listeners.indexOf(client);
        if (i >= 0) listeners.splice(i, 1);
        await client.end().catch(() => undefined);
      };
    },
    async close() {
      await Promise.all(listeners.splice(0).map((c) => c.end().catch(() => undefined)));
      await pool.end();
    },
  };
}
