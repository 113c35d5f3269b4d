/** The replication endpoints of API-CONTRACT.md, for RxDB's replicateRxCollection on the desktops:
 * pull by the server's `seq` checkpoint, push with conflict detection and the shared rules, and a
 * live Server-Sent Events stream. Everything is filtered to the API key's workspace.
 *
 * Documents cross this boundary with RxDB's `_deleted` flag; `_rev`, `_meta` and `_attachments` are
 * the client's and are never stored. The server never rewrites a pushed document. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Actor, Clock } from '../shared/context.ts';
import { DomainError, isDomainError } from '../shared/errors.ts';
import { sameJson } from '../shared/json-equal.ts';
import { COLLECTIONS, REPLICATED_COLLECTIONS } from '../shared/model/index.ts';
import type { CollectionName } from '../shared/model/index.ts';
import {
  DOCUMENT_MAX_DEPTH,
  DOCUMENT_MAX_ITEMS,
  DOCUMENT_MAX_KEYS,
  FIELD_LIMITS,
  INDEXED_TEXT_FIELDS,
  INDEXED_TEXT_MAX_BYTES,
  TEXT_LIMITS,
  TIMESTAMP_MAX_YEAR,
  TIMESTAMP_MIN_YEAR,
  timestampProblem,
} from '../shared/model/common.ts';
import { schemaProblem } from '../shared/model/validate.ts';
import { validateChange } from '../shared/rules/index.ts';
import type { Change } from '../shared/rules/index.ts';
import { Tx } from '../shared/tx.ts';
import type { Authenticated } from './auth.ts';
import type { SqlDatabase, SqlExecutor } from './db.ts';
import { CHANGES_CHANNEL, WRITER_LOCK_CLASS } from './pg-store.ts';
import type { CommitEvent, PgDatabase } from './pg-store.ts';
import type { ServerMetrics } from './metrics.ts';

type Json = Record<string, unknown>;
type Checkpoint = { seq: number };
type MasterDoc = Json & { _deleted: boolean };

export const MAX_PULL_LIMIT = 2000;
const DEFAULT_PULL_LIMIT = 100;
const CLIENT_FIELDS = ['_rev', '_meta', '_attachments', '_deleted'] as const;

const REPLICATED = new Set<string>(REPLICATED_COLLECTIONS);

export type ReplicationOptions = {
  db: PgDatabase;
  sql: SqlDatabase;
  clock: Clock;
  /** Authenticates and rate-limits a request (the same door as the operation routes). */
  admit: (req: FastifyRequest, reply: FastifyReply) => Promise<Authenticated>;
  /** Comment lines on idle streams, so proxies and clients know the connection is alive. */
  heartbeatMs?: number;
  /** Called for every change event, local or from another process (auth cache invalidation). */
  onChange?: (e: CommitEvent) => void;
  /** Called when change events of other processes may have been missed: the LISTEN connection dropped
   * or came back (NOTIFY is not sent again for what committed meanwhile). Caches that onChange keeps
   * fresh must be flushed here. */
  onGap?: () => void;
  log: FastifyInstance['log'];
  /** Caps on live streams: per API key and per process, and the unsent bytes a stream may hold
   * before it is closed (a slow client reconnects and resyncs from its checkpoint). */
  streams?: StreamLimits;
};

export type StreamLimits = { perKey: number; perProcess: number; bufferBytes: number; metrics?: ServerMetrics };

function collectionOf(name: string): CollectionName {
  if (!REPLICATED.has(name)) {
    throw new DomainError('NOT_FOUND', `There is no replicated collection named ${name}. GET /replication/collections lists them.`, { collection: name });
  }
  return name as CollectionName;
}

/** Refuses a client whose schema is older than the server's (426) or newer (400). */
function checkSchemaVersion(req: FastifyRequest, c: CollectionName): void {
  const header = req.headers['x-schema-version'];
  const query = (req.query as Record<string, unknown>).schemaVersion;
  const raw = typeof header === 'string' ? header : typeof query === 'string' ? query : undefined;
  if (raw === undefined) return;
  const theirs = Number(raw);
  const ours = COLLECTIONS[c].schema.version;
  if (!Number.isInteger(theirs)) throw new DomainError('INVALID_INPUT', `X-Schema-Version must be an integer, got "${raw}".`, { header: 'X-Schema-Version' });
  if (theirs < ours) {
    throw new DomainError('CLIENT_OUTDATED', `This app is out of date: it syncs ${c} with schema version ${theirs}, the server has version ${ours}. Update the app to keep syncing; your local changes are kept until then.`, {
      collection: c,
      clientVersion: theirs,
      serverVersion: ours,
    });
  }
  if (theirs > ours) {
    throw new DomainError('INVALID_INPUT', `This app is newer than the sync server (${c} schema version ${theirs}, server ${ours}); the server must be updated first.`, {
      collection: c,
      clientVersion: theirs,
      serverVersion: ours,
    });
  }
}

function parseCheckpoint(raw: unknown): Checkpoint | null {
  if (raw === undefined || raw === '' || raw === 'null') return null;
  let parsed: unknown = raw;
  if (typeof raw === 'string') {
    try {
      parsed = JSON.parse(raw);
    } catch {
      parsed = undefined;
    }
  }
  if (parsed === null) return null;
  const seq = (parsed as { seq?: unknown } | undefined)?.seq;
  if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 0) {
    throw new DomainError('INVALID_INPUT', 'checkpoint must be the JSON checkpoint of a previous pull, like {"seq": 42}.', { field: 'checkpoint' });
  }
  return { seq };
}

function parseLimit(raw: unknown): number {
  if (raw === undefined || raw === '') return DEFAULT_PULL_LIMIT;
  const n = typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isInteger(n) || n < 1 || n > MAX_PULL_LIMIT) {
    throw new DomainError('INVALID_INPUT', `limit must be an integer from 1 to ${MAX_PULL_LIMIT}.`, { field: 'limit' });
  }
  return n;
}

/** The `since` of GET /replication/refusals: an ISO 8601 date-time in the years documents may hold
 * (a year-0000 or far-future date is refused with 400, never handed to the database). */
function parseSince(raw: unknown): string {
  if (raw === undefined) return '1970-01-01T00:00:00.000Z';
  const problem = typeof raw === 'string' ? timestampProblem(raw) : 'must be given once';
  if (problem) throw new DomainError('INVALID_INPUT', `since ${problem}.`, { field: 'since' });
  return new Date(raw as string).toISOString();
}

/** The limits a collection's documents keep beside its RxDB schema (shared/model FIELD_LIMITS),
 * published with the schema so any RxDB client can check a document before pushing it. */
function documentLimits(c: CollectionName): Json {
  return {
    fieldMaxLength: FIELD_LIMITS[c] ?? {},
    defaultTextMaxLength: TEXT_LIMITS.text,
    indexedFieldsMaxUtf8Bytes: Object.fromEntries((INDEXED_TEXT_FIELDS[c] ?? []).map((f) => [f, INDEXED_TEXT_MAX_BYTES])),
    maxArrayItems: DOCUMENT_MAX_ITEMS,
    maxObjectKeys: DOCUMENT_MAX_KEYS,
    maxDepth: DOCUMENT_MAX_DEPTH,
    timestampYears: [TIMESTAMP_MIN_YEAR, TIMESTAMP_MAX_YEAR],
    text: 'no NUL characters, no unpaired UTF-16 surrogates',
    pushMaxRows: MAX_PUSH_ROWS,
  };
}

const master = (doc: Json, deleted: boolean): MasterDoc => ({ ...doc, _deleted: deleted });

/** One page of a collection's changes after `after`, in seq order. */
async function changesSince(sql: SqlExecutor, workspaceId: string, c: CollectionName, after: number, limit: number): Promise<{ seq: number; doc: MasterDoc }[]> {
  const rows = await sql.query<{ seq: string | number; deleted: boolean; doc: Json }>(
    `SELECT seq, deleted, doc FROM documents WHERE collection = '${c}' AND workspace_id = $1 AND seq > $2::bigint ORDER BY seq LIMIT $3::int`,
    [workspaceId, after, limit],
  );
  return rows.map((r) => ({ seq: Number(r.seq), doc: master(r.doc, r.deleted) }));
}

/** Splits a pushed document into its content (without RxDB's fields) and its deleted flag. */
function clientDoc(raw: unknown, where: string): { doc: Json; deleted: boolean } {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new DomainError('INVALID_INPUT', `${where} must be a document object.`);
  const doc: Json = { ...(raw as Json) };
  const deleted = doc._deleted === true;
  for (const f of CLIENT_FIELDS) delete doc[f];
  return { doc, deleted };
}

type PushRow = { assumed: { doc: Json; deleted: boolean } | null; next: { doc: Json; deleted: boolean } };

/** Most rows in one push (the desktop sends 100); a larger batch is refused whole (400). */
export const MAX_PUSH_ROWS = 1000;

/** Validates a push body: the rows' shape, then every new document against its collection's schema
 * and field limits (shared/model: text sizes, no NUL or lone surrogates, real timestamps, bounded
 * arrays and nesting), the same checks an operation's writes pass. Any problem refuses the batch. */
function parsePush(c: CollectionName, body: unknown, workspaceId: string): PushRow[] {
  if (!Array.isArray(body)) throw new DomainError('INVALID_INPUT', 'The push body must be an array of {assumedMasterState?, newDocumentState}.');
  if (body.length > MAX_PUSH_ROWS) {
    throw new DomainError('INVALID_INPUT', `A push holds at most ${MAX_PUSH_ROWS} rows, this one ${body.length}; push in smaller batches. Nothing of this push was stored.`, {
      collection: c,
      maxRows: MAX_PUSH_ROWS,
    });
  }
  const rows: PushRow[] = body.map((raw: unknown, i) => {
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new DomainError('INVALID_INPUT', `Row ${i} must be an object {assumedMasterState?, newDocumentState}.`, { row: i });
    const r = raw as Json;
    const next = clientDoc(r.newDocumentState, `Row ${i} newDocumentState`);
    const assumed = r.assumedMasterState === undefined || r.assumedMasterState === null ? null : clientDoc(r.assumedMasterState, `Row ${i} assumedMasterState`);
    return { assumed, next };
  });
  // A batch with a row that breaks the schema is refused whole: nothing is stored.
  const problems: { row: number; id: unknown; problem: string }[] = [];
  rows.forEach((r, i) => {
    const problem = schemaProblem(c, r.next.doc);
    if (problem) problems.push({ row: i, id: r.next.doc.id, problem });
  });
  const first = problems[0];
  if (first) {
    throw new DomainError('INVALID_INPUT', `Row ${first.row} (${c}/${String(first.id)}) is not a valid ${c} document: ${first.problem}. Nothing of this push was stored.`, {
      collection: c,
      problems,
      workspaceId,
    });
  }
  return rows;
}

/** Serves the replication routes on `app`. Returns a closer for the live streams. */
export async function registerReplication(app: FastifyInstance, opts: ReplicationOptions): Promise<{ close(): Promise<void> }> {
  const { db, sql, clock } = opts;
  const hub = new StreamHub(sql, opts.log, opts.heartbeatMs ?? 15_000, opts.streams ?? { perKey: 32, perProcess: 5000, bufferBytes: 1024 * 1024 });
  const offLocal = db.onCommit((e) => {
    hub.changed(e);
    opts.onChange?.(e);
  });
  // Commits of other server processes on the same Postgres.
  let unlisten: (() => Promise<void>) | null = null;
  const metrics = opts.streams?.metrics;
  if (sql.kind === 'postgres') {
    unlisten = await sql.listen(
      CHANGES_CHANNEL,
      (payload) => {
        try {
          const e = JSON.parse(payload) as CommitEvent;
          hub.changed(e);
          opts.onChange?.(e);
        } catch (err) {
          opts.log.warn({ err }, 'unreadable change notification');
        }
      },
      {
        onState: (s) => {
          if (s.state === 'up') {
            metrics?.changeListenerUp.set(1);
            if (!s.reconnected) return;
            metrics?.changeListenerReconnects.inc();
            // What other processes committed meanwhile was never announced: every stream is brought
            // up to date from its own position, and its client is told to pull as well.
            opts.onGap?.();
            hub.resync({ catchUp: true });
            opts.log.info({ downMs: s.downMs, streams: hub.size }, 'listening for other server processes\' commits again; live streams resynced');
            return;
          }
          metrics?.changeListenerUp.set(0);
          opts.onGap?.();
          // Clients pull what they have now; until the connection is back, every failed attempt (at
          // most every 30 s) tells them again, so nothing stays stale longer than that.
          hub.resync({ catchUp: false });
          if (s.attempt === 1) {
            opts.log.error({ err: s.error, retryInMs: s.retryInMs, streams: hub.size }, 'lost the connection that hears other server processes\' commits; reconnecting, live streams resynced meanwhile');
          } else {
            opts.log.warn({ err: s.error, attempt: s.attempt, retryInMs: s.retryInMs }, 'still reconnecting the connection that hears other server processes\' commits');
          }
        },
      },
    );
  } else {
    // The embedded database has one process: every commit is announced in-process.
    metrics?.changeListenerUp.set(1);
  }

  app.get('/replication/collections', async (req, reply) => {
    await opts.admit(req, reply);
    return reply.send({
      collections: REPLICATED_COLLECTIONS.map((name) => ({ name, schemaVersion: COLLECTIONS[name].schema.version, schema: COLLECTIONS[name].schema, limits: documentLimits(name) })),
    });
  });

  app.get('/replication/refusals', async (req, reply) => {
    const who = await opts.admit(req, reply);
    const sinceIso = parseSince((req.query as Record<string, unknown>).since);
    const rows = await sql.query<{ collection: string; document_id: string; code: string; message: string; details: Json; at: Date | string }>(
      `SELECT collection, document_id, code, message, details, at FROM refusals
        WHERE workspace_id = $1 AND member_id = $2 AND at > $3::timestamptz ORDER BY at, id LIMIT 500`,
      [who.actor.workspaceId, who.actor.memberId, sinceIso],
    );
    return reply.send({
      refusals: rows.map((r) => ({ collection: r.collection, documentId: r.document_id, code: r.code, message: r.message, details: r.details, at: new Date(r.at).toISOString() })),
    });
  });

  app.get('/replication/:collection/pull', async (req, reply) => {
    const who = await opts.admit(req, reply);
    const c = collectionOf((req.params as { collection: string }).collection);
    checkSchemaVersion(req, c);
    const q = req.query as Record<string, unknown>;
    const checkpoint = parseCheckpoint(q.checkpoint);
    const limit = parseLimit(q.limit);
    const page = await changesSince(sql, who.actor.workspaceId, c, checkpoint?.seq ?? 0, limit);
    const last = page[page.length - 1];
    return reply.send({ documents: page.map((p) => p.doc), checkpoint: last ? { seq: last.seq } : checkpoint });
  });

  app.post('/replication/:collection/push', async (req, reply) => {
    const who = await opts.admit(req, reply);
    const c = collectionOf((req.params as { collection: string }).collection);
    checkSchemaVersion(req, c);
    const rows = parsePush(c, req.body, who.actor.workspaceId);
    const conflicts = await push(db, clock, who.actor, c, rows);
    return reply.send(conflicts);
  });

  app.get('/replication/:collection/stream', async (req, reply) => {
    const who = await opts.admit(req, reply);
    const c = collectionOf((req.params as { collection: string }).collection);
    checkSchemaVersion(req, c);
    hub.admit(who.keyId);
    let start: { m: string | number | null }[];
    try {
      start = await sql.query<{ m: string | number | null }>(`SELECT max(seq) AS m FROM documents WHERE collection = '${c}' AND workspace_id = $1`, [who.actor.workspaceId]);
    } catch (e) {
      hub.release(who.keyId);
      throw e;
    }
    // Headers set before the stream starts (CORS, RateLimit-*) go out with it.
    const earlier = Object.fromEntries(Object.entries(reply.getHeaders()).filter((e): e is [string, string | number | string[]] => e[1] !== undefined));
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, {
      ...earlier,
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
      'x-request-id': String(req.id),
    });
    // The client pulls from its own checkpoint: everything before this point reaches it that way.
    res.write('data: RESYNC\n\n');
    hub.add({ workspaceId: who.actor.workspaceId, keyId: who.keyId, collection: c, lastSeq: Number(start[0]?.m ?? 0), res });
  });

  return {
    async close() {
      offLocal();
      await hub.close();
      await unlisten?.();
    },
  };
}

/** One transaction per push: compare, validate, store; refusals come back as conflicts. */
async function push(db: PgDatabase, clock: Clock, actor: Actor, c: CollectionName, rows: readonly PushRow[]): Promise<MasterDoc[]> {
  if (rows.length === 0) return [];
  return db.withStore(actor.workspaceId, async (store, sqlTx) => {
    // Take the workspace's writer lock first: nothing can change under the comparisons below.
    await sqlTx.query('SELECT pg_advisory_xact_lock($1::int, hashtext($2::text))', [WRITER_LOCK_CLASS, actor.workspaceId]);
    const ids = [...new Set(rows.map((r) => String(r.next.doc.id)))];
    const stored = await sqlTx.query<{ id: string; workspace_id: string; deleted: boolean; doc: Json }>(
      `SELECT id, workspace_id, deleted, doc FROM documents WHERE collection = '${c}' AND id = ANY($1::text[])`,
      [ids],
    );
    const current = new Map<string, MasterDoc | null>();
    const foreign = new Set<string>();
    for (const s of stored) {
      if (s.workspace_id !== actor.workspaceId) foreign.add(s.id);
      else current.set(s.id, master(s.doc, s.deleted));
    }
    const tx = new Tx(store);
    const now = clock.now();
    const conflicts: MasterDoc[] = [];
    const refusals: { id: string; error: DomainError }[] = [];

    for (const row of rows) {
      const id = String(row.next.doc.id);
      const mine = current.get(id) ?? null;
      const tombstone = (): MasterDoc => master(row.next.doc, true);
      if (foreign.has(id)) {
        // An id of another workspace: never revealed, never touched.
        conflicts.push(tombstone());
        refusals.push({ id, error: new DomainError('NOT_FOUND', `${c} ${id} was not found in this workspace.`, { collection: c, id }) });
        continue;
      }
      const assumed = row.assumed ? master(row.assumed.doc, row.assumed.deleted) : null;
      if (!sameMaster(mine, assumed)) {
        // Changed on the server since the client last saw it: the client merges and pushes again.
        conflicts.push(mine ?? tombstone());
        continue;
      }
      const before = mine && !mine._deleted ? stripDeleted(mine) : null;
      const after = row.next.deleted ? null : row.next.doc;
      if (before === null && after === null) continue;
      const change = { collection: c, before, after } as Change<CollectionName>;
      try {
        await validateChange(change, { actor, read: tx, now });
      } catch (e) {
        if (!isDomainError(e)) throw e;
        conflicts.push(mine ?? tombstone());
        refusals.push({ id, error: e });
        continue;
      }
      if (after) await tx.put(c, after as never);
      else await tx.remove(c, id);
      current.set(id, master(row.next.doc, row.next.deleted));
    }

    const writes = tx.writes();
    if (writes.length > 0) await store.commit(writes);
    if (refusals.length > 0) {
      await sqlTx.query(
        `INSERT INTO refusals (workspace_id, member_id, collection, document_id, code, message, details, at)
         SELECT $1, $2, $3, r.id, r.code, r.message, r.details, $4::timestamptz
           FROM jsonb_to_recordset($5::jsonb) AS r(id text, code text, message text, details jsonb)`,
        [
          actor.workspaceId,
          actor.memberId,
          c,
          now.toISOString(),
          JSON.stringify(refusals.map((r) => ({ id: r.id, code: r.error.code, message: r.error.message, details: r.error.details }))),
        ],
      );
    }
    return conflicts;
  });
}

function stripDeleted(m: MasterDoc): Json {
  const { _deleted: _d, ...doc } = m;
  return doc;
}

/** The stored master state equals what the client assumed (both absent counts as equal). */
function sameMaster(stored: MasterDoc | null, assumed: MasterDoc | null): boolean {
  if (stored === null || assumed === null) return stored === assumed;
  return sameJson(stored, assumed);
}

export type Subscriber = {
  workspaceId: string;
  keyId: string;
  collection: CollectionName;
  lastSeq: number;
  res: NodeJS.WritableStream & { end(): void; destroy(): void; destroyed?: boolean; writableLength: number; on(e: 'close', f: () => void): unknown };
};

/** Live streams: on every change of a workspace's collection, each subscriber gets the documents
 * after the last one it was sent, in seq order. One query per group of subscribers at the same point. */
export class StreamHub {
  private readonly subs = new Set<Subscriber>();
  private readonly pumping = new Map<string, Promise<void>>();
  private readonly again = new Set<string>();
  private readonly heartbeat: NodeJS.Timeout;
  private closed = false;
  private readonly perKey = new Map<string, number>();
  /** Streams admitted and not yet closed (counted from admission, so concurrent opens cannot pass). */
  private open = 0;

  constructor(
    private readonly sql: SqlDatabase,
    private readonly log: FastifyInstance['log'],
    heartbeatMs: number,
    private readonly limits: StreamLimits,
  ) {
    this.heartbeat = setInterval(() => {
      for (const s of this.subs) this.send(s, ': ping\n\n');
    }, heartbeatMs);
    this.heartbeat.unref();
  }

  /** Refuses a new stream over the key's or the process's cap (429, nothing opened). */
  admit(keyId: string): void {
    const mine = this.perKey.get(keyId) ?? 0;
    const refuse = (scope: 'key' | 'process', limit: number): never => {
      this.limits.metrics?.refused.inc({ reason: `streams_per_${scope}` });
      throw new DomainError(
        'RATE_LIMITED',
        scope === 'key'
          ? `This API key already has ${mine} live replication streams open, the most allowed (${limit}); close one (or another desktop) first.`
          : `This server has the most live replication streams it holds (${limit}); retry in a moment (another server process may have room).`,
        { reason: `streams_per_${scope}`, limit, retryAfterSeconds: 5 },
      );
    };
    if (mine >= this.limits.perKey) refuse('key', this.limits.perKey);
    if (this.open >= this.limits.perProcess) refuse('process', this.limits.perProcess);
    this.perKey.set(keyId, mine + 1);
    this.open += 1;
    this.limits.metrics?.streamsOpen.set(this.open);
  }

  /** Gives back an admission whose stream never opened (or closed). */
  release(keyId: string): void {
    const n = (this.perKey.get(keyId) ?? 1) - 1;
    if (n > 0) this.perKey.set(keyId, n);
    else this.perKey.delete(keyId);
    this.open = Math.max(0, this.open - 1);
    this.limits.metrics?.streamsOpen.set(this.open);
  }

  /** Writes to a stream unless its unsent data is over the bound: a client that does not read is
   * dropped (it reconnects, gets RESYNC and pulls from its checkpoint) instead of growing memory. */
  private send(s: Subscriber, chunk: string): void {
    if (s.res.destroyed) return;
    // The backlog, not the message: a page larger than the bound still goes to a client that keeps up.
    if (s.res.writableLength > this.limits.bufferBytes) {
      this.log.warn({ keyId: s.keyId, collection: s.collection, bufferedBytes: s.res.writableLength }, 'closing a live replication stream that does not keep up');
      this.limits.metrics?.refused.inc({ reason: 'stream_backpressure' });
      this.subs.delete(s);
      s.res.destroy();
      return;
    }
    s.res.write(chunk);
  }

  add(s: Subscriber, onClose?: () => void): void {
    this.subs.add(s);
    let released = false;
    const done = (): void => {
      this.subs.delete(s);
      if (!released) {
        released = true;
        this.release(s.keyId);
        onClose?.();
      }
    };
    s.res.on('close', done);
    if (s.res.destroyed || this.closed) done();
    // Changes committed between the start point and now.
    this.pump(s.workspaceId, s.collection);
  }

  changed(e: CommitEvent): void {
    for (const c of e.collections) this.pump(e.workspaceId, c);
  }

  /** Live streams open in this process. */
  get size(): number {
    return this.subs.size;
  }

  /** Sends RESYNC on every stream (its client pulls from its own checkpoint) after change events may
   * have been missed; with `catchUp`, also sends every stream what was committed after the last
   * document it was sent. */
  resync(opts: { catchUp: boolean }): void {
    if (this.closed) return;
    const groups = new Map<string, Subscriber>();
    for (const s of this.subs) {
      this.send(s, 'data: RESYNC\n\n');
      groups.set(`${s.workspaceId}/${s.collection}`, s);
    }
    if (opts.catchUp) for (const s of groups.values()) this.pump(s.workspaceId, s.collection);
  }

  private pump(workspaceId: string, collection: CollectionName): void {
    if (this.closed) return;
    const key = `${workspaceId}/${collection}`;
    if (![...this.subs].some((s) => s.workspaceId === workspaceId && s.collection === collection)) return;
    if (this.pumping.has(key)) {
      this.again.add(key);
      return;
    }
    const run = (async () => {
      do {
        this.again.delete(key);
        await this.deliver(workspaceId, collection);
      } while (this.again.has(key) && !this.closed);
    })()
      .catch((err: unknown) => this.log.warn({ err }, 'live replication stream update failed'))
      .finally(() => this.pumping.delete(key));
    this.pumping.set(key, run);
  }

  private async deliver(workspaceId: string, collection: CollectionName): Promise<void> {
    for (;;) {
      const group = [...this.subs].filter((s) => s.workspaceId === workspaceId && s.collection === collection);
      if (group.length === 0) return;
      const from = Math.min(...group.map((s) => s.lastSeq));
      const page = await changesSince(this.sql, workspaceId, collection, from, 500);
      if (page.length === 0) return;
      for (const s of group) {
        const mine = page.filter((p) => p.seq > s.lastSeq);
        const last = mine[mine.length - 1];
        if (!last) continue;
        s.lastSeq = last.seq;
        this.send(s, `data: ${JSON.stringify({ documents: mine.map((p) => p.doc), checkpoint: { seq: last.seq } })}\n\n`);
      }
      if (page.length < 500) return;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.heartbeat);
    for (const s of this.subs) s.res.end();
    this.subs.clear();
    await Promise.all([...this.pumping.values()]);
  }
}

/** The replication routes for the OpenAPI document. */
export function replicationOpenApi(): { paths: Record<string, unknown>; schemas: Record<string, unknown> } {
  const err = (description: string) => ({ description, content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorBody' } } } });
  const collection = { name: 'collection', in: 'path', required: true, schema: { type: 'string', enum: REPLICATED_COLLECTIONS } };
  const version = {
    name: 'X-Schema-Version',
    in: 'header',
    required: false,
    description: "The client's schema version of the collection; an older one is answered 426 CLIENT_OUTDATED (update the app). Also accepted as the query parameter schemaVersion.",
    schema: { type: 'integer' },
  };
  const doc = { type: 'object', description: 'A document of the collection with _deleted.', additionalProperties: true, properties: { _deleted: { type: 'boolean' } } };
  const checkpoint = { type: ['object', 'null'], properties: { seq: { type: 'integer' } }, required: ['seq'] };
  const common = { security: [{ bearer: [] }], tags: ['replication'] };
  const errors = { '400': err('Malformed request.'), '401': err('Missing, unknown or revoked key.'), '404': err('Not a replicated collection.'), '426': err('The client schema is outdated (CLIENT_OUTDATED).'), '429': err('Rate limited.'), '503': err('The database cannot be reached right now (UNAVAILABLE); retry after Retry-After seconds.') };
  return {
    schemas: {},
    paths: {
      '/replication/collections': {
        get: {
          ...common,
          operationId: 'replication.collections',
          summary: 'The replicated collections with their schema version and RxDB JSON schema.',
          responses: { '200': { description: 'Collections.', content: { 'application/json': { schema: { type: 'object', properties: { collections: { type: 'array', items: { type: 'object', properties: { name: { type: 'string' }, schemaVersion: { type: 'integer' }, schema: { type: 'object' }, limits: { type: 'object', description: 'The field limits every pushed document must also keep (see documentLimits in sync-server/replication.ts).' } } } } } } } } }, '401': errors['401'] },
        },
      },
      '/replication/refusals': {
        get: {
          ...common,
          operationId: 'replication.refusals',
          summary: "Why the server refused documents the caller pushed (the caller's own refusals), after `since`.",
          parameters: [{ name: 'since', in: 'query', required: false, schema: { type: 'string', format: 'date-time' } }],
          responses: {
            '200': { description: 'Refusals, oldest first.', content: { 'application/json': { schema: { type: 'object', properties: { refusals: { type: 'array', items: { type: 'object', properties: { collection: { type: 'string' }, documentId: { type: 'string' }, code: { type: 'string' }, message: { type: 'string' }, details: { type: 'object' }, at: { type: 'string', format: 'date-time' } } } } } } } } },
            '400': errors['400'],
            '401': errors['401'],
          },
        },
      },
      '/replication/{collection}/pull': {
        get: {
          ...common,
          operationId: 'replication.pull',
          summary: 'Documents changed after the checkpoint, in server order; exactly `limit` unless caught up.',
          parameters: [
            collection,
            version,
            { name: 'checkpoint', in: 'query', required: false, description: 'The checkpoint of the previous page, as JSON: {"seq": n}. Omit on the first pull.', schema: { type: 'string' } },
            { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: MAX_PULL_LIMIT, default: DEFAULT_PULL_LIMIT } },
          ],
          responses: { '200': { description: 'A page.', content: { 'application/json': { schema: { type: 'object', properties: { documents: { type: 'array', items: doc }, checkpoint } } } } }, ...errors },
        },
      },
      '/replication/{collection}/push': {
        post: {
          ...common,
          operationId: 'replication.push',
          summary: 'Writes documents in one transaction. Returns the conflicts: the server state of each row whose assumed state was outdated or that the rules refused (refusals are recorded for the caller). A row breaking the schema refuses the whole batch (400).',
          parameters: [collection, version],
          requestBody: { required: true, content: { 'application/json': { schema: { type: 'array', items: { type: 'object', required: ['newDocumentState'], properties: { assumedMasterState: doc, newDocumentState: doc } } } } } },
          responses: { '200': { description: 'Conflicting server documents.', content: { 'application/json': { schema: { type: 'array', items: doc } } } }, ...errors, '413': err('The body is too large.') },
        },
      },
      '/replication/{collection}/stream': {
        get: {
          ...common,
          operationId: 'replication.stream',
          summary: 'Server-Sent Events: `data: RESYNC` on connect, then `data: {"documents": [...], "checkpoint": {"seq": n}}` for every change; `: ping` comments keep it alive.',
          parameters: [collection, version],
          responses: { '200': { description: 'An event stream.', content: { 'text/event-stream': { schema: { type: 'string' } } } }, ...errors },
        },
      },
    },
  };
}
