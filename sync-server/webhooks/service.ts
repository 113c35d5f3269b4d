/**
 * Webhooks in one sync-server process: the operations' port (store.ts), the outbox's memory of which
 * workspaces have endpoints (outbox.ts, kept current through WEBHOOKS_CHANNEL), and the delivery
 * worker (worker.ts), woken by the same channel when deliveries are queued in any process.
 */
import type { Clock } from '../../shared/context.ts';
import type { WebhookPort } from '../../shared/webhooks/port.ts';
import type { CredentialsKey } from '../credentials.ts';
import type { SqlDatabase, SqlExecutor } from '../db.ts';
import { guardedFetch, privateHostsAllowed } from '../sender-hosts.ts';
import type { SenderHostPolicy } from '../sender-hosts.ts';
import { DELIVER, WEBHOOKS_CHANNEL, outboxFor } from './outbox.ts';
import { webhookPort } from './store.ts';
import { DEFAULT_DELIVERY, createDeliveryWorker } from './worker.ts';
import type { AttemptOutcome, DeliveryOptions, DeliveryWorker } from './worker.ts';

export type WebhookSettings = {
  /** WEBHOOKS_ALLOW_HTTP: plain http:// endpoints are accepted (default: https only). */
  allowHttp?: boolean;
  /** The address guard (default: ALLOW_PRIVATE_SENDER_HOSTS, like server-hosted senders). */
  policy?: SenderHostPolicy;
  /** False: this process queues events but delivers none (another process does). Default true. */
  deliver?: boolean;
  delivery?: Partial<DeliveryOptions>;
  /** Replaces the guarded fetch (tests that count connections). */
  fetch?: typeof fetch;
};

/** The operator's settings from the environment (README "Production"). */
export function webhookSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): WebhookSettings {
  const days = env.WEBHOOK_LOG_RETENTION_DAYS?.trim();
  const retentionDays = days ? Number(days) : undefined;
  if (retentionDays !== undefined && (!Number.isFinite(retentionDays) || retentionDays <= 0)) throw new Error(`WEBHOOK_LOG_RETENTION_DAYS must be a positive number, got ${days}.`);
  return {
    allowHttp: /^(1|true|yes)$/i.test(env.WEBHOOKS_ALLOW_HTTP?.trim() ?? ''),
    policy: { allowPrivate: privateHostsAllowed(env) },
    deliver: !/^(0|false|no)$/i.test(env.WEBHOOKS_DELIVER?.trim() ?? ''),
    ...(retentionDays !== undefined ? { delivery: { retentionDays } } : {}),
  };
}

type Log = { warn(obj: object, msg: string): void; info(obj: object, msg: string): void };

/** The delivery workers running in this process, per database (tests run several servers on one). */
const liveWorkers = new WeakMap<SqlDatabase, Set<string>>();

export type WebhookService = {
  /** The operations' port over one operation's transaction. */
  port(tx: SqlExecutor): WebhookPort;
  readonly worker: DeliveryWorker | null;
  start(): Promise<void>;
  stop(): Promise<void>;
};

export function createWebhookService(deps: {
  sql: SqlDatabase;
  clock: Clock;
  random: () => number;
  key: () => CredentialsKey;
  settings: WebhookSettings;
  log: Log;
  onAttempt?: (outcome: AttemptOutcome) => void;
}): WebhookService {
  const { sql, settings } = deps;
  const policy = settings.policy ?? { allowPrivate: privateHostsAllowed() };
  const options: DeliveryOptions = { ...DEFAULT_DELIVERY, ...settings.delivery };
  if (settings.delivery?.timeoutMs !== undefined && settings.delivery.leaseMs === undefined) options.leaseMs = options.timeoutMs + 5_000;
  const outbox = outboxFor(sql);
  const worker =
    settings.deliver === false
      ? null
      : createDeliveryWorker({
          sql,
          key: deps.key,
          clock: deps.clock,
          random: deps.random,
          fetch: settings.fetch ?? guardedFetch(policy),
          options,
          log: deps.log,
          ...(deps.onAttempt ? { onAttempt: deps.onAttempt } : {}),
        });
  let unlisten: (() => Promise<void>) | null = null;
  let closed = false;
  /** The worker polls only while the database has endpoints: a server without webhooks runs no query for them. */
  const ensureWorker = async (): Promise<void> => {
    if (!worker || closed) return;
    const [row] = await sql.query<{ any: boolean }>('SELECT EXISTS (SELECT 1 FROM webhook_endpoints) AS any');
    if (closed) return;
    if (row?.any) worker.start();
    else await worker.stop();
  };
  const recheck = (): void => {
    ensureWorker().catch((e: unknown) => deps.log.warn({ err: e }, 'looking up webhook endpoints failed'));
  };

  return {
    port: (tx) => webhookPort(tx, { key: deps.key, policy, allowHttp: settings.allowHttp === true, outbox, now: () => deps.clock.now() }),
    worker,
    async start() {
      unlisten = await sql.listen(
        WEBHOOKS_CHANNEL,
        (payload) => {
          if (payload === DELIVER) {
            worker?.start();
            worker?.wake();
          } else if (payload.startsWith('endpoints:')) {
            outbox.invalidate(payload.slice('endpoints:'.length));
            recheck();
          }
        },
        {
          onState: (s) => {
            // Invalidations sent while it was down are lost: forget everything and ask again.
            outbox.setListening(s.state === 'up');
            if (s.state === 'up') recheck();
          },
        },
      );
      outbox.setListening(true);
      const live = liveWorkers.get(sql) ?? new Set<string>();
      liveWorkers.set(sql, live);
      if (worker) live.add(worker.workerId);
      if (sql.kind === 'pglite') {
        // One process owns an embedded database: leases not held by a worker of this process were
        // left by one that died.
        await sql.query('UPDATE webhook_endpoints SET lease_owner = NULL, lease_until = NULL WHERE lease_owner IS NOT NULL AND NOT (lease_owner = ANY ($1::text[]))', [[...live]]);
      }
      await ensureWorker();
    },
    async stop() {
      closed = true;
      await worker?.stop();
      if (worker) liveWorkers.get(sql)?.delete(worker.workerId);
      outbox.setListening(false);
      await unlisten?.();
      unlisten = null;
    },
  };
}
