/** One SQL surface over two engines: PostgreSQL through `pg` (DATABASE_URL) and embedded PGlite (a data
 * folder). Everything above this file writes the same SQL for both. */
import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
import pg from 'pg';

/** Runs statements; rows come back as plain objects (jsonb already parsed). */
export type SqlExecutor = {
  query<R = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<R[]>;
};

export type NotificationHandler = (payload: string) => void;

export type SqlDatabase = SqlExecutor & {
  readonly kind: 'pglite' | 'postgres';
  /** BEGIN ... COMMIT around fn (ROLLBACK when it throws). */
  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T>;
  /** A consistent read-only view for fn (a snapshot on Postgres). */
  readOnly<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T>;
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
    db = await PGlite.create({ dataDir, extensions: { pg_trgm } });
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
  return {
    kind: 'pglite',
    query: direct.query,
    transaction: (fn) => db.transaction((tx) => fn(wrap(tx))),
    // One connection: a transaction is already exclusive, so reads need nothing stronger.
    readOnly: (fn) => db.transaction((tx) => fn(wrap(tx))),
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
      const res = await pool.query(text, [...params]);
      return res.rows as R[];
    },
  };
  async function inTransaction<T>(begin: string, fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    const client = await pool.connect();
    const tx: SqlExecutor = {
      async query<R>(text: string, params: readonly unknown[] = []) {
        const res = await client.query(text, [...params]);
        return res.rows as R[];
      },
    };
    let broken: Error | undefined;
    try {
      await client.query(begin);
      const out = await fn(tx);
      await client.query('COMMIT');
      return out;
    } catch (e) {
      try {
        await client.query('ROLLBACK');
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
    transaction: (fn) => inTransaction('BEGIN', fn),
    readOnly: (fn) => inTransaction('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY', fn),
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
