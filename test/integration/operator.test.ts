/** What operators expect of the sync server: CORS for configured origins, compressed JSON, Prometheus
 * metrics, an offline API reference page, and an OpenAPI document a client developer can use. */
import { request } from 'node:http';
import { gunzipSync } from 'node:zlib';
import SwaggerParser from '@apidevtools/swagger-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OpDef } from '../../shared/ops/define.ts';
import { OPERATION_NAMES, operations } from '../../shared/ops/index.ts';
import { createMetrics } from '../../sync-server/metrics.ts';
import type { ServerMetrics } from '../../sync-server/metrics.ts';
import { parseCorsOrigins } from '../../sync-server/operator.ts';
import { startTestServer } from './support/server.ts';
import type { TestServer } from './support/server.ts';

const OPS = operations as Record<string, OpDef>;
const APP_ORIGIN = 'https://app.acme.test';

/** A raw HTTP exchange (fetch would decompress the body and hide its size on the wire). */
function raw(url: string, init: { method?: string; headers?: Record<string, string> } = {}): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: init.method ?? 'GET', headers: init.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('operator features', () => {
  let s: TestServer;
  let metrics: ServerMetrics;
  beforeAll(async () => {
    metrics = createMetrics({ defaultMetrics: false });
    s = await startTestServer('pglite', { operator: { corsOrigins: [APP_ORIGIN], metrics, metricsToken: 'scrape-secret' } });
  });
  afterAll(async () => {
    await s?.close();
  });

  describe('CORS', () => {
    it('answers the preflight of every operation route for a configured origin', async () => {
      for (const name of ['tags.getAll', 'tags.create', 'campaigns.leads.search']) {
        const op = OPS[name] as OpDef;
        const res = await raw(`${s.url}/${name}`, {
          method: 'OPTIONS',
          headers: { origin: APP_ORIGIN, 'access-control-request-method': op.method, 'access-control-request-headers': 'authorization, content-type, idempotency-key' },
        });
        expect(res.status, name).toBe(204);
        expect(res.headers['access-control-allow-origin']).toBe(APP_ORIGIN);
        expect(String(res.headers['access-control-allow-methods'])).toContain(op.method);
        expect(String(res.headers['access-control-allow-headers']).toLowerCase()).toContain('authorization');
        expect(String(res.headers['access-control-allow-headers']).toLowerCase()).toContain('idempotency-key');
      }
    });

    it('lets the browser read the answer and its rate-limit headers, for that origin only', async () => {
      const ok = await fetch(`${s.url}/tags.getAll`, { headers: { authorization: `Bearer ${s.ours.ownerKey}`, origin: APP_ORIGIN } });
      expect(ok.status).toBe(200);
      expect(ok.headers.get('access-control-allow-origin')).toBe(APP_ORIGIN);
      expect(ok.headers.get('access-control-expose-headers')).toContain('RateLimit-Remaining');
      const other = await fetch(`${s.url}/tags.getAll`, { headers: { authorization: `Bearer ${s.ours.ownerKey}`, origin: 'https://evil.test' } });
      expect(other.headers.get('access-control-allow-origin')).toBeNull();
      const preflight = await raw(`${s.url}/tags.getAll`, { method: 'OPTIONS', headers: { origin: 'https://evil.test', 'access-control-request-method': 'GET' } });
      expect(preflight.headers['access-control-allow-origin']).toBeUndefined();
    });

    it('refuses a CORS_ORIGINS value that is not an origin', () => {
      expect(parseCorsOrigins('https://a.test, https://b.test:8443')).toEqual(['https://a.test', 'https://b.test:8443']);
      expect(parseCorsOrigins('*')).toEqual(['*']);
      expect(parseCorsOrigins('')).toEqual([]);
      expect(() => parseCorsOrigins('app.acme.test')).toThrow(/not an origin/);
      expect(() => parseCorsOrigins('https://app.acme.test/path')).toThrow(/origin only/);
    });
  });

  describe('compression', () => {
    it('gzips and brotli-compresses large JSON answers, leaves small ones alone', async () => {
      for (let i = 0; i < 60; i++) expect((await s.call(s.ours.ownerKey, 'tags.create', { name: `Segment ${i} — enterprise accounts in the DACH region` })).status).toBe(200);
      const plain = await raw(`${s.url}/tags.getAll`, { headers: { authorization: `Bearer ${s.ours.ownerKey}` } });
      expect(plain.headers['content-encoding']).toBeUndefined();
      const gz = await raw(`${s.url}/tags.getAll`, { headers: { authorization: `Bearer ${s.ours.ownerKey}`, 'accept-encoding': 'gzip' } });
      expect(gz.status).toBe(200);
      expect(gz.headers['content-encoding']).toBe('gzip');
      expect(gz.body.length).toBeLessThan(plain.body.length / 3);
      expect(JSON.parse(gunzipSync(gz.body).toString('utf8'))).toEqual(JSON.parse(plain.body.toString('utf8')));
      const br = await raw(`${s.url}/tags.getAll`, { headers: { authorization: `Bearer ${s.ours.ownerKey}`, 'accept-encoding': 'br, gzip' } });
      expect(br.headers['content-encoding']).toBe('br');

      const small = await raw(`${s.url}/healthz`, { headers: { 'accept-encoding': 'gzip' } });
      expect(small.headers['content-encoding']).toBeUndefined();
      expect(JSON.parse(small.body.toString('utf8'))).toMatchObject({ ok: true });
    });

    it('never compresses a live replication stream', async () => {
      const ac = new AbortController();
      const res = await fetch(`${s.url}/replication/tags/stream`, { headers: { authorization: `Bearer ${s.ours.ownerKey}`, 'accept-encoding': 'gzip, br', origin: APP_ORIGIN }, signal: ac.signal });
      expect(res.headers.get('content-type')).toContain('text/event-stream');
      expect(res.headers.get('content-encoding')).toBeNull();
      // A browser on a configured origin may read the stream too.
      expect(res.headers.get('access-control-allow-origin')).toBe(APP_ORIGIN);
      expect(res.headers.get('ratelimit-limit')).not.toBeNull();
      const reader = (res.body as ReadableStream<Uint8Array>).getReader();
      const first = await reader.read();
      expect(new TextDecoder().decode(first.value)).toContain('data: RESYNC');
      ac.abort();
    });
  });

  describe('metrics', () => {
    const scrape = async (token: string | null) => {
      const res = await fetch(`${s.url}/metrics`, token ? { headers: { authorization: `Bearer ${token}` } } : {});
      return { status: res.status, text: await res.text(), type: res.headers.get('content-type') };
    };
    const sample = (text: string, series: string): number => {
      const line = text.split('\n').find((l) => l.startsWith(`${series} `));
      return line ? Number(line.slice(series.length + 1)) : 0;
    };

    it('needs METRICS_TOKEN when one is set', async () => {
      expect((await scrape(null)).status).toBe(401);
      expect((await scrape('wrong-token')).status).toBe(401);
      const ok = await scrape('scrape-secret');
      expect(ok.status).toBe(200);
      expect(ok.type).toContain('text/plain');
    });

    it('counts requests by operation and status, with latency, open streams and runner actions', async () => {
      const series = 'outreach_http_requests_total{operation="tags.getAll",method="GET",status="200"}';
      const before = sample((await scrape('scrape-secret')).text, series);
      for (let i = 0; i < 3; i++) await s.call(s.ours.ownerKey, 'tags.getAll');
      await s.call('live_unknownunknownunknownunknownunknown00', 'tags.getAll');
      const after = (await scrape('scrape-secret')).text;
      expect(sample(after, series)).toBe(before + 3);
      expect(sample(after, 'outreach_http_requests_total{operation="tags.getAll",method="GET",status="401"}')).toBeGreaterThanOrEqual(1);
      expect(sample(after, 'outreach_http_request_duration_seconds_count{operation="tags.getAll"}')).toBeGreaterThanOrEqual(before + 4);
      // A path that is no operation is one label, not one series per path.
      await s.call(s.ours.ownerKey, 'no.such.operation.42');
      expect((await scrape('scrape-secret')).text).not.toContain('no.such.operation.42');

      const ac = new AbortController();
      const stream = await fetch(`${s.url}/replication/tags/stream`, { headers: { authorization: `Bearer ${s.ours.ownerKey}` }, signal: ac.signal });
      await (stream.body as ReadableStream<Uint8Array>).getReader().read();
      expect(sample((await scrape('scrape-secret')).text, 'outreach_replication_streams_open')).toBe(1);
      ac.abort();
      await expect.poll(async () => sample((await scrape('scrape-secret')).text, 'outreach_replication_streams_open')).toBe(0);

      metrics.runnerActions.inc({ kind: 'email', outcome: 'done' }, 2);
      expect(sample((await scrape('scrape-secret')).text, 'outreach_runner_actions_total{kind="email",outcome="done"}')).toBe(2);
    });
  });

  describe('API reference page', () => {
    it('serves /docs as HTML whose scripts come from this server (works offline)', async () => {
      const res = await fetch(`${s.url}/docs`, { redirect: 'follow' });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toContain('text/html');
      const html = await res.text();
      expect(html).toContain('/openapi.json');
      const scripts = [...html.matchAll(/<script[^>]*\ssrc="([^"]+)"/g)].map((m) => m[1] ?? '');
      expect(scripts.length).toBeGreaterThan(0);
      for (const src of scripts) {
        expect(src, 'no CDN script').not.toMatch(/^(https?:)?\/\//);
        const js = await fetch(new URL(src, `${s.url}/docs/`));
        expect(js.status, src).toBe(200);
        expect((await js.text()).length).toBeGreaterThan(10_000);
      }
      expect(html).not.toMatch(/<link[^>]+href="(https?:)?\/\//);
    });
  });

  describe('OpenAPI document', () => {
    type Doc = {
      openapi: string;
      servers?: { url: string }[];
      tags?: { name: string; description?: string }[];
      paths: Record<string, Record<string, { description?: string; tags?: string[]; parameters?: { name: string; required?: boolean; in: string }[]; responses: Record<string, { content?: Record<string, { schema?: unknown; example?: unknown }> }>; requestBody?: { content: Record<string, { example?: unknown }> } }>>;
      components: { schemas: Record<string, unknown>; securitySchemes: Record<string, unknown> };
    };
    let doc: Doc;
    beforeAll(async () => {
      doc = (await (await fetch(`${s.url}/openapi.json`)).json()) as Doc;
    });

    it('is a valid OpenAPI 3.1 document', async () => {
      await expect(SwaggerParser.validate(structuredClone(doc) as never)).resolves.toBeTruthy();
    });

    it('has servers, declared tags with descriptions, and a security scheme', () => {
      expect(doc.servers?.length).toBeGreaterThan(0);
      const declared = new Set((doc.tags ?? []).map((t) => t.name));
      for (const t of doc.tags ?? []) expect(t.description, t.name).toBeTruthy();
      for (const [path, methods] of Object.entries(doc.paths)) {
        for (const m of Object.values(methods)) for (const t of m.tags ?? []) expect(declared.has(t), `${path} tag ${t}`).toBe(true);
      }
      expect(declared).toContain('campaigns');
      expect(doc.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    });

    it('describes every operation, names its answer schema, gives examples, and keeps answers open', () => {
      for (const name of OPERATION_NAMES) {
        const op = OPS[name] as OpDef;
        const entry = doc.paths[`/${name}`]?.[op.method.toLowerCase()];
        expect(entry, name).toBeDefined();
        if (!entry) continue;
        expect(entry.description?.length ?? 0, name).toBeGreaterThan(op.summary.length);
        const ok = entry.responses['200']?.content?.['application/json'];
        expect(ok?.schema, name).toEqual({ $ref: expect.stringMatching(/^#\/components\/schemas\/\w+Output$/) });
        expect(ok?.example, name).toBeDefined();
        if (op.method === 'POST') expect(entry.requestBody?.content['application/json']?.example, name).toBeDefined();
        const ref = (ok?.schema as { $ref: string }).$ref.split('/').pop() ?? '';
        const schema = doc.components.schemas[ref];
        expect(schema, ref).toBeDefined();
        expect(JSON.stringify(schema), `${name} answer is open`).not.toContain('"additionalProperties":false');
      }
    });

    it('marks timestamps as date-time and requires what the server requires', () => {
      const text = JSON.stringify(doc.components.schemas);
      expect(text).toMatch(/"createdAt":\{"type":"string","format":"date-time"/);
      expect(text).not.toMatch(/"updatedAt":\{"type":"string"\}/);
      const metricsOp = doc.paths['/campaigns.getMetrics']?.get;
      expect(metricsOp?.parameters?.find((p) => p.name === 'campaignIds')?.required).toBe(true);
      // The document and the server agree: without campaignIds the call is refused.
      return s.call(s.ours.ownerKey, 'campaigns.getMetrics').then((r) => expect(r.status).toBe(400));
    });
  });
});
