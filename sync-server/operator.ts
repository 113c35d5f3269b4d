/** What operators expect of a web service, each from a well-kept library: CORS for browser clients
 * (@fastify/cors), compressed JSON answers (@fastify/compress), Prometheus metrics (prom-client, in
 * metrics.ts) and an API reference page at /docs (@scalar/fastify-api-reference, its script served by
 * this server: no CDN). Registered before the routes so their hooks apply to every route. */
import cors from '@fastify/cors';
import compress from '@fastify/compress';
import scalar from '@scalar/fastify-api-reference';
import type { FastifyInstance } from 'fastify';
import { constants } from 'node:zlib';
import { registerMetrics } from './metrics.ts';
import type { ServerMetrics } from './metrics.ts';

export type OperatorOptions = {
  /** Origins allowed to call from a browser: exact origins, or "*" for any. Empty: CORS off. */
  corsOrigins: readonly string[];
  /** Compress answers from this many bytes on (default 1024); 0 or less turns compression off. */
  compressThresholdBytes: number;
  metrics: ServerMetrics;
  /** Bearer token GET /metrics requires; null: open (keep /metrics off the public network). */
  metricsToken: string | null;
  knownOperation: (name: string) => boolean;
};

/** Request headers a browser client may send, and answer headers it may read. */
export const CORS_ALLOWED_HEADERS = ['Authorization', 'Content-Type', 'Idempotency-Key', 'X-Request-Id', 'X-Schema-Version'];
export const CORS_EXPOSED_HEADERS = ['X-Request-Id', 'Retry-After', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'RateLimit-Policy', 'Idempotent-Replayed', 'Allow'];

/** CORS_ORIGINS: a comma-separated list of origins (https://app.example.com) or "*". */
export function parseCorsOrigins(raw: string | undefined): string[] {
  const list = (raw ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const o of list) {
    if (o === '*') continue;
    let u: URL;
    try {
      u = new URL(o);
    } catch {
      throw new Error(`CORS_ORIGINS: "${o}" is not an origin like https://app.example.com.`);
    }
    if (u.origin !== o.replace(/\/$/, '')) throw new Error(`CORS_ORIGINS: "${o}" must be an origin only (scheme, host and port), like ${u.origin}.`);
  }
  return list.map((o) => o.replace(/\/$/, ''));
}

export async function registerOperatorPlugins(app: FastifyInstance, opts: OperatorOptions): Promise<void> {
  if (opts.corsOrigins.length > 0) {
    const any = opts.corsOrigins.includes('*');
    const allowed = new Set(opts.corsOrigins);
    await app.register(cors, {
      origin: any ? '*' : (origin, cb) => cb(null, origin !== undefined && allowed.has(origin)),
      methods: ['GET', 'POST'],
      allowedHeaders: CORS_ALLOWED_HEADERS,
      exposedHeaders: CORS_EXPOSED_HEADERS,
      maxAge: 600,
      strictPreflight: true,
    });
  }
  if (opts.compressThresholdBytes > 0) {
    await app.register(compress, {
      global: true,
      threshold: opts.compressThresholdBytes,
      encodings: ['br', 'gzip', 'deflate'],
      // Brotli's default quality (11) costs far more CPU than it saves on JSON; 4 is close to gzip's cost.
      brotliOptions: { params: { [constants.BROTLI_PARAM_QUALITY]: 4 } },
      zlibOptions: { level: 6 },
      // Live replication streams are never buffered or compressed (they hijack the reply anyway).
      customTypes: /^(application\/(json|problem\+json)|text\/(html|plain|css|javascript)|application\/javascript)(;|$)/,
      removeContentLengthHeader: true,
    });
  }
  registerMetrics(app, opts.metrics, { token: opts.metricsToken, knownOperation: opts.knownOperation });
  await app.register(scalar, {
    routePrefix: '/docs',
    logLevel: 'warn',
    configuration: {
      url: '/openapi.json',
      title: 'Outreach CRM API',
      withDefaultFonts: false,
      hideClientButton: true,
      telemetry: false,
    },
  });
}
