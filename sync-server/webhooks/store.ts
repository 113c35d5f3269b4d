/**
 * The WebhookPort of shared/webhooks/port.ts on the sync server's tables (migration 015): one per
 * operation, over that operation's transaction, so a refused call changes nothing. Every statement
 * names the workspace: another workspace's endpoint or delivery is simply not found.
 */
import { randomBytes } from 'node:crypto';
import { DomainError } from '../../shared/errors.ts';
import type { WebhookEventType } from '../../shared/webhooks/events.ts';
import type { DeliveryAttemptView, DeliveryStatus, DeliveryView, WebhookEndpointView, WebhookPort } from '../../shared/webhooks/port.ts';
import { openSecret, sealSecret } from '../credentials.ts';
import type { CredentialsKey } from '../credentials.ts';
import type { SqlExecutor } from '../db.ts';
import type { SenderHostPolicy } from '../sender-hosts.ts';
import { webhookUrlRefusal } from './address.ts';
import { DELIVER, WEBHOOKS_CHANNEL, endpointsChanged } from './outbox.ts';
import type { Outbox } from './outbox.ts';

export type EndpointRow = {
  id: string;
  workspace_id: string;
  url: string;
  description: string;
  events: string[];
  enabled: boolean;
  disabled_reason: string | null;
  secret: string;
  key_id: string;
  secret_created_at: Date | string;
  previous_secret: string | null;
  previous_key_id: string | null;
  previous_expires_at: Date | string | null;
  failing_since: Date | string | null;
  last_success_at: Date | string | null;
  created_at: Date | string;
  updated_at: Date | string;
};

type DeliveryRow = {
  id: string;
  seq: string | number;
  endpoint_id: string;
  event_id: string;
  type: string;
  body: string;
  status: DeliveryStatus;
  attempts: number;
  created_at: Date | string;
  next_attempt_at: Date | string | null;
  finished_at: Date | string | null;
  redelivery_of: string | null;
};

type AttemptRow = {
  delivery_id: string;
  attempt: number;
  at: Date | string;
  duration_ms: number;
  request_headers: Record<string, string>;
  response_status: number | null;
  response_excerpt: string;
  error: string | null;
};

export const iso = (v: Date | string): string => new Date(v).toISOString();
const isoOrNull = (v: Date | string | null): string | null => (v === null ? null : iso(v));

/** What a sealed secret is bound to (GCM additional data): its workspace and endpoint. */
export const secretBinding = (endpointId: string): string => `webhook:${endpointId}`;

/** The secrets that sign a delivery at `at`: the current one, and the previous one until it expires. */
export function signingSecrets(key: CredentialsKey, row: Pick<EndpointRow, 'id' | 'workspace_id' | 'secret' | 'key_id' | 'previous_secret' | 'previous_key_id' | 'previous_expires_at'>, at: Date): string[] {
  const open = (sealed: string, keyId: string): string => {
    if (keyId !== key.id) throw new Error(`the endpoint's secret was encrypted with another CREDENTIALS_KEY (key id ${keyId}, this server has ${key.id}); start the server with that key, or rotate the secret`);
    return openSecret(key, row.workspace_id, secretBinding(row.id), sealed);
  };
  const out = [open(row.secret, row.key_id)];
  if (row.previous_secret && row.previous_key_id && row.previous_expires_at && new Date(row.previous_expires_at).getTime() > at.getTime()) {
    out.push(open(row.previous_secret, row.previous_key_id));
  }
  return out;
}

const ENDPOINT_COLUMNS = `e.id, e.url, e.description, e.events, e.enabled, e.disabled_reason, e.secret_created_at, e.previous_expires_at,
  e.failing_since, e.last_success_at, e.created_at, e.updated_at,
  (SELECT count(*) FROM webhook_deliveries d WHERE d.endpoint_id = e.id AND d.status = 'pending')::int AS pending`;

function endpointView(r: Omit<EndpointRow, 'workspace_id' | 'secret' | 'key_id' | 'previous_secret' | 'previous_key_id'> & { pending: number }, now: Date): WebhookEndpointView {
  const previous = r.previous_expires_at && new Date(r.previous_expires_at).getTime() > now.getTime() ? iso(r.previous_expires_at) : null;
  return {
    id: r.id,
    url: r.url,
    description: r.description,
    events: r.events as WebhookEventType[],
    enabled: r.enabled,
    disabledReason: r.disabled_reason,
    createdAt: iso(r.created_at),
    updatedAt: iso(r.updated_at),
    secretCreatedAt: iso(r.secret_created_at),
    previousSecretExpiresAt: previous,
    failingSince: isoOrNull(r.failing_since),
    lastSuccessAt: isoOrNull(r.last_success_at),
    pendingDeliveries: r.pending,
  };
}

const DELIVERY_COLUMNS = `d.id, d.seq, d.endpoint_id, d.event_id, ev.type, ev.body, d.status, d.attempts, d.created_at, d.next_attempt_at, d.finished_at, d.redelivery_of`;

function deliveryView(r: DeliveryRow, attempts: readonly AttemptRow[]): DeliveryView {
  return {
    id: r.id,
    endpointId: r.endpoint_id,
    eventId: r.event_id,
    type: r.type,
    status: r.status,
    attempts: r.attempts,
    createdAt: iso(r.created_at),
    nextAttemptAt: r.status === 'pending' ? isoOrNull(r.next_attempt_at) : null,
    finishedAt: isoOrNull(r.finished_at),
    redeliveryOf: r.redelivery_of,
    body: r.body,
    attemptLog: attempts.map(
      (a): DeliveryAttemptView => ({
        attempt: a.attempt,
        at: iso(a.at),
        durationMs: a.duration_ms,
        requestHeaders: a.request_headers,
        responseStatus: a.response_status,
        responseExcerpt: a.response_excerpt,
        error: a.error,
      }),
    ),
  };
}

export type WebhookPortDeps = {
  key: () => CredentialsKey;
  policy: SenderHostPolicy;
  allowHttp: boolean;
  outbox: Outbox;
  now: () => Date;
};

/** The port of one operation's transaction. */
export function webhookPort(tx: SqlExecutor, deps: WebhookPortDeps): WebhookPort {
  const notify = (payload: string) => tx.query('SELECT pg_notify($1, $2)', [WEBHOOKS_CHANNEL, payload]);
  const attemptsOf = async (ids: string[]): Promise<Map<string, AttemptRow[]>> => {
    const by = new Map<string, AttemptRow[]>();
    if (ids.length === 0) return by;
    const rows = await tx.query<AttemptRow>(
      `SELECT delivery_id, attempt, at, duration_ms, request_headers, response_status, response_excerpt, error
         FROM webhook_attempts WHERE delivery_id = ANY ($1::text[]) ORDER BY delivery_id, attempt, id`,
      [ids],
    );
    for (const r of rows) by.set(r.delivery_id, [...(by.get(r.delivery_id) ?? []), r]);
    return by;
  };
  return {
    allowHttp: deps.allowHttp,
    randomBytes: (n) => new Uint8Array(randomBytes(n)),
    urlRefusal: (url) => webhookUrlRefusal(url, deps.policy),

    async list(workspaceId) {
      const rows = await tx.query<Parameters<typeof endpointView>[0]>(`SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints e WHERE e.workspace_id = $1 ORDER BY e.created_at, e.id`, [workspaceId]);
      const now = deps.now();
      return rows.map((r) => endpointView(r, now));
    },

    async get(workspaceId, endpointId) {
      const [row] = await tx.query<Parameters<typeof endpointView>[0]>(`SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints e WHERE e.workspace_id = $1 AND e.id = $2`, [workspaceId, endpointId]);
      return row ? endpointView(row, deps.now()) : null;
    },

    async create(workspaceId, e) {
      const k = deps.key();
      deps.outbox.expect(workspaceId);
      await tx.query(
        `INSERT INTO webhook_endpoints (id, workspace_id, url, description, events, enabled, secret, key_id, secret_created_at, created_at, created_by, updated_at)
         VALUES ($1, $2, $3, $4, $5::text[], true, $6, $7, $8, $8, $9, $8)`,
        [e.id, workspaceId, e.url, e.description, e.events, sealSecret(k, workspaceId, secretBinding(e.id), e.secret), k.id, e.at, e.by],
      );
      await notify(endpointsChanged(workspaceId));
    },

    async update(workspaceId, endpointId, c) {
      const rows = await tx.query<{ resumed: boolean }>(
        `UPDATE webhook_endpoints e SET
           url = coalesce($3, e.url),
           description = coalesce($4, e.description),
           events = coalesce($5::text[], e.events),
           enabled = coalesce($6, e.enabled),
           disabled_reason = CASE WHEN $6::boolean IS NULL THEN e.disabled_reason ELSE $7 END,
           failing_since = CASE WHEN $6::boolean AND NOT e.enabled THEN NULL ELSE e.failing_since END,
           updated_at = $8
         FROM webhook_endpoints old
        WHERE e.id = old.id AND e.workspace_id = $1 AND e.id = $2
        RETURNING (e.enabled AND NOT old.enabled) AS resumed`,
        [workspaceId, endpointId, c.url ?? null, c.description ?? null, c.events ?? null, c.enabled ?? null, c.disabledReason ?? null, c.at],
      );
      if (rows.length === 0) throw new DomainError('NOT_FOUND', `Webhook endpoint ${endpointId} was not found in this workspace.`, { what: 'Webhook endpoint', id: endpointId });
      // What waited while it was disabled goes out now.
      if (rows[0]?.resumed) await notify(DELIVER);
    },

    async deliveryCount(workspaceId, endpointId) {
      const [row] = await tx.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_deliveries WHERE workspace_id = $1 AND endpoint_id = $2', [workspaceId, endpointId]);
      return row?.n ?? 0;
    },

    async remove(workspaceId, endpointId) {
      const [row] = await tx.query<{ n: number }>(
        `WITH d AS (DELETE FROM webhook_deliveries WHERE workspace_id = $1 AND endpoint_id = $2 RETURNING 1),
              e AS (DELETE FROM webhook_endpoints WHERE workspace_id = $1 AND id = $2 RETURNING 1)
         SELECT (SELECT count(*) FROM d)::int AS n`,
        [workspaceId, endpointId],
      );
      await notify(endpointsChanged(workspaceId));
      return row?.n ?? 0;
    },

    async rotate(workspaceId, endpointId, secret, previousUntil, at) {
      const k = deps.key();
      await tx.query(
        `UPDATE webhook_endpoints SET previous_secret = secret, previous_key_id = key_id, previous_expires_at = $3,
                secret = $4, key_id = $5, secret_created_at = $6, updated_at = $6
          WHERE workspace_id = $1 AND id = $2`,
        [workspaceId, endpointId, previousUntil, sealSecret(k, workspaceId, secretBinding(endpointId), secret), k.id, at],
      );
    },

    async enqueue(workspaceId, endpointId, ev) {
      await tx.query('INSERT INTO webhook_events (id, workspace_id, type, body, created_at) VALUES ($1, $2, $3, $4, $5)', [ev.id, workspaceId, ev.type, ev.body, ev.at]);
      await tx.query('INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event_id, created_at) VALUES ($1, $2, $3, $4, $5)', [ev.deliveryId, workspaceId, endpointId, ev.id, ev.at]);
      await notify(DELIVER);
    },

    async deliveries(workspaceId, q) {
      let before: number | null = null;
      if (q.cursor) {
        if (!/^\d{1,18}$/.test(q.cursor)) throw new DomainError('INVALID_INPUT', 'cursor: not a cursor of this list; pass the nextCursor of the previous page.', { issues: [{ path: 'cursor', message: 'unknown cursor' }] });
        before = Number(q.cursor);
      }
      const rows = await tx.query<DeliveryRow>(
        `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d JOIN webhook_events ev ON ev.id = d.event_id
          WHERE d.workspace_id = $1 AND d.endpoint_id = $2 AND ($3::text IS NULL OR d.status = $3) AND ($4::bigint IS NULL OR d.seq < $4)
          ORDER BY d.seq DESC LIMIT $5`,
        [workspaceId, q.endpointId, q.status ?? null, before, q.limit + 1],
      );
      const page = rows.slice(0, q.limit);
      const attempts = await attemptsOf(page.map((r) => r.id));
      const last = page[page.length - 1];
      return { deliveries: page.map((r) => deliveryView(r, attempts.get(r.id) ?? [])), nextCursor: rows.length > q.limit && last ? String(last.seq) : null };
    },

    async delivery(workspaceId, deliveryId) {
      const [row] = await tx.query<DeliveryRow>(`SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d JOIN webhook_events ev ON ev.id = d.event_id WHERE d.workspace_id = $1 AND d.id = $2`, [workspaceId, deliveryId]);
      if (!row) return null;
      return deliveryView(row, (await attemptsOf([row.id])).get(row.id) ?? []);
    },

    async redeliver(workspaceId, deliveryId, newDeliveryId, at) {
      // Still waiting (a retry later): that delivery, and whatever is ahead of it for the endpoint
      // (they hold it, in order), become due now. No copy is queued behind it: the webhook-id is sent
      // by one delivery, once it succeeds, and never again by the queue.
      const dueNow = async (): Promise<string | null> => {
        const rows = await tx.query<{ id: string }>(
          `WITH waiting AS (
             SELECT w.id, w.endpoint_id, w.seq FROM webhook_deliveries d
               JOIN webhook_deliveries w ON w.endpoint_id = d.endpoint_id AND w.event_id = d.event_id AND w.status = 'pending'
              WHERE d.workspace_id = $1 AND d.id = $2
           ), ahead AS (
             UPDATE webhook_deliveries q SET next_attempt_at = NULL FROM waiting w
              WHERE q.endpoint_id = w.endpoint_id AND q.status = 'pending' AND q.seq <= w.seq
             RETURNING q.id
           )
           SELECT id FROM waiting WHERE EXISTS (SELECT 1 FROM ahead)`,
          [workspaceId, deliveryId],
        );
        return rows[0]?.id ?? null;
      };
      let waiting = await dueNow();
      if (waiting === null) {
        // Finished (delivered, or given up): a new delivery of the same event, after what waits.
        const inserted = await tx.query<{ id: string }>(
          `INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event_id, redelivery_of, created_at)
           SELECT $3, workspace_id, endpoint_id, event_id, id, $4 FROM webhook_deliveries WHERE workspace_id = $1 AND id = $2
           ON CONFLICT (endpoint_id, event_id) WHERE status = 'pending' DO NOTHING
           RETURNING id`,
          [workspaceId, deliveryId, newDeliveryId, at],
        );
        // A concurrent Send again queued one first: that one is made due now.
        if (inserted.length === 0) waiting = await dueNow();
      }
      await notify(DELIVER);
      return waiting === null ? { deliveryId: newDeliveryId, waiting: false } : { deliveryId: waiting, waiting: true };
    },
  };
}
