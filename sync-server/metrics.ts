/** Prometheus metrics (prom-client) at GET /metrics: requests by operation and status, their latency,
 * open replication streams, refused requests by reason, the runner's actions by kind and outcome, and
 * the state of the connection that hears other server processes' commits.
 * One registry per server instance, so several servers in one process (the tests) do not mix. */
import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { DomainError } from '../shared/errors.ts';

export type ServerMetrics = {
  readonly registry: Registry;
  /** Runner actions: kind (email, connection_request, ...), outcome (done, failed, deferred, ...). */
  readonly runnerActions: Counter<'kind' | 'outcome'>;
  readonly streamsOpen: Gauge;
  /** Requests refused before they reached an operation (rate limits, stream caps). */
  readonly refused: Counter<'reason'>;
  /** 1 while this process hears other processes' commits (its LISTEN connection is up), else 0. */
  readonly changeListenerUp: Gauge;
  /** Times the LISTEN connection was lost and came back. */
  readonly changeListenerReconnects: Counter;
  /** Webhook delivery attempts by outcome: delivered, retry, gave_up, disabled. */
  readonly webhookDeliveries: Counter<'outcome'>;
};

export function createMetrics(opts: { defaultMetrics?: boolean } = {}): ServerMetrics {
  const registry = new Registry();
  if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: registry, prefix: 'outreach_' });
  return {
    registry,
    runnerActions: new Counter({
      name: 'outreach_runner_actions_total',
      help: 'Outreach runner actions by kind of message and outcome.',
      labelNames: ['kind', 'outcome'] as const,
      registers: [registry],
    }),
    streamsOpen: new Gauge({ name: 'outreach_replication_streams_open', help: 'Live replication streams open in this process.', registers: [registry] }),
    refused: new Counter({ name: 'outreach_requests_refused_total', help: 'Requests refused before an operation ran, by reason.', labelNames: ['reason'] as const, registers: [registry] }),
    changeListenerUp: new Gauge({
      name: 'outreach_change_listener_up',
      help: "1 while this process hears other server processes' commits (its PostgreSQL LISTEN connection is up; always 1 on the embedded database), 0 while it reconnects.",
      registers: [registry],
    }),
    changeListenerReconnects: new Counter({
      name: 'outreach_change_listener_reconnects_total',
      help: 'Times the LISTEN connection was lost and listening again (live streams were resynced each time).',
      registers: [registry],
    }),
    webhookDeliveries: new Counter({
      name: 'outreach_webhook_deliveries_total',
      help: 'Webhook delivery attempts by outcome: delivered (2xx), retry (failed, tried again later), gave_up (failed for the last time), disabled (failed and disabled its endpoint).',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
  };
}

/** The label of a request: its operation name, replication route pattern, or "other" (never the raw
 * URL, which would give an unbounded number of series). */
function operationOf(req: FastifyRequest, known: (name: string) => boolean): string {
  const pattern = req.routeOptions.url ?? '';
  if (pattern === '/:name') {
    const name = (req.params as { name?: string } | undefined)?.name ?? '';
    return known(name) ? name : 'unknown';
  }
  return pattern || 'unmatched';
}

/** Request counters and latency for every route, and GET /metrics (bearer METRICS_TOKEN when set). */
export function registerMetrics(app: FastifyInstance, metrics: ServerMetrics, opts: { token?: string | null; knownOperation: (name: string) => boolean }): void {
  const requests = new Counter({
    name: 'outreach_http_requests_total',
    help: 'HTTP requests by operation (or route) and status.',
    labelNames: ['operation', 'method', 'status'] as const,
    registers: [metrics.registry],
  });
  const latency = new Histogram({
    name: 'outreach_http_request_duration_seconds',
    help: 'Time from request to response, by operation (or route).',
    labelNames: ['operation'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [metrics.registry],
  });
  app.addHook('onResponse', async (req, reply) => {
    if (req.routeOptions.url === '/metrics') return;
    const operation = operationOf(req, opts.knownOperation);
    requests.inc({ operation, method: req.method, status: String(reply.statusCode) });
    latency.observe({ operation }, reply.elapsedTime / 1000);
  });
  const token = opts.token?.trim() || null;
  app.get('/metrics', async (req, reply) => {
    if (token) {
      const given = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '')?.[1] ?? '';
      const a = Buffer.from(given);
      const b = Buffer.from(token);
      if (a.length !== b.length || !timingSafeEqual(a, b)) {
        throw new DomainError('UNAUTHENTICATED', 'GET /metrics needs Authorization: Bearer <METRICS_TOKEN>.', { header: 'Authorization' });
      }
    }
    return reply.header('content-type', metrics.registry.contentType).send(await metrics.registry.metrics());
  });
}
