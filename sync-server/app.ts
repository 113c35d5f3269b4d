/** The sync server: one generic route serves every operation of the registry over HTTP
 * (`GET|POST /<operation name>`), authenticated by API key, each call in one database transaction. */
import { randomUUID } from 'node:crypto';
import Fastify from 'fastify';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Clock, Ids, Secrets } from '../shared/context.ts';
import type { ChannelHost } from '../shared/engine/channel.ts';
import { createSandboxNetwork } from '../shared/engine/sandbox.ts';
import { DomainError, isDomainError } from '../shared/errors.ts';
import type { ErrorBody } from '../shared/errors.ts';
import type { OpDef } from '../shared/ops/define.ts';
import { execute } from '../shared/ops/execute.ts';
import { operations } from '../shared/ops/index.ts';
import type { Store } from '../shared/store.ts';
import { Authenticator } from './auth.ts';
import { loadCredentialsKey, serverCredentials } from './credentials.ts';
import type { ServerCredentials } from './credentials.ts';
import type { Authenticated } from './auth.ts';
import { openDatabase } from './db.ts';
import type { OpenOptions, SqlDatabase, SqlExecutor } from './db.ts';
import { checkIdempotencyKey, claim, purgeExpired, record, requestHash } from './idempotency.ts';
import type { StoredResponse } from './idempotency.ts';
import { Maintenance } from './maintenance.ts';
import { migrate } from './migrate.ts';
import { openApiDocument } from './openapi.ts';
import { PgDatabase } from './pg-store.ts';
import { RateLimiter } from './rate-limit.ts';
import { registerReplication, replicationOpenApi } from './replication.ts';
import { nodeSecrets } from './secrets.ts';

export type ServerOptions = {
  /** An open database; the caller keeps ownership (it is not closed with the server). */
  database?: SqlDatabase;
  /** Otherwise the server opens (and on close, closes) this one: Postgres or PGlite. */
  open?: OpenOptions;
  clock?: Clock;
  ids?: Ids;
  random?: () => number;
  secrets?: Secrets;
  /** Channels for operations that reach a network; default: the sandbox network for sandbox senders. */
  channels?: ChannelHost | null;
  /** Requests per minute per API key (default RATE_LIMIT_PER_MINUTE or 1200). */
  rateLimitPerMinute?: number;
  /** Largest accepted request body in bytes (default 5 MiB). */
  bodyLimit?: number;
  /** pino level (default info); 'silent' for none. */
  logLevel?: string;
  /** Where log lines go (default stdout). */
  logStream?: { write(line: string): void };
  /** How long an API key lookup is reused (default 2 s); local key changes apply at once. */
  authCacheMs?: number;
  /** CONFLICT retries of a call when a concurrent writer won (default 3). */
  conflictRetries?: number;
  /** Keep-alive comments on idle replication streams (default 15 s). */
  streamHeartbeatMs?: number;
  /** Where sender secrets are kept (default: sender_credentials under CREDENTIALS_KEY or the key
   * file of the data folder, read on first use); null: this server keeps none. */
  credentials?: ServerCredentials | null;
};

export const DEFAULT_BODY_LIMIT = 5 * 1024 * 1024;
export const DEFAULT_RATE_LIMIT = 1200;

type Reply = { status: number; body: unknown; replayed?: boolean };

const OPS = operations as Record<string, OpDef>;
const lookup = (name: string): OpDef | null => (Object.prototype.hasOwnProperty.call(OPS, name) ? (OPS[name] ?? null) : null);

const realClock: Clock = { now: () => new Date() };
const realIds: Ids = { uuid: () => randomUUID() };

/** Builds the Fastify app (not listening yet). Migrations run before it resolves. */
export async function buildServer(opts: ServerOptions = {}): Promise<FastifyInstance> {
  const sql = opts.database ?? (await openDatabase(opts.open ?? {}));
  const ownsDatabase = !opts.database;
  try {
    await migrate(sql);
  } catch (e) {
    if (ownsDatabase) await sql.close().catch(() => undefined);
    throw e;
  }
  const db = new PgDatabase(sql);
  const clock = opts.clock ?? realClock;
  const ids = opts.ids ?? realIds;
  const random = opts.random ?? Math.random;
  const secrets = opts.secrets ?? nodeSecrets;
  const channels = opts.channels !== undefined ? opts.channels : sandboxHost(clock);
  const credentials = opts.credentials !== undefined ? opts.credentials : serverCredentials(() => loadCredentialsKey({ envKey: process.env.CREDENTIALS_KEY, dataDir: keyDirOf(opts.open) }));
  const bodyLimit = opts.bodyLimit ?? DEFAULT_BODY_LIMIT;
  const limiter = new RateLimiter(opts.rateLimitPerMinute ?? envNumber('RATE_LIMIT_PER_MINUTE') ?? DEFAULT_RATE_LIMIT, () => clock.now().getTime());
  const auth = new Authenticator(db, clock, opts.authCacheMs ?? 2_000);
  const retries = opts.conflictRetries ?? 3;

  const app = Fastify({
    logger: {
      level: opts.logLevel ?? 'info',
      ...(opts.logStream ? { stream: opts.logStream } : {}),
    },
    bodyLimit,
    genReqId: (req) => {
      const h = req.headers['x-request-id'];
      return typeof h === 'string' && /^[\w.:-]{1,100}$/.test(h) ? h : randomUUID();
    },
    // Keep-alive connections that are idle are closed on shutdown; busy ones finish first.
    forceCloseConnections: 'idle',
  });

  const maintenance = new Maintenance(sql, { onError: (e) => app.log.warn({ err: e }, 'database maintenance failed') });
  const offMaintenance = db.onCommit((e) => maintenance.noteChanges(e.rows));
  await maintenance.run();
  const purge = setInterval(() => {
    purgeExpired(sql, clock.now()).catch((e: unknown) => app.log.warn({ err: e }, 'purging idempotency keys failed'));
  }, 3_600_000);
  purge.unref();

  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onSend', async (req, reply) => {
    reply.header('x-request-id', req.id);
    // Answers that finish during shutdown end their keep-alive connection, so close() need not wait
    // for clients to hang up.
    if (closing) reply.header('connection', 'close');
  });
  app.addHook('onClose', async () => {
    clearInterval(purge);
    offMaintenance();
    await maintenance.stop();
    await auth.settle();
    if (ownsDatabase) await sql.close();
  });

  // JSON bodies: an empty body is an empty object; prototype keys are dropped.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.trim() === '') return done(null, undefined);
    try {
      const parsed: unknown = /"(__proto__|constructor)"/.test(text)
        ? JSON.parse(text, (k, v: unknown) => (k === '__proto__' || k === 'constructor' ? undefined : v))
        : JSON.parse(text);
      done(null, parsed);
    } catch (e) {
      done(new DomainError('INVALID_INPUT', `The body is not valid JSON: ${e instanceof Error ? e.message : String(e)}.`), undefined);
    }
  });

  app.setErrorHandler((err: FastifyError | DomainError | Error, req, reply) => {
    const domain = toDomainError(err, bodyLimit, String(req.id));
    if (domain.code === 'INTERNAL') req.log.error({ err }, 'request failed');
    else if (domain.status >= 500) req.log.warn({ err }, 'request failed');
    void reply.code(domain.status).send(domain.toJSON());
  });
  app.setNotFoundHandler((req, reply) => {
    const name = req.url.split('?')[0]?.replace(/^\//, '') ?? '';
    const e = new DomainError('UNKNOWN_OPERATION', `There is no operation named ${name}. GET /openapi.json lists every operation.`, { name });
    void reply.code(e.status).send(e.toJSON());
  });

  let openapi: Record<string, unknown> | null = null;
  app.get('/openapi.json', async (_req, reply) => {
    openapi ??= openApiDocument({ extra: replicationOpenApi() });
    return reply.send(openapi);
  });
  app.get('/healthz', async (_req, reply) => {
    try {
      await sql.query('SELECT 1');
      return reply.send({ ok: true, database: sql.kind });
    } catch (e) {
      app.log.error({ err: e }, 'health check failed');
      return reply.code(503).send({ error: { code: 'INTERNAL', message: 'The database does not answer.', details: {} } } satisfies ErrorBody);
    }
  });

  /** Authenticates and applies the key's rate limit; every authenticated route starts here. */
  async function admit(req: FastifyRequest, reply: FastifyReply): Promise<Authenticated> {
    const who = await auth.authenticate(req.headers.authorization);
    const decision = limiter.take(who.keyId);
    if (!decision.allowed) {
      void reply.header('Retry-After', String(decision.retryAfterSeconds));
      throw new DomainError('RATE_LIMITED', `Rate limit of ${limiter.perMinute} requests per minute reached for this API key; retry in ${decision.retryAfterSeconds} s.`, {
        retryAfterSeconds: decision.retryAfterSeconds,
        limitPerMinute: limiter.perMinute,
      });
    }
    return who;
  }

  async function run(op: OpDef, input: unknown, who: Authenticated, idem: { key: string; hash: string } | null): Promise<Reply> {
    const call = async (store: Store, tx: SqlExecutor): Promise<Reply> => {
      if (idem) {
        const replay: StoredResponse | null = await claim(tx, who.keyId, idem.key, idem.hash, clock.now());
        if (replay) return { ...replay, replayed: true };
      }
      const body = await execute(op.name, input, { actor: who.actor, store, clock, ids, random, secrets, channels, credentials: credentials?.port(tx) ?? null });
      if (idem) await record(tx, who.keyId, idem.key, { status: 200, body });
      return { status: 200, body };
    };
    for (let attempt = 0; ; attempt++) {
      try {
        return op.mutates || idem ? await db.withStore(who.actor.workspaceId, call) : await db.withReadStore(who.actor.workspaceId, call);
      } catch (e) {
        // A concurrent writer changed what this call read: run it again on the new state.
        if (isDomainError(e) && e.code === 'CONFLICT' && attempt < retries) continue;
        throw e;
      }
    }
  }

  const replication = await registerReplication(app, {
    db,
    sql,
    clock,
    admit,
    heartbeatMs: opts.streamHeartbeatMs,
    log: app.log,
    onChange: (e) => {
      // Keys and members changed in another server process too: look them up again.
      if (e.collections.includes('apiKeys') || e.collections.includes('members')) auth.invalidate();
    },
  });
  // Live streams never end by themselves: end them first, or close() would wait for them.
  app.addHook('preClose', async () => {
    await replication.close();
  });

  app.route({
    method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
    url: '/:name',
    handler: async (req, reply) => {
      const { name } = req.params as { name: string };
      const op = lookup(name);
      if (!op) throw new DomainError('UNKNOWN_OPERATION', `There is no operation named ${name}. GET /openapi.json lists every operation.`, { name });
      if (req.method !== op.method) {
        void reply.header('Allow', op.method);
        throw new DomainError('METHOD_NOT_ALLOWED', `${op.name} is called with ${op.method}, not ${req.method}.`, { allow: op.method });
      }
      const who = await admit(req, reply);
      let input: unknown;
      let idem: { key: string; hash: string } | null = null;
      if (op.method === 'GET') {
        input = { ...(req.query as Record<string, unknown>) };
      } else {
        const body = req.body ?? {};
        if (body === null || typeof body !== 'object' || Array.isArray(body)) {
          throw new DomainError('INVALID_INPUT', `The body of ${op.name} must be a JSON object.`);
        }
        input = body;
        const key = req.headers['idempotency-key'];
        if (typeof key === 'string') {
          checkIdempotencyKey(key);
          idem = { key, hash: requestHash(op.name, body) };
        }
      }
      const out = await run(op, input, who, idem);
      if (out.replayed) void reply.header('Idempotent-Replayed', 'true');
      return reply.code(out.status).send(out.body);
    },
  });

  return app;
}

function toDomainError(err: FastifyError | DomainError | Error, bodyLimit: number, requestId: string): DomainError {
  if (isDomainError(err)) {
    if (err.code !== 'INTERNAL') return err;
    return new DomainError('INTERNAL', err.message, { ...err.details, requestId });
  }
  const code = 'code' in err && typeof err.code === 'string' ? err.code : '';
  const status = 'statusCode' in err && typeof err.statusCode === 'number' ? err.statusCode : 500;
  if (code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    return new DomainError('PAYLOAD_TOO_LARGE', `The request body is larger than ${bodyLimit} bytes, the most this server accepts; send fewer items per request.`, { limitBytes: bodyLimit });
  }
  if (code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return new DomainError('INVALID_INPUT', 'Send the body as JSON with the header Content-Type: application/json.', { header: 'Content-Type' });
  }
  if (status >= 400 && status < 500) return new DomainError('INVALID_INPUT', err.message, { code });
  return new DomainError('INTERNAL', `Something went wrong on the server; quote request id ${requestId} when reporting it.`, { requestId });
}

/** Where the generated credentials key lives: the PGlite data folder, or DATA_DIR beside PostgreSQL. */
function keyDirOf(open: OpenOptions | undefined): string {
  if (open?.dataDir && !open.databaseUrl) return open.dataDir;
  return process.env.DATA_DIR?.trim() || './data';
}

function sandboxHost(clock: Clock): ChannelHost {
  const network = createSandboxNetwork({ seed: 'sync-server', clock });
  return { channelFor: (sender) => (sender.channel === 'sandbox' ? network : null) };
}

function envNumber(name: string): number | undefined {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return undefined;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, got ${raw}.`);
  return n;
}

