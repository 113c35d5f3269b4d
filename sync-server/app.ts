/** The sync server: one generic route serves every operation of the registry over HTTP
 * (`GET|POST /<operation name>`), authenticated by API key, each call in one database transaction.
 * Long (~550 lines) because it is the server's assembly: the route, the error model and the wiring
 * of every service (replication, streams, webhooks, maintenance, metrics) into one Fastify app with
 * one start and one ordered shutdown; each service's logic lives in its own file. */
import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import Fastify from 'fastify';
import { Gauge } from 'prom-client';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Clock, Ids, Secrets } from '../shared/context.ts';
import type { ChannelHost } from '../shared/engine/channel.ts';
import { createSandboxNetwork } from '../shared/engine/sandbox.ts';
import { DomainError, isDomainError } from '../shared/errors.ts';
import { timeOrderedIds } from '../shared/ids.ts';
import type { ErrorBody } from '../shared/errors.ts';
import type { OpDef } from '../shared/ops/define.ts';
import { execute, prepareOperation } from '../shared/ops/execute.ts';
import { operations } from '../shared/ops/index.ts';
import type { Store } from '../shared/store.ts';
import { Authenticator } from './auth.ts';
import { loadCredentialsKey, serverCredentials } from './credentials.ts';
import type { CredentialsKey, ServerCredentials } from './credentials.ts';
import type { Authenticated } from './auth.ts';
import { openDatabase } from './db.ts';
import type { OpenOptions, SqlDatabase, SqlExecutor } from './db.ts';
import { checkIdempotencyKey, claim, purgeExpired, record, requestHash } from './idempotency.ts';
import { IdentityBackfill, backfillStatus, identityKeysGate, isKeysPending } from './identity-backfill.ts';
import type { BackfillStatus } from './identity-backfill.ts';
import type { StoredResponse } from './idempotency.ts';
import { Maintenance } from './maintenance.ts';
import { migrate } from './migrate.ts';
import { openApiDocument } from './openapi.ts';
import { replicationOpenApi } from './openapi-replication.ts';
import { PgDatabase } from './pg-database.ts';
import { RequestLogController, loggerOptions, noteRequest } from './logging.ts';
import { createMetrics } from './metrics.ts';
import type { ServerMetrics } from './metrics.ts';
import { parseCorsOrigins, registerOperatorPlugins } from './operator.ts';
import { SharedRateLimiter, rateLimitHeaders } from './rate-limit.ts';
import { registerReplication } from './replication.ts';
import { nodeSecrets } from './secrets.ts';
import { forgetPending, registerOAuthCallback, serverOAuthPort, serverRenewalLock } from './oauth.ts';
import type { ServerOAuthOptions } from './oauth.ts';
import { oauthClientSettingsFromEnv } from '../channels/oauth.ts';
import type { OAuthClientSettings } from '../channels/oauth.ts';
import { guardedFetch, guardedLookup, guardedSmtpSocket, privateHostsAllowed, senderHostCheck } from './sender-hosts.ts';
import { dnsResolver } from '../channels/dns-check.ts';
import type { DnsResolve } from '../channels/dns-check.ts';
import { createSenderVerifier, oauthAuthFor } from '../channels/verify-sender.ts';
import { createOAuthTokens } from '../channels/oauth-tokens.ts';
import type { Sender } from '../shared/model/index.ts';
import { imapCredentialId } from '../shared/ops/credentials.ts';
import { publicUrlSetting, registerUnsubscribe } from './unsubscribe.ts';
import { createWebhookService, webhookSettingsFromEnv } from './webhooks/service.ts';
import type { WebhookSettings } from './webhooks/service.ts';

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
  /** The check of server-hosted email senders (sdrProfiles.create, sdrProfiles.verify): the DNS it
   * asks (default DNS_SERVERS, else the system's) and its timeout; tests point it at loopback. */
  senderCheck?: { resolve?: DnsResolve; timeoutMs?: number };
  /** Operator settings (see README "Settings"); each defaults to its environment variable. */
  operator?: OperatorSettings;
  /** Webhook settings (default: WEBHOOKS_ALLOW_HTTP, ALLOW_PRIVATE_SENDER_HOSTS, WEBHOOKS_DELIVER, WEBHOOK_LOG_RETENTION_DAYS). */
  webhooks?: WebhookSettings;
  /** The registered apps for "Sign in with Google / Microsoft" (default: GOOGLE_OAUTH_CLIENT_ID, ...). */
  oauthClients?: OAuthClientSettings;
  /** The identity keys' backfill after an upgrade (identity-backfill.ts; README "Upgrading a large
   * workspace"): leads per batch (IDENTITY_BACKFILL_BATCH, default 500), a pause after each batch
   * (IDENTITY_BACKFILL_PAUSE_MS, default 0), and how long a request that needs a workspace's keys
   * waits for them before it is answered 503 (IDENTITY_BACKFILL_WAIT_MS, default 8,000). */
  identityBackfill?: { batch?: number; pauseMs?: number; waitMs?: number };
};

/** The operator settings of README "Production"; every one also comes from its environment variable. */
export type OperatorSettings = {
  /** CORS_ORIGINS: browser origins allowed to call the API (a list or ["*"]); default none. */
  corsOrigins?: readonly string[];
  /** COMPRESS_THRESHOLD_BYTES: compress JSON answers from this size (default 1024; 0: off). */
  compressThresholdBytes?: number;
  /** METRICS_TOKEN: bearer token for GET /metrics (default none: open). */
  metricsToken?: string | null;
  /** The metrics registry (the runner host adds its counters to it); default a new one. */
  metrics?: ServerMetrics;
  /** AUTH_FAILURES_PER_MINUTE: failed authentications per client address and minute (default 300). */
  authFailuresPerMinute?: number;
  /** STREAMS_PER_KEY / STREAMS_PER_PROCESS: live replication streams (defaults 32 and 5000). */
  streamsPerKey?: number;
  streamsPerProcess?: number;
  /** STREAM_BUFFER_BYTES: a live stream whose unsent data exceeds this is closed (default 1 MiB). */
  streamBufferBytes?: number;
  /** REFUSALS_RETENTION_DAYS: push refusals kept this long (default 30). */
  refusalsRetentionDays?: number;
  /** TRUST_PROXY: the client address is taken from X-Forwarded-For (behind a load balancer). */
  trustProxy?: boolean | string;
  /** PUBLIC_URL: the server's public https address, for one-click unsubscribe links (unsubscribe.ts). */
  publicUrl?: string | null;
};

export const DEFAULT_BODY_LIMIT = 5 * 1024 * 1024;
export const DEFAULT_RATE_LIMIT = 1200;

type Reply = { status: number; body: unknown; replayed?: boolean };

const OPS = operations as Record<string, OpDef>;
const lookup = (name: string): OpDef | null => (Object.prototype.hasOwnProperty.call(OPS, name) ? (OPS[name] ?? null) : null);

const realClock: Clock = { now: () => new Date() };


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
  const ids = opts.ids ?? timeOrderedIds;
  const random = opts.random ?? Math.random;
  const secrets = opts.secrets ?? nodeSecrets;
  const channels = opts.channels !== undefined ? opts.channels : sandboxHost(clock);
  const credentials = opts.credentials !== undefined ? opts.credentials : serverCredentials(() => loadCredentialsKey({ envKey: process.env.CREDENTIALS_KEY, dataDir: keyDirOf(opts.open) }));
  // sdrProfiles.create warns at once about a server-hosted sender whose host the runner will refuse
  // (the runner's own rule, sender-hosts.ts; ALLOW_PRIVATE_SENDER_HOSTS lifts both).
  const hostPolicy = { allowPrivate: privateHostsAllowed() };
  const senderHosts = senderHostCheck(hostPolicy);
  // Server-hosted mailboxes are checked (login, Sent folder, DNS) through the runner's own rules:
  // the same secrets and the same address guard (channels/verify-sender.ts).
  const checkResolve = opts.senderCheck?.resolve ?? dnsResolver();
  // A mailbox signed in with OAuth is checked with a fresh access token (XOAUTH2): renewed as the
  // runner renews it (token calls through the same guard), the new grant sealed back through `tx`.
  const renewalLock = serverRenewalLock(sql);
  const verifierFor = (tx: SqlExecutor) => createSenderVerifier({
    hostedBy: 'server',
    resolve: checkResolve,
    ...(opts.senderCheck?.timeoutMs !== undefined ? { timeoutMs: opts.senderCheck.timeoutMs } : {}),
    smtpPasswordFor: (s) => credentials?.secretFor(tx, s.workspaceId, s.id) ?? null,
    imapPasswordFor: (s) => credentials?.secretFor(tx, s.workspaceId, imapCredentialId(s.id)) ?? null,
    authFor: oauthAuthFor(createOAuthTokens({
      read: (s) => credentials?.secretFor(tx, s.workspaceId, s.id) ?? null,
      ...(credentials ? { save: (s: Sender, secret: string) => credentials.port(tx).set(s.workspaceId, s.id, secret, { at: clock.now().toISOString(), by: 'system' }) } : {}),
      fetch: guardedFetch(hostPolicy),
      now: () => clock.now().getTime(),
      lock: renewalLock,
    })),
    network: { smtpGetSocket: guardedSmtpSocket(hostPolicy), ...(hostPolicy.allowPrivate ? {} : { imapLookup: guardedLookup(hostPolicy) }) },
  });
  // One key for sealed sender secrets and pending OAuth sign-ins, loaded on first use.
  let credentialsKey: CredentialsKey | null = null;
  const sealingKey = (): CredentialsKey => (credentialsKey ??= loadCredentialsKey({ envKey: process.env.CREDENTIALS_KEY, dataDir: keyDirOf(opts.open) }));
  let oauth: ServerOAuthOptions | null = null;
  const bodyLimit = opts.bodyLimit ?? DEFAULT_BODY_LIMIT;
  const operator = opts.operator ?? {};
  const metrics = operator.metrics ?? createMetrics();
  const limiter = new SharedRateLimiter(opts.rateLimitPerMinute ?? envNumber('RATE_LIMIT_PER_MINUTE') ?? DEFAULT_RATE_LIMIT, () => clock.now().getTime(), sql, {
    onError: (e) => app.log.warn({ err: e }, 'sharing the rate limit through the database failed'),
  });
  const auth = new Authenticator(db, clock, opts.authCacheMs ?? 2_000, operator.authFailuresPerMinute ?? envNumber('AUTH_FAILURES_PER_MINUTE'));
  const retries = opts.conflictRetries ?? 3;
  const keysGate = identityKeysGate(sql);
  const keysWaitMs = opts.identityBackfill?.waitMs ?? envCount('IDENTITY_BACKFILL_WAIT_MS') ?? 8_000;

  const app = Fastify({
    logger: loggerOptions(opts.logLevel ?? 'info', opts.logStream),
    logController: new RequestLogController(),
    trustProxy: operator.trustProxy ?? envTrustProxy(),
    bodyLimit,
    genReqId: (req) => {
      const h = req.headers['x-request-id'];
      return typeof h === 'string' && /^[\w.:-]{1,100}$/.test(h) ? h : randomUUID();
    },
    // Keep-alive connections that are idle are closed on shutdown; busy ones finish first.
    forceCloseConnections: 'idle',
    // Errors raised before a route runs (bad URL encoding, malformed HTTP) get the contract's body.
    frameworkErrors: frameworkErrorHandler,
    clientErrorHandler,
  });

  await registerOperatorPlugins(app, {
    corsOrigins: operator.corsOrigins ?? parseCorsOrigins(process.env.CORS_ORIGINS),
    compressThresholdBytes: operator.compressThresholdBytes ?? envCount('COMPRESS_THRESHOLD_BYTES') ?? 1024,
    metrics,
    metricsToken: operator.metricsToken !== undefined ? operator.metricsToken : process.env.METRICS_TOKEN?.trim() || null,
    knownOperation: (name) => lookup(name) !== null,
  });

  const maintenance = new Maintenance(sql, {
    onError: (e) => app.log.warn({ err: e }, 'database maintenance failed'),
    now: () => clock.now(),
    refusalsRetentionDays: operator.refusalsRetentionDays ?? envNumber('REFUSALS_RETENTION_DAYS'),
  });
  const offMaintenance = db.onCommit((e) => maintenance.afterCommit(e.rows));
  await maintenance.start();
  maintenance.sweep().catch((e: unknown) => app.log.warn({ err: e }, 'sweeping old refusals and rate-limit rows failed'));
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
  // An answer whose headers left just before shutdown began still says keep-alive, and the server
  // closes idle connections only once, when close() starts: a connection that turns idle after that
  // would hold close() until the client hangs up (undici keeps one for over a minute) and the process
  // would miss its stop deadline. Close it as soon as its answer is out.
  app.addHook('onResponse', async () => {
    if (closing) setImmediate(() => app.server.closeIdleConnections());
  });
  app.addHook('onClose', async () => {
    clearInterval(purge);
    offMaintenance();
    await maintenance.stop();
    await limiter.stop();
    await auth.settle();
    if (ownsDatabase) await sql.close();
  });

  installErrorBoundary(app, bodyLimit);

  let openapi: Record<string, unknown> | null = null;
  app.get('/openapi.json', async (_req, reply) => {
    openapi ??= openApiDocument({ extra: replicationOpenApi() });
    return reply.send(openapi);
  });
  app.get('/healthz', async (_req, reply) => {
    try {
      await sql.query('SELECT 1');
      return reply.send({ ok: true, database: sql.kind, identityKeys: await keysStatus() });
    } catch (e) {
      app.log.error({ err: e }, 'health check failed');
      const err = new DomainError('UNAVAILABLE', 'The database does not answer.', { retryAfterSeconds: RETRY_AFTER_UNAVAILABLE_SECONDS });
      return reply.code(err.status).header('Retry-After', String(RETRY_AFTER_UNAVAILABLE_SECONDS)).send(err.toJSON());
    }
  });

  /** The identity keys' backfill as /healthz and /metrics show it: its progress while it runs, else
   * `{state: 'done'}`, read from nothing once this process knows it is done. */
  async function keysStatus(): Promise<BackfillStatus | { state: 'done' }> {
    if (keysGate.finished) return { state: 'done' };
    const status = await backfillStatus(sql);
    if (status.state !== 'done') return status;
    // Settles the gate too: no look-up asks again.
    await keysGate.check(sql, '');
    return { state: 'done' };
  }

  /** Authenticates and applies the key's rate limit; every authenticated route starts here. */
  async function admit(req: FastifyRequest, reply: FastifyReply): Promise<Authenticated> {
    let who: Authenticated;
    try {
      who = await auth.authenticate(req.headers.authorization, req.ip);
    } catch (e) {
      if (isDomainError(e) && e.code === 'RATE_LIMITED') {
        metrics.refused.inc({ reason: 'auth_failures' });
        void reply.header('Retry-After', String(e.details.retryAfterSeconds));
      }
      throw e;
    }
    noteRequest(req, { workspaceId: who.actor.workspaceId, keyId: who.keyId });
    const decision = await limiter.take(who.keyId);
    void reply.headers(rateLimitHeaders(decision));
    if (!decision.allowed) {
      metrics.refused.inc({ reason: 'rate_limit' });
      throw new DomainError('RATE_LIMITED', `Rate limit of ${limiter.perMinute} requests per minute reached for this API key; retry in ${decision.retryAfterSeconds} s.`, {
        retryAfterSeconds: decision.retryAfterSeconds,
        limitPerMinute: limiter.perMinute,
      });
    }
    return who;
  }

  async function run(op: OpDef, input: unknown, who: Authenticated, idem: { key: string; hash: string } | null): Promise<Reply> {
    // Network work (a mailbox's logins) happens before the transaction: it must not hold the
    // workspace's writer lock while a remote server answers, nor run again on a CONFLICT retry.
    // With an idempotency key it runs inside, after the key's claim, so a replay answers what the
    // first call answered rather than checking again.
    const pre = op.prepare && !idem
      ? await prepareOperation(op.name, input, {
        actor: who.actor, reader: db.forWorkspace(who.actor.workspaceId), clock, ids, random, secrets, channels, senderHosts, senderVerifier: verifierFor(sql),
        // An OAuth completion exchanges its code here and takes its pending sign-in at once (spent either way).
        oauth: oauth && credentials ? serverOAuthPort(sql, oauth) : null,
      })
      : null;
    const call = async (store: Store, tx: SqlExecutor): Promise<Reply> => {
      if (idem) {
        const replay: StoredResponse | null = await claim(tx, who.keyId, idem.key, idem.hash, clock.now());
        if (replay) return { ...replay, replayed: true };
      }
      const body = await execute(op.name, input, {
        actor: who.actor, store, clock, ids, random, secrets, channels, credentials: credentials?.port(tx) ?? null, senderHosts, senderVerifier: verifierFor(tx), webhooks: webhooks.port(tx),
        oauth: oauth && credentials ? serverOAuthPort(tx, oauth) : null,
        ...(pre ? { prepared: pre.prepared } : {}),
      });
      if (idem) await record(tx, who.keyId, idem.key, { status: 200, body });
      return { status: 200, body };
    };
    let waited = false;
    for (let attempt = 0; ; attempt++) {
      try {
        // Without an idempotency key (whose record is written beside the store) a call may share a
        // transaction with other writers of its workspace (group commit, PgDatabase.withStore).
        // OAuth sign-ins are never batched (group commit may run a call again): begin calls the
        // provider and writes its pending row through `tx`. complete exchanges its code in its
        // prepare step, before the transaction, and its handler only writes what that found; it stays
        // out of group commit anyway, since with an idempotency key its prepare runs inside.
        return op.mutates || idem ? await db.withStore(who.actor.workspaceId, call, { batch: !idem && !op.name.startsWith('sdrProfiles.oauth.') }) : await db.withReadStore(who.actor.workspaceId, call);
      } catch (e) {
        // A concurrent writer changed what this call read: run it again on the new state.
        if (isDomainError(e) && e.code === 'CONFLICT' && attempt < retries) continue;
        // It looked a person up by identity key in a workspace whose leads are still getting theirs
        // after an upgrade: the backfill does this workspace next; once done in time, run it again.
        if (isKeysPending(e) && !waited) {
          waited = true;
          if (keysWaitMs > 0 && (await keysGate.waitFor(sql, who.actor.workspaceId, keysWaitMs))) continue;
        }
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
    streams: {
      perKey: operator.streamsPerKey ?? envNumber('STREAMS_PER_KEY') ?? 32,
      perProcess: operator.streamsPerProcess ?? envNumber('STREAMS_PER_PROCESS') ?? 5000,
      bufferBytes: operator.streamBufferBytes ?? envNumber('STREAM_BUFFER_BYTES') ?? 1024 * 1024,
      metrics,
    },
    onChange: (e) => {
      // Keys and members changed in another server process too: look them up again.
      if (e.collections.includes('apiKeys') || e.collections.includes('members')) auth.invalidate();
    },
    // Another process's revocation may have been among the notifications missed.
    onGap: () => auth.invalidate(),
  });
  // Live streams never end by themselves: end them first, or close() would wait for them.
  app.addHook('preClose', async () => {
    await replication.close();
  });

  // Webhooks: endpoints (webhooks.* operations), and delivery of the events every commit raises.
  let webhookKey: CredentialsKey | null = null;
  const webhooks = createWebhookService({
    sql, clock, random,
    key: () => (webhookKey ??= loadCredentialsKey({ envKey: process.env.CREDENTIALS_KEY, dataDir: keyDirOf(opts.open) })),
    settings: opts.webhooks ?? webhookSettingsFromEnv(),
    log: app.log,
    onAttempt: (outcome) => metrics.webhookDeliveries.inc({ outcome }),
  });
  app.addHook('preClose', async () => {
    await webhooks.stop();
  });
  await webhooks.start();

  // Leads written before the identity keys get theirs in the background, while the server serves
  // (identity-backfill.ts); look-ups by key wait for their workspace (run, above).
  const backfill = new IdentityBackfill(sql, {
    batch: opts.identityBackfill?.batch ?? envNumber('IDENTITY_BACKFILL_BATCH'),
    pauseMs: opts.identityBackfill?.pauseMs ?? envCount('IDENTITY_BACKFILL_PAUSE_MS'),
    log: app.log,
  });
  app.addHook('preClose', async () => {
    await backfill.stop();
  });
  await backfill.start();
  await keysStatus();
  registerBackfillMetrics(metrics, keysStatus);

  // One-click unsubscribe without an API key (RFC 8058), and each workspace's publicUrl kept.
  const publicUrl = publicUrlSetting(operator.publicUrl !== undefined ? operator.publicUrl : process.env.PUBLIC_URL);
  if (publicUrl.problem) app.log.warn(publicUrl.problem);
  await registerUnsubscribe(app, { db, sql, clock, ids, publicUrl: publicUrl.url, log: app.log });

  // Mailboxes signed in with OAuth for the senders this server's runner hosts (sdrProfiles.oauth.*).
  // Discovery and token calls go out like a sender's connections: not into the server's own network.
  oauth = { key: sealingKey, settings: opts.oauthClients ?? oauthClientSettingsFromEnv(), clock, publicUrl: publicUrl.url, fetch: guardedFetch({ allowPrivate: privateHostsAllowed() }) };
  registerOAuthCallback(app, { db, sql, clock, ids, random, secrets, credentials, oauth, senderHosts, senderVerifierFor: verifierFor });

  app.route({
    method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
    url: '/:name',
    handler: async (req, reply) => {
      const { name } = req.params as { name: string };
      const op = lookup(name);
      if (op) noteRequest(req, { operation: op.name });
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
      const out = await run(op, input, who, idem).catch(async (e: unknown) => {
        // A failed completion's spent state must not be presented again (sync-server/oauth.ts).
        if (op.name === 'sdrProfiles.oauth.complete') await forgetPending(sql, who.actor.workspaceId, (input as { state?: unknown }).state).catch(() => undefined);
        throw e;
      });
      if (out.replayed) void reply.header('Idempotent-Replayed', 'true');
      return reply.code(out.status).send(out.body);
    },
  });

  return app;
}

/** The backfill's progress in /metrics (every process's share, read from the database when scraped). */
function registerBackfillMetrics(metrics: ServerMetrics, status: () => Promise<BackfillStatus | { state: 'done' }>): void {
  const name = 'outreach_identity_keys_backfill_leads';
  if (metrics.registry.getSingleMetric(name)) return;
  new Gauge({
    name,
    help: 'Leads the identity keys backfill visits after an upgrade (state="total") and has visited (state="done"); 0 when there is none.',
    labelNames: ['state'] as const,
    registers: [metrics.registry],
    async collect() {
      // A scrape while the database is away shows the last values (the listener gauge says why).
      const s = await status().catch(() => null);
      if (!s) return;
      this.set({ state: 'total' }, 'leadsTotal' in s ? s.leadsTotal : 0);
      this.set({ state: 'done' }, 'leadsDone' in s ? s.leadsDone : 0);
    },
  });
  new Gauge({
    name: 'outreach_identity_keys_backfill_workspaces_left',
    help: 'Workspaces whose leads do not all have their identity keys yet (look-ups by key there answer 503 with Retry-After).',
    registers: [metrics.registry],
    async collect() {
      const s = await status().catch(() => null);
      if (!s) return;
      this.set('workspacesLeft' in s ? s.workspacesLeft : 0);
    },
  });
}

/**
 * The error boundary: every answer that is not a success has the contract's body
 * `{"error": {"code", "message", "details"}}` and a 4xx status when the request was at fault, whatever
 * refused it (a handler, the rules, Fastify's body parsing, the router, Node's HTTP parser, or the
 * database refusing a value). Bad input never reaches anything recursive unbounded: a JSON body's
 * nesting is checked on its text before it is parsed.
 */
function installErrorBoundary(app: FastifyInstance, bodyLimit: number): void {
  // JSON bodies: an empty body is an empty object; prototype keys are dropped.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.trim() === '') return done(null, undefined);
    if (jsonNestingTooDeep(text, MAX_BODY_DEPTH)) {
      return done(new DomainError('INVALID_INPUT', `The body is nested more than ${MAX_BODY_DEPTH} levels deep; no request of this API needs that.`, { maxDepth: MAX_BODY_DEPTH }), undefined);
    }
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
    noteRequest(req, { code: domain.code });
    if (domain.code === 'INTERNAL') req.log.error({ err }, 'request failed');
    else if (domain.code === 'UNAVAILABLE') {
      if (isKeysPending(domain)) req.log.info({ details: domain.details }, "request refused for now: the workspace's identity keys are being computed");
      else req.log.warn({ err: { message: err.message, code: 'code' in err ? err.code : undefined } }, 'request failed: the database is unavailable');
      void reply.header('Retry-After', String(domain.details.retryAfterSeconds ?? RETRY_AFTER_UNAVAILABLE_SECONDS));
    } else if (domain.status >= 500) req.log.warn({ err }, 'request failed');
    else if (isDatabaseError(err)) req.log.warn({ err, sqlState: err.code }, 'bad input reached the database');
    void reply.code(domain.status).send(domain.toJSON());
  });
  app.setNotFoundHandler((req, reply) => {
    const name = req.url.split('?')[0]?.replace(/^\//, '') ?? '';
    const e = new DomainError('UNKNOWN_OPERATION', `There is no operation named ${name}. GET /openapi.json lists every operation.`, { name });
    noteRequest(req, { code: e.code });
    void reply.code(e.status).send(e.toJSON());
  });
}

/** Deepest JSON nesting of a request body. Far above any operation input or replicated document (the
 * operation guard and the document limits are tighter and say so), and low enough that nothing
 * recursive downstream (request hashing, document comparison, schema validation) can run out of stack. */
export const MAX_BODY_DEPTH = 64;

/** Whether JSON text nests objects and arrays deeper than `max`, in one pass over the text. A
 * string is passed over by the runtime's search for its closing quote (most of a body's characters
 * are in strings: an import's cells), not character by character. */
export function jsonNestingTooDeep(text: string, max: number): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // The string ends at the next quote after an even run of backslashes (none included).
      for (;;) {
        const q = text.indexOf('"', i + 1);
        if (q < 0) return false;
        let b = q - 1;
        while (text.charCodeAt(b) === 0x5c) b--;
        i = q;
        if ((q - 1 - b) % 2 === 0) break;
      }
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}

type DatabaseError = Error & { code: string };

/** An error of PostgreSQL or PGlite (they carry a five-character SQLSTATE and a severity). */
function isDatabaseError(err: unknown): err is DatabaseError {
  return err instanceof Error && 'severity' in err && 'code' in err && typeof err.code === 'string' && /^[0-9A-Z]{5}$/.test(err.code);
}

/** SQLSTATEs that mean the request carried a value the database cannot hold: data exceptions (class
 * 22: NUL in text, bad Unicode, out-of-range dates and numbers) and an index entry too large (54000).
 * The boundaries refuse these values first; this keeps a gap from becoming a 500, and the warning
 * 'bad input reached the database' in the log shows the gap (the fuzz suite fails on it). */
function databaseRefusal(err: DatabaseError): DomainError | null {
  if (!err.code.startsWith('22') && err.code !== '54000') return null;
  return new DomainError('INVALID_INPUT', 'The request holds a value the database cannot store (too long, out of range, or not valid text).', { sqlState: err.code });
}

/** Seconds a client is asked to wait when the database is unreachable: a restart takes a few. */
export const RETRY_AFTER_UNAVAILABLE_SECONDS = 5;

/** SQLSTATEs of a database that is going away or not there yet: connection exceptions (class 08),
 * admin_shutdown (57P01: a restart, pg_terminate_backend), crash_shutdown (57P02),
 * cannot_connect_now (57P03: starting up or in recovery), too_many_connections (53300), and
 * read_only_sql_transaction (25006: a write reached a standby during a failover). */
const UNAVAILABLE_SQLSTATES = /^(08...|57P0[123]|53300|25006)$/;
/** Socket errors of a connection to the database that failed or broke. */
const UNAVAILABLE_SOCKET_ERRORS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ENOTFOUND']);
/** pg's own errors for a connection that ended or could not be made in time. */
const UNAVAILABLE_PG_MESSAGES = /^(Connection terminated|Client has encountered a connection error|timeout exceeded when trying to connect|Query read timeout)/;

/** Whether `err` says the database cannot be reached right now (rather than that the request was
 * wrong or the server is broken): answered 503 UNAVAILABLE with Retry-After, never 500. */
export function isDatabaseUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = 'code' in err && typeof err.code === 'string' ? err.code : '';
  if (isDatabaseError(err)) return UNAVAILABLE_SQLSTATES.test(code);
  if (UNAVAILABLE_SOCKET_ERRORS.has(code)) return true;
  // Node reports a refused connection to every address of a host as one AggregateError.
  if (err instanceof AggregateError && err.errors.some(isDatabaseUnavailable)) return true;
  return UNAVAILABLE_PG_MESSAGES.test(err.message);
}

function toDomainError(err: FastifyError | DomainError | Error, bodyLimit: number, requestId: string): DomainError {
  if (isDomainError(err)) {
    if (err.code !== 'INTERNAL') return err;
    return new DomainError('INTERNAL', err.message, { ...err.details, requestId });
  }
  if (isDatabaseError(err)) {
    const refusal = databaseRefusal(err);
    if (refusal) return refusal;
  }
  if (isDatabaseUnavailable(err)) {
    return new DomainError('UNAVAILABLE', `The database cannot be reached right now (a restart or failover); retry in ${RETRY_AFTER_UNAVAILABLE_SECONDS} s.`, {
      retryAfterSeconds: RETRY_AFTER_UNAVAILABLE_SECONDS,
      requestId,
    });
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

/** Errors the router raises before any route runs: a path that is not valid percent-encoding
 * (`GET /%ff`) or a path segment longer than any operation name. */
function frameworkErrorHandler(err: FastifyError, req: FastifyRequest, reply: FastifyReply): void {
  const e =
    err.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? new DomainError('UNKNOWN_OPERATION', 'There is no operation at this path: the name is longer than any operation name. GET /openapi.json lists every operation.')
      : new DomainError('INVALID_INPUT', err.code === 'FST_ERR_BAD_URL' ? 'The URL is not valid: its path has a malformed percent-encoding (like %ff).' : err.message, { code: err.code });
  noteRequest(req, { code: e.code });
  void reply.code(e.status).send(e.toJSON());
}

/** Requests Node's HTTP parser refuses before Fastify sees them (malformed HTTP, headers over the
 * 16 KB limit, a request that took too long to arrive): the contract's body, then the connection
 * closes, as Node's own answer does. */
function clientErrorHandler(this: FastifyInstance, err: Error & { code?: string }, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, message] =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'The request headers are larger than this server accepts (16 KB in all); send a shorter URL or fewer headers.']
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'The request did not arrive in time; send it again.']
        : [400, 'The request is not valid HTTP/1.1; it was not read.'];
  this.log.debug({ err }, 'refused a malformed request');
  const body = JSON.stringify({ error: { code: 'INVALID_INPUT', message, details: { reason: err.code ?? 'unknown' } } } satisfies ErrorBody);
  // Only when no answer is half-sent on this connection (Node's own rule: `_httpMessage` is the
  // response in flight, if any).
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
  if (socket.writable && !inFlight?.headersSent) {
    socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Bad Request'}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  } else socket.destroy();
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

/** A count that may be 0 (COMPRESS_THRESHOLD_BYTES=0 turns compression off). */
function envCount(name: string): number | undefined {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a whole number, got ${raw}.`);
  return n;
}

/** TRUST_PROXY: 1/true (trust X-Forwarded-For), or the proxies' addresses/CIDRs, comma-separated. */
function envTrustProxy(): boolean | string {
  const raw = process.env.TRUST_PROXY?.trim() ?? '';
  if (raw === '' || /^(0|false|no)$/i.test(raw)) return false;
  if (/^(1|true|yes)$/i.test(raw)) return true;
  return raw;
}

function envNumber(name: string): number | undefined {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return undefined;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, got ${raw}.`);
  return n;
}

