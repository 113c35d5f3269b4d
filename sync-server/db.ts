/** One SQL surface over two engines: PostgreSQL through `pg` (DATABASE_URL) and embedded PGlite (a data
 * folder). Everything above this file writes the same SQL for both. Long (~500 lines) because the
 * two engines differ in connection handling, LISTEN/NOTIFY (a shared healing listener on PostgreSQL)
 * and error shapes, and those differences stay here, in one place. */
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

/** What the LISTEN connection is doing. NOTIFY is never sent again for what was committed while it
 * was down, so a listener that cares must reread what it follows on both events. */
export type ListenerEvent =
  /** Listening. `reconnected` is false for the first connection; `downMs` is how long it was down. */
  | { state: 'up'; reconnected: boolean; downMs: number }
  /** Lost (or a reconnect attempt failed): the next attempt runs in `retryInMs`. `attempt` counts the
   * failed attempts since it was last up (1: it has just dropped). */
  | { state: 'down'; error: Error; attempt: number; retryInMs: number };

export type ListenOptions = {
  onState?: (e: ListenerEvent) => void;
  /** Reconnect backoff: the first wait and the cap (default 500 ms doubling to 30 s, with jitter). */
  backoff?: { firstMs: number; maxMs: number };
  /** A cheap query on the connection this often finds a connection that died silently (default 30 s). */
  checkEveryMs?: number;
};

/** The application_name of LISTEN connections (with the process id), to find them in pg_stat_activity. */
export const LISTEN_APPLICATION_NAME = 'crm-listen';

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

/** How long a finished read-only transaction waits for the next transaction to carry its COMMIT. */
const END_READ_AFTER_MS = 20;

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
  /** LISTEN on a channel; returns the unlisten function. On PostgreSQL the connection reconnects by
   * itself when it drops (opts.onState tells when); the first connection must succeed. */
  listen(channel: string, handler: NotificationHandler, opts?: ListenOptions): Promise<() => Promise<void>>;
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
  /** How long a finished read-only transaction on Postgres waits for the next transaction to carry
   * its COMMIT (default 20 ms; see openPostgres). */
  readEndMs?: number;
};

const IDENT = /^[a-z_][a-z0-9_]*$/;

export async function openDatabase(opts: OpenOptions = {}): Promise<SqlDatabase> {
  if (opts.databaseUrl) return openPostgres(opts.databaseUrl, opts.schema, opts.poolSize ?? 10, opts.readEndMs ?? END_READ_AFTER_MS);
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
  const inTransaction = <T>(fn: (tx: SqlExecutor, first: FirstRows) => Promise<T>, first: string | undefined, yieldFirst = false): Promise<T> =>
    db.transaction(async (t) => {
      // PGlite runs on this thread, and its lock hands over to the next transaction in a microtask:
      // with writers queued, sockets (a webhook's HTTP exchange, requests arriving) would wait until
      // the queue is empty. One turn of the event loop per write transaction lets them through (10
      // writers at once: webhook p50 5.0 -> 1.2 s, in one measurement on a loaded machine). Reads,
      // short and many, do not pay it.
      if (yieldFirst) await new Promise<void>((r) => setImmediate(r));
      const tx = wrap(t);
      return fn(tx, first ? await tx.query<FirstRows[number]>(first) : []);
    });
  // PGlite runs one transaction at a time: a queued writer simply waits for this one to end.
  return {
    kind: 'pglite',
    query: direct.query,
    transaction: (fn, opts) => inTransaction(fn, opts?.first, true),
    // One connection: a transaction is already exclusive, so reads need nothing stronger.
    readOnly: (fn, opts) => inTransaction(fn, opts?.first),
    async exec(sql) {
      await db.exec(sql);
    },
    async listen(channel, handler, opts) {
      const unlisten = await db.listen(channel, handler);
      // In-process: notifications cannot be lost, so it is up for as long as the database is open.
      opts?.onState?.({ state: 'up', reconnected: false, downMs: 0 });
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

async function openPostgres(url: string, schema: string | undefined, max: number, readEndMs: number): Promise<SqlDatabase> {
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
    // TCP keep-alive: an idle pooled connection to a host that vanished (a failover) is found dead.
    keepAlive: true,
    ...(schema ? { options: `-c search_path=${schema},public` } : {}),
  });
  // An idle client that loses its connection (a restart, pg_terminate_backend) emits 'error' on the
  // pool, which drops it; without a listener Node would exit. A client in use fails its query, and
  // pg-pool drops it on release (it is no longer queryable): the pool heals by itself.
  pool.on('error', () => undefined);
  const exec: SqlExecutor = {
    async query<R>(text: string, params: readonly unknown[] = []) {
      const res = await pool.query(statement(text, [...params]));
      return res.rows as R[];
    },
  };
  /** COMMITs of read-only transactions still on their way (see readOnly below); close() waits for them. */
  const ending = new Set<Promise<void>>();
  /** Connections whose read-only transaction has read everything but is not ended yet: the next
   * transaction of this process takes one and sends that COMMIT together with its own BEGIN, in one
   * round trip; one not taken within readEndMs is committed and returned to the pool. */
  type Parked = { client: pg.PoolClient; timer: NodeJS.Timeout; onError: (e: Error) => void };
  const finishedReads: Parked[] = [];
  const endRead = (client: pg.PoolClient): void => {
    const end: Promise<void> = client.query('COMMIT').then(
      () => client.release(),
      (e: unknown) => client.release(e instanceof Error ? e : new Error(String(e))),
    );
    ending.add(end);
    void end.finally(() => ending.delete(end));
  };
  let closing = false;
  const parkRead = (client: pg.PoolClient): void => {
    if (closing) {
      endRead(client);
      return;
    }
    const entry = {
      client,
      timer: setTimeout(() => {
        if (unpark(entry)) endRead(client);
      }, readEndMs),
      // A checked-out client has no pool listener: a connection lost while parked (a restart,
      // pg_terminate_backend) is dropped here instead of reaching the next transaction.
      onError: (e: Error) => {
        if (unpark(entry)) client.release(e);
      },
    };
    client.on('error', entry.onError);
    finishedReads.push(entry);
  };
  /** Takes a parked connection out of the list; false when another path already took it. */
  const unpark = (entry: Parked): boolean => {
    const at = finishedReads.indexOf(entry);
    if (at < 0) return false;
    finishedReads.splice(at, 1);
    clearTimeout(entry.timer);
    entry.client.removeListener('error', entry.onError);
    return true;
  };
  async function inTransaction<T>(beginWith: string, fn: (tx: SqlExecutor, first: FirstRows) => Promise<T>, opts: TransactionOptions = {}, readOnly = false): Promise<T> {
    const parked = finishedReads[finishedReads.length - 1];
    if (parked) unpark(parked);
    const client = parked ? parked.client : await pool.connect();
    // BEGIN, the lock and the first statement in one simple-protocol round trip (values are quoted
    // literals there).
    const statements = parked ? ['COMMIT', beginWith] : [beginWith];
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
    let released = false;
    try {
      const began: unknown = await client.query(statements.join('; '));
      const results = (Array.isArray(began) ? began : [began]) as pg.QueryResult[];
      const first: FirstRows = opts.first ? (results[results.length - 1]?.rows ?? []) : [];
      const out = await fn(tx, first);
      if (readOnly) {
        // Everything was read: ending a read-only transaction cannot change the answer, so the
        // caller has it now, and the COMMIT travels with the next transaction's BEGIN (or alone,
        // soon after): one round trip less for every read call.
        released = true;
        void tail.then(() => parkRead(client));
        return out;
      }
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
      if (!released) client.release(broken);
    }
  }
  let listener: PgListener | null = null;
  return {
    kind: 'postgres',
    query: exec.query,
    transaction: (fn, opts) => inTransaction('BEGIN', fn, opts),
    readOnly: (fn, opts) => inTransaction('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY', fn, { first: opts?.first }, true),
    async exec(sql) {
      await pool.query(sql);
    },
    async listen(channel, handler, opts = {}) {
      if (!IDENT.test(channel)) throw new Error(`Invalid channel name ${channel}.`);
      // One LISTEN connection per process for every channel: a second connection would be a second
      // thing to heal, and one more backend per process.
      listener ??= new PgListener(url, opts);
      const current = listener;
      const sub: Subscription = { channel, handler, onState: opts.onState };
      await current.add(sub);
      return async () => {
        await current.remove(sub);
        if (current.idle && listener === current) listener = null;
      };
    },
    async close() {
      await listener?.stop();
      listener = null;
      closing = true;
      for (const parked of [...finishedReads]) if (unpark(parked)) endRead(parked.client);
      await Promise.all([...ending]);
      await pool.end();
    },
  };
}

/** The wait before reconnect attempt `attempt` (0-based): doubling from `firstMs` up to `maxMs`, each
 * drawn from its upper half so that processes that lost the database together do not return in step. */
export function reconnectDelay(attempt: number, backoff: { firstMs: number; maxMs: number }, random: () => number = Math.random): number {
  const ceiling = Math.min(backoff.maxMs, backoff.firstMs * 2 ** Math.min(attempt, 30));
  return Math.round(ceiling * (0.5 + random() / 2));
}

const asError = (e: unknown): Error => (e instanceof Error ? e : new Error(String(e)));

/** Ends a client, and destroys its socket when a polite goodbye does not finish in time (a peer that
 * vanished never answers). */
async function endClient(client: pg.Client, waitMs = 2_000): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([client.end().catch(() => undefined), new Promise<void>((r) => (timer = setTimeout(r, waitMs)))]);
  clearTimeout(timer);
  client.connection.stream.destroy();
}

type Subscription = { channel: string; handler: NotificationHandler; onState: ListenOptions['onState'] };

/** One LISTEN connection that heals, shared by every channel a process listens on: when it drops (a
 * PostgreSQL restart or failover, pg_terminate_backend, a proxy closing idle connections) or stops
 * answering the periodic check, it reconnects with backoff and LISTENs on every channel again,
 * reporting each step to every subscriber through onState. The backoff and the check interval are
 * those of the first subscriber. */
class PgListener {
  private client: pg.Client | null = null;
  private readonly subs = new Set<Subscription>();
  /** Channels the current connection LISTENs on. */
  private listening = new Set<string>();
  private started = false;
  private stopped = false;
  /** Failed attempts since the connection was last up. */
  private failures = 0;
  private downSince = 0;
  private retry: NodeJS.Timeout | null = null;
  private readonly check: NodeJS.Timeout;
  private checking = false;
  private readonly backoff: { firstMs: number; maxMs: number };

  constructor(
    private readonly url: string,
    opts: Pick<ListenOptions, 'backoff' | 'checkEveryMs'>,
  ) {
    this.backoff = opts.backoff ?? { firstMs: 500, maxMs: 30_000 };
    this.check = setInterval(() => void this.probe(), opts.checkEveryMs ?? 30_000);
    this.check.unref();
  }

  get idle(): boolean {
    return this.subs.size === 0;
  }

  /** Subscribes; the first subscription opens the connection, and its failure is the caller's (a
   * server that cannot listen does not start). A subscriber joining while the connection is down
   * hears when it is back. */
  async add(sub: Subscription): Promise<void> {
    this.subs.add(sub);
    try {
      if (!this.started) {
        this.client = await this.connect();
        this.started = true;
      } else if (this.client && !this.listening.has(sub.channel)) {
        await this.client.query(`LISTEN ${sub.channel}`);
        this.listening.add(sub.channel);
      }
    } catch (e) {
      this.subs.delete(sub);
      if (!this.started) await this.stop();
      throw e;
    }
    if (this.client) sub.onState?.({ state: 'up', reconnected: false, downMs: 0 });
  }

  async remove(sub: Subscription): Promise<void> {
    this.subs.delete(sub);
    if (this.subs.size === 0) {
      await this.stop();
      return;
    }
    if (![...this.subs].some((s) => s.channel === sub.channel) && this.client && this.listening.delete(sub.channel)) {
      await this.client.query(`UNLISTEN ${sub.channel}`).catch(() => undefined);
    }
  }

  private tell(e: ListenerEvent): void {
    for (const s of this.subs) s.onState?.(e);
  }

  private async connect(): Promise<pg.Client> {
    const client = new pg.Client({
      connectionString: this.url,
      application_name: `${LISTEN_APPLICATION_NAME}/${process.pid}`,
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      connectionTimeoutMillis: 10_000,
    });
    // Losses before the connection is in place fail this attempt; after, they start a reconnect.
    let early: Error | null = null;
    let onLoss: ((e: Error) => void) | null = null;
    const lost = (e: Error): void => {
      if (onLoss) onLoss(e);
      else early ??= e;
    };
    client.on('error', lost);
    client.on('end', () => lost(new Error('The LISTEN connection was closed.')));
    client.on('notification', (n) => {
      for (const s of this.subs) if (s.channel === n.channel) s.handler(n.payload ?? '');
    });
    const channels = new Set([...this.subs].map((s) => s.channel));
    try {
      await client.connect();
      for (const channel of channels) await client.query(`LISTEN ${channel}`);
      if (early) throw early;
    } catch (e) {
      await endClient(client, 0);
      throw asError(e);
    }
    this.listening = channels;
    onLoss = (e) => this.lost(client, e);
    return client;
  }

  private lost(client: pg.Client, error: Error): void {
    if (this.stopped || this.client !== client) return;
    this.client = null;
    this.downSince = Date.now();
    void endClient(client, 0);
    this.failed(error);
  }

  private failed(error: Error): void {
    const retryInMs = reconnectDelay(this.failures, this.backoff);
    this.failures += 1;
    this.tell({ state: 'down', error, attempt: this.failures, retryInMs });
    this.retry = setTimeout(() => void this.reconnect(), retryInMs);
    this.retry.unref();
  }

  private async reconnect(): Promise<void> {
    this.retry = null;
    if (this.stopped) return;
    let client: pg.Client;
    try {
      client = await this.connect();
    } catch (e) {
      if (!this.stopped) this.failed(asError(e));
      return;
    }
    if (this.stopped) {
      await endClient(client);
      return;
    }
    this.client = client;
    this.failures = 0;
    this.tell({ state: 'up', reconnected: true, downMs: Date.now() - this.downSince });
  }

  /** A connection can die without a word (a host gone, a NAT entry dropped): a query that does not
   * come back in time counts as a loss. */
  private async probe(): Promise<void> {
    const client = this.client;
    if (!client || this.checking || this.stopped) return;
    this.checking = true;
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        client.query('SELECT 1'),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error('The LISTEN connection did not answer a check within 10 s.')), 10_000);
        }),
      ]);
    } catch (e) {
      this.lost(client, asError(e));
    } finally {
      clearTimeout(timer);
      this.checking = false;
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.check);
    if (this.retry) clearTimeout(this.retry);
    this.retry = null;
    const client = this.client;
    this.client = null;
    if (client) await endClient(client);
  }
}
