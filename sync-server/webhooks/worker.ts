/**
 * Webhook delivery, in every sync-server process. An endpoint is delivered to by one process at a
 * time: a process takes an endpoint's lease (lease_owner/lease_until, claimed with FOR UPDATE SKIP
 * LOCKED, renewed with each batch and whenever it could lapse during the next attempt) and sends its
 * waiting deliveries oldest first, one at a time, so they arrive in order; a failed delivery holds
 * the ones after it until it succeeds or is given up (or a person presses Send again: store.ts).
 *
 * At least once: a delivery counts as delivered only when an answer 2xx is recorded, so a process
 * that dies mid-attempt leaves it waiting, and whoever takes the lease next (the same server
 * restarted, or another process once the lease lapses) sends it again with the same webhook-id.
 * A failure is tried again after each delay of the schedule (about 31 hours in all, with jitter,
 * longer when the receiver's Retry-After asks), then given up. An endpoint failing for days (every
 * attempt since `failing_since`), or answering 410 Gone, is disabled with the reason; its waiting
 * deliveries go out when a person enables it again.
 */
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import type { Clock } from '../../shared/context.ts';
import type { CredentialsKey } from '../credentials.ts';
import type { SqlDatabase, SqlExecutor } from '../db.ts';
import { webhookHeaders } from './sign.ts';
import { signingSecrets } from './store.ts';
import type { EndpointRow } from './store.ts';

export type DeliveryOptions = {
  /** Wait after the 1st, 2nd, ... failed attempt; after the last one the delivery is given up. */
  retryDelaysMs: readonly number[];
  /** Per attempt, from connecting to the end of the answer's excerpt. */
  timeoutMs: number;
  /** An endpoint whose every attempt failed for this long is disabled. */
  disableAfterMs: number;
  /** How long a process holds an endpoint between renewals (longer than one attempt). */
  leaseMs: number;
  /** How often due deliveries are looked for when nothing woke the worker. */
  pollMs: number;
  /** Endpoints delivered to at once by one process. */
  concurrency: number;
  /** How much of an answer's body the log keeps. */
  excerptBytes: number;
  /** Finished deliveries and their attempts are deleted after this many days. */
  retentionDays: number;
};

const MINUTE = 60_000;
/** Deliveries read, and their attempts recorded, at a time. */
const BATCH = 50;
/** Batches one claim of an endpoint sends before the lease is given back (other endpoints' turn). */
const MAX_BATCHES_PER_CLAIM = 20;
const HOUR = 60 * MINUTE;

/** The Standard Webhooks specification's example schedule up to 14 hours: tried 8 times over ~31.6 h. */
export const DEFAULT_DELIVERY: DeliveryOptions = {
  retryDelaysMs: [5_000, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 14 * HOUR],
  timeoutMs: 10_000,
  disableAfterMs: 5 * 24 * HOUR,
  leaseMs: 15_000,
  pollMs: 1_000,
  concurrency: 8,
  excerptBytes: 2_048,
  retentionDays: 30,
};

/** What one attempt came to, for /metrics. */
export type AttemptOutcome = 'delivered' | 'retry' | 'gave_up' | 'disabled';

type Log = { warn(obj: object, msg: string): void; info(obj: object, msg: string): void };

export type DeliveryWorkerDeps = {
  sql: SqlDatabase;
  key: () => CredentialsKey;
  clock: Clock;
  random: () => number;
  /** fetch through the address guard (guardedFetch). */
  fetch: typeof fetch;
  options: DeliveryOptions;
  log: Log;
  onAttempt?: (outcome: AttemptOutcome) => void;
};

type Claimed = EndpointRow & { lease_owner: string };

type Head = { id: string; attempts: number; next_attempt_at: Date | string | null; event_id: string; body: string };

type Sent = { at: Date; durationMs: number; headers: Record<string, string>; status: number | null; excerpt: string; error: string | null; retryAfterMs: number | null };

export type DeliveryWorker = {
  readonly workerId: string;
  start(): void;
  /** Look for due deliveries now (a NOTIFY said some were queued). */
  wake(): void;
  /** One pass over every endpoint with due deliveries; resolves when they are sent (tests). */
  runOnce(): Promise<number>;
  /** Deletes what the retention allows; returns the deliveries deleted. */
  sweep(): Promise<number>;
  stop(): Promise<void>;
};

export function createDeliveryWorker(deps: DeliveryWorkerDeps): DeliveryWorker {
  const { sql, clock, options: o } = deps;
  const workerId = `webhooks:${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<number> | null = null;
  let again = false;
  let stopped = true;
  let lastSweep = 0;
  /** Aborts attempts in flight when the process stops (they stay waiting and go out again). */
  let stopping = new AbortController();

  const later = (ms: number): Date => new Date(clock.now().getTime() + ms);

  async function claim(): Promise<Claimed[]> {
    const now = clock.now();
    return sql.query<Claimed>(
      `UPDATE webhook_endpoints e SET lease_owner = $1, lease_until = $3
        WHERE e.id IN (
          SELECT c.id FROM webhook_endpoints c
           WHERE c.enabled AND (c.lease_until IS NULL OR c.lease_until < $2 OR c.lease_owner = $1)
             -- Its oldest waiting delivery is due: one waiting for a retry holds the ones after it.
             AND (SELECT d.next_attempt_at IS NULL OR d.next_attempt_at <= $2 FROM webhook_deliveries d
                   WHERE d.endpoint_id = c.id AND d.status = 'pending' ORDER BY d.seq LIMIT 1)
           ORDER BY c.id LIMIT $4 FOR UPDATE SKIP LOCKED)
        RETURNING e.*`,
      [workerId, now, later(o.leaseMs), o.concurrency],
    );
  }

  /** Renews the lease and rereads the endpoint (a person may have changed or disabled it). */
  async function renew(endpointId: string): Promise<Claimed | null> {
    const [row] = await sql.query<Claimed>('UPDATE webhook_endpoints SET lease_until = $3 WHERE id = $1 AND lease_owner = $2 AND enabled RETURNING *', [endpointId, workerId, later(o.leaseMs)]);
    return row ?? null;
  }

  async function release(endpointId: string): Promise<void> {
    await sql.query('UPDATE webhook_endpoints SET lease_owner = NULL, lease_until = NULL WHERE id = $1 AND lease_owner = $2', [endpointId, workerId]);
  }

  /** The endpoint's waiting deliveries that are due, oldest first, up to `limit`: the oldest one
   * must be due (one waiting for a retry holds the ones after it), and so on down the queue. */
  async function due(endpointId: string, limit: number, ex: SqlExecutor = sql): Promise<Head[]> {
    const rows = await ex.query<Head>(
      `SELECT d.id, d.attempts, d.next_attempt_at, d.event_id, ev.body FROM webhook_deliveries d JOIN webhook_events ev ON ev.id = d.event_id
        WHERE d.endpoint_id = $1 AND d.status = 'pending' ORDER BY d.seq LIMIT $2`,
      [endpointId, limit],
    );
    const now = clock.now().getTime();
    const out: Head[] = [];
    for (const r of rows) {
      if (r.next_attempt_at !== null && new Date(r.next_attempt_at).getTime() > now) break;
      out.push(r);
    }
    return out;
  }

  /** The attempt, or null when the process stopped during it (nothing is recorded: it goes again). */
  async function send(ep: Claimed, d: Head): Promise<Sent | null> {
    const at = clock.now();
    const started = performance.now();
    let headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': 'OutreachCRM-Webhooks/1.0', 'webhook-id': d.event_id };
    try {
      headers = { ...headers, ...webhookHeaders(signingSecrets(deps.key(), ep, at), d.event_id, at, d.body) };
    } catch (e) {
      return { at, durationMs: 0, headers, status: null, excerpt: '', error: `not sent: ${e instanceof Error ? e.message : String(e)}`, retryAfterMs: null };
    }
    const timeout = AbortSignal.timeout(o.timeoutMs);
    const signal = AbortSignal.any([timeout, stopping.signal]);
    try {
      // Redirects are not followed: a 3xx is a failure (the URL should be updated), and following
      // one would let the receiver point the server elsewhere.
      const res = await deps.fetch(ep.url, { method: 'POST', headers, body: d.body, redirect: 'manual', signal });
      const excerpt = await readExcerpt(res, o.excerptBytes);
      return { at, durationMs: Math.round(performance.now() - started), headers, status: res.status, excerpt, error: null, retryAfterMs: retryAfter(res.headers.get('retry-after'), at) };
    } catch (e) {
      if (stopping.signal.aborted) return null;
      const error = timeout.aborted ? `no answer within ${o.timeoutMs / 1000} s` : describe(e);
      return { at, durationMs: Math.round(performance.now() - started), headers, status: null, excerpt: '', error, retryAfterMs: null };
    }
  }

  /** What an attempt did to its delivery and to the endpoint, computed from the endpoint as the
   * attempt before it left it (`failingSince`). */
  function outcomeOf(failingBefore: Date | null, d: Head, s: Sent) {
    const ok = s.status !== null && s.status >= 200 && s.status < 300;
    const attempt = d.attempts + 1;
    const failingSince = ok ? null : (failingBefore ?? s.at);
    const gone = s.status === 410;
    const delay = o.retryDelaysMs[attempt - 1];
    const gaveUp = !ok && delay === undefined;
    const disable = !ok && (gone || (failingSince !== null && s.at.getTime() - failingSince.getTime() >= o.disableAfterMs));
    let next: Date | null = null;
    if (!ok && delay !== undefined) {
      // Jitter of +-10% spreads retries of many deliveries; a longer Retry-After is honoured (up to a day).
      const jittered = delay * (0.9 + 0.2 * deps.random());
      next = new Date(s.at.getTime() + Math.min(Math.max(jittered, s.retryAfterMs ?? 0), 24 * HOUR));
    }
    const what = s.status !== null ? `HTTP ${s.status}` : (s.error ?? 'no answer');
    const reason = !disable
      ? null
      : gone
        ? `Disabled on ${s.at.toISOString().slice(0, 10)}: the endpoint answered 410 Gone, which asks for no more webhooks.`
        : `Disabled on ${s.at.toISOString().slice(0, 10)}: every delivery failed since ${failingSince?.toISOString().slice(0, 16).replace('T', ' ')} UTC (last: ${what}).`;
    const outcome: AttemptOutcome = ok ? 'delivered' : disable ? 'disabled' : gaveUp ? 'gave_up' : 'retry';
    return { ok, attempt, failingSince, disable, reason, next, gaveUp, outcome };
  }

  /**
   * Records attempts of one endpoint (in sending order; only the last may have failed) in one
   * transaction: each attempt's log row, each delivery's new state, the endpoint's, and the lease
   * renewed; then, in the same transaction, the next `nextLimit` due deliveries are read. So a busy
   * endpoint costs one database turn per batch (on PGlite, one turn of its single connection among
   * every request's). A delivery is only changed while still pending, so an attempt that raced a
   * person's change records its log row and nothing else. `ep` is the endpoint as reread, null when
   * this process no longer holds it or it was disabled.
   */
  async function record(ep: Claimed, sent: readonly { d: Head; s: Sent }[], nextLimit: number): Promise<{ outcomes: AttemptOutcome[]; ep: Claimed | null; next: Head[] }> {
    let failingSince = ep.failing_since ? new Date(ep.failing_since) : null;
    let lastSuccess: Date | null = null;
    let disable: { reason: string | null; at: Date } | null = null;
    const attempts: unknown[] = [];
    const deliveries: unknown[] = [];
    const outcomes: AttemptOutcome[] = [];
    for (const { d, s } of sent) {
      const r = outcomeOf(failingSince, d, s);
      failingSince = r.failingSince;
      if (r.ok) lastSuccess = s.at;
      if (r.disable) disable = { reason: r.reason, at: s.at };
      attempts.push({ delivery_id: d.id, attempt: r.attempt, at: s.at.toISOString(), duration_ms: s.durationMs, request_headers: s.headers, response_status: s.status, response_excerpt: s.excerpt, error: s.error });
      deliveries.push({ id: d.id, attempts: r.attempt, status: r.ok ? 'succeeded' : r.gaveUp ? 'failed' : 'pending', next_attempt_at: r.next?.toISOString() ?? null, finished_at: r.ok || r.gaveUp ? s.at.toISOString() : null });
      outcomes.push(r.outcome);
    }
    const last = sent[sent.length - 1]?.s.at ?? clock.now();
    const out = await sql.transaction(async (tx) => {
      if (sent.length > 0) {
        await tx.query(
          `INSERT INTO webhook_attempts (delivery_id, attempt, at, duration_ms, request_headers, response_status, response_excerpt, error)
           SELECT a.delivery_id, a.attempt, a.at, a.duration_ms, a.request_headers, a.response_status, a.response_excerpt, a.error
             FROM jsonb_to_recordset($1::jsonb) AS a(delivery_id text, attempt int, at timestamptz, duration_ms int, request_headers jsonb, response_status int, response_excerpt text, error text)`,
          [JSON.stringify(attempts)],
        );
        await tx.query(
          `UPDATE webhook_deliveries d SET attempts = x.attempts, status = x.status, next_attempt_at = x.next_attempt_at, finished_at = x.finished_at
             FROM jsonb_to_recordset($1::jsonb) AS x(id text, attempts int, status text, next_attempt_at timestamptz, finished_at timestamptz)
            WHERE d.id = x.id AND d.status = 'pending'`,
          [JSON.stringify(deliveries)],
        );
      }
      const [row] = await tx.query<Claimed>(
        `UPDATE webhook_endpoints SET failing_since = $2, last_success_at = coalesce($3, last_success_at),
                enabled = enabled AND NOT $4, disabled_reason = CASE WHEN $4 THEN $5 ELSE disabled_reason END,
                updated_at = CASE WHEN $4 THEN $6 ELSE updated_at END,
                lease_until = CASE WHEN lease_owner = $7 THEN $8 ELSE lease_until END
          WHERE id = $1
          RETURNING *`,
        [ep.id, failingSince, lastSuccess, disable !== null, disable?.reason ?? null, disable?.at ?? last, workerId, later(o.leaseMs)],
      );
      const held = row && row.lease_owner === workerId && row.enabled ? row : null;
      return { ep: held, next: held && nextLimit > 0 ? await due(ep.id, nextLimit, tx) : [] };
    });
    if (disable) deps.log.warn({ endpointId: ep.id, workspaceId: ep.workspace_id, reason: disable.reason }, 'webhook endpoint disabled');
    return { outcomes, ...out };
  }

  /**
   * Sends an endpoint's due deliveries in order until one fails or none is due. They are read a
   * batch at a time and their attempts recorded a batch at a time, with the lease renewed and the
   * next batch read in that same transaction (record), so a busy endpoint is not limited by the
   * database round trips of each delivery: what waits leaves as fast as the receiver answers. A
   * process that dies after sending and before recording sends those again (at least once, same
   * webhook-id). Within a batch the lease is renewed (and the endpoint reread: a person may have
   * changed or disabled it) whenever it could otherwise lapse during the next attempt.
   */
  async function drain(claimed: Claimed): Promise<number> {
    let sent = 0;
    let ep: Claimed | null = claimed;
    let renewedAt = performance.now();
    const renewEvery = Math.max(0, (o.leaseMs - o.timeoutMs) / 2);
    try {
      let batch = await due(claimed.id, BATCH);
      for (let round = 0; batch.length > 0 && ep && !stopped; round++) {
        const done: { d: Head; s: Sent }[] = [];
        let halted = false;
        for (const d of batch) {
          if (performance.now() - renewedAt > renewEvery) {
            ep = await renew(claimed.id);
            renewedAt = performance.now();
            if (!ep) {
              halted = true;
              break;
            }
          }
          const s = await send(ep, d);
          if (!s) {
            halted = true;
            break;
          }
          done.push({ d, s });
          const ok = s.status !== null && s.status >= 200 && s.status < 300;
          if (!ok || stopped) {
            halted = true;
            break;
          }
        }
        if (done.length === 0) break;
        let r: Awaited<ReturnType<typeof record>>;
        try {
          r = await record(ep ?? claimed, done, halted || stopped || round + 1 >= MAX_BATCHES_PER_CLAIM ? 0 : BATCH);
        } catch (e) {
          // The endpoint was deleted while its deliveries were on the way: nothing is left to record.
          if ((e as { code?: unknown }).code === '23503') break;
          throw e;
        }
        sent += r.outcomes.length;
        for (const outcome of r.outcomes) deps.onAttempt?.(outcome);
        if (halted) break;
        ep = r.ep;
        renewedAt = performance.now();
        batch = r.next;
      }
    } finally {
      await release(claimed.id).catch((e: unknown) => deps.log.warn({ err: e, endpointId: claimed.id }, 'releasing a webhook endpoint lease failed'));
    }
    return sent;
  }

  async function pass(): Promise<number> {
    if (Date.now() - lastSweep > HOUR) {
      lastSweep = Date.now();
      await sweep().catch((e: unknown) => deps.log.warn({ err: e }, 'sweeping the webhook delivery log failed'));
    }
    let total = 0;
    for (;;) {
      const claimed = await claim();
      if (claimed.length === 0) return total;
      const counts = await Promise.all(claimed.map((c) => drain(c)));
      const n = counts.reduce((a, b) => a + b, 0);
      total += n;
      if (n === 0 || stopped) return total;
    }
  }

  function runOnce(): Promise<number> {
    if (running) {
      again = true;
      return running;
    }
    running = pass().finally(() => {
      running = null;
      if (again && !stopped) {
        again = false;
        void runOnce().catch((e: unknown) => deps.log.warn({ err: e }, 'webhook delivery failed'));
      }
    });
    return running;
  }

  function schedule(ms: number): void {
    if (stopped) return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = null;
      runOnce()
        .catch((e: unknown) => deps.log.warn({ err: e }, 'webhook delivery failed'))
        .finally(() => schedule(o.pollMs));
    }, ms);
    timer.unref();
  }

  async function sweep(): Promise<number> {
    const cutoff = new Date(clock.now().getTime() - o.retentionDays * 24 * HOUR);
    // Finished deliveries (their attempts go with them), and what waited for an endpoint disabled
    // all that time; then the events no delivery refers to any more.
    const [row] = await sql.query<{ n: number }>(
      `WITH gone AS (
         DELETE FROM webhook_deliveries d
          WHERE (d.finished_at IS NOT NULL AND d.finished_at < $1)
             OR (d.status = 'pending' AND d.created_at < $1 AND EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.id = d.endpoint_id AND NOT e.enabled))
         RETURNING 1)
       SELECT count(*)::int AS n FROM gone`,
      [cutoff],
    );
    await sql.query('DELETE FROM webhook_events ev WHERE ev.created_at < $1 AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = ev.id)', [cutoff]);
    return row?.n ?? 0;
  }

  return {
    workerId,
    start() {
      if (!stopped) return;
      stopped = false;
      stopping = new AbortController();
      schedule(0);
    },
    wake() {
      schedule(0);
    },
    runOnce,
    sweep,
    async stop() {
      stopped = true;
      stopping.abort();
      if (timer) clearTimeout(timer);
      timer = null;
      await running?.catch(() => undefined);
    },
  };
}

/** The first `max` bytes of the answer's body as text; the rest is not read. */
async function readExcerpt(res: Response, max: number): Promise<string> {
  if (!res.body) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < max) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return Buffer.concat(chunks).subarray(0, max).toString('utf8');
}

/** Retry-After in seconds or as an HTTP date, in milliseconds from `at`. */
function retryAfter(header: string | null, at: Date): number | null {
  if (!header) return null;
  if (/^\d+$/.test(header.trim())) return Number(header.trim()) * 1000;
  const when = Date.parse(header);
  return Number.isNaN(when) ? null : Math.max(0, when - at.getTime());
}

function describe(e: unknown): string {
  const err = e instanceof Error ? e : new Error(String(e));
  const cause = err.cause instanceof Error ? err.cause : null;
  const code = (cause as (Error & { code?: string }) | null)?.code ?? (err as Error & { code?: string }).code;
  const message = cause?.message ?? err.message;
  return code && !message.includes(code) ? `${message} (${code})` : message;
}
