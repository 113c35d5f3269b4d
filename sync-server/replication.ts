/** The replication endpoints of API-CONTRACT.md, for RxDB's replicateRxCollection on the desktops:
 * pull by the server's `seq` checkpoint, push with conflict detection and the shared rules
 * (replication-push.ts), and a live Server-Sent Events stream per collection (stream-hub.ts), fed
 * by this process's commits and, on PostgreSQL, by other processes' through LISTEN. Everything is
 * filtered to the API key's workspace; requests and answers follow shared/wire/replication.ts.
 *
 * Documents cross this boundary with RxDB's `_deleted` flag; `_rev`, `_meta` and `_attachments` are
 * the client's and are never stored. The server never rewrites a pushed document. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Clock } from '../shared/context.ts';
import { DomainError } from '../shared/errors.ts';
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
import { checkpointSchema, DEFAULT_PULL_LIMIT, MAX_PULL_LIMIT, MAX_PUSH_ROWS, pullLimitSchema, pullPageText, streamEventData } from '../shared/wire/replication.ts';
import type { Checkpoint, collectionsListSchema, refusalsListSchema } from '../shared/wire/replication.ts';
import { SSE_CONTENT_TYPE, sseEvent } from '../shared/wire/sse.ts';
import type { z } from 'zod';
import type { Authenticated } from './auth.ts';
import type { SqlDatabase } from './db.ts';
import { CHANGES_CHANNEL } from './pg-store.ts';
import type { CommitEvent } from './pg-store.ts';
import type { PgDatabase } from './pg-database.ts';
import { changesSince, changesSinceCounted } from './replication-changes.ts';
import { parsePush, push } from './replication-push.ts';
import { StreamHub } from './stream-hub.ts';
import type { StreamLimits } from './stream-hub.ts';

type Json = Record<string, unknown>;
type CollectionsList = z.input<typeof collectionsListSchema>;
type RefusalsList = z.input<typeof refusalsListSchema>;

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

/** The `checkpoint` query parameter: the JSON of a checkpoint (absent or null: from the start). */
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
  const checkpoint = checkpointSchema.safeParse(parsed);
  if (!checkpoint.success) {
    throw new DomainError('INVALID_INPUT', 'checkpoint must be the JSON checkpoint of a previous pull, like {"seq": 42}.', { field: 'checkpoint' });
  }
  return checkpoint.data;
}

/** The `limit` query parameter: digits only (no signs, exponents or spaces), within the wire's bounds. */
function parseLimit(raw: unknown): number {
  if (raw === undefined || raw === '') return DEFAULT_PULL_LIMIT;
  const limit = pullLimitSchema.safeParse(typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : NaN);
  if (!limit.success) throw new DomainError('INVALID_INPUT', `limit must be an integer from 1 to ${MAX_PULL_LIMIT}.`, { field: 'limit' });
  return limit.data;
}

/** The `count` query parameter of a pull: `true` asks for `remaining` beside the page. */
function parseCount(raw: unknown): boolean {
  if (raw === undefined || raw === '' || raw === 'false') return false;
  if (raw === 'true') return true;
  throw new DomainError('INVALID_INPUT', 'count must be true or false, given once (true: the answer also says how many documents changed after the checkpoint, in `remaining`).', { field: 'count' });
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
function documentLimits(c: CollectionName): CollectionsList['collections'][number]['limits'] {
  return {
    fieldMaxLength: { ...FIELD_LIMITS[c] },
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
    } satisfies CollectionsList);
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
    } satisfies RefusalsList);
  });

  app.get('/replication/:collection/pull', async (req, reply) => {
    const who = await opts.admit(req, reply);
    const c = collectionOf((req.params as { collection: string }).collection);
    checkSchemaVersion(req, c);
    const q = req.query as Record<string, unknown>;
    const checkpoint = parseCheckpoint(q.checkpoint);
    const limit = parseLimit(q.limit);
    const count = parseCount(q.count);
    const after = checkpoint?.seq ?? 0;
    // A count only when asked (once per catch-up): it walks every row the client has still to pull.
    const { page, remaining } = count ? await changesSinceCounted(sql, who.actor.workspaceId, c, after, limit) : { page: await changesSince(sql, who.actor.workspaceId, c, after, limit), remaining: undefined };
    const last = page[page.length - 1];
    // One document a line (pullPageText): a client reads a large page a document at a time.
    const text = pullPageText({ documents: page.map((p) => p.doc), checkpoint: last ? { seq: last.seq } : checkpoint, ...(remaining === undefined ? {} : { remaining }) });
    return reply.type('application/json; charset=utf-8').send(text);
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
      'content-type': SSE_CONTENT_TYPE,
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
      'x-request-id': String(req.id),
    });
    // The client pulls from its own checkpoint: everything before this point reaches it that way.
    res.write(sseEvent(streamEventData('RESYNC')));
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
