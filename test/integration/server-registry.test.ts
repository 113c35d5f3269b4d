/** Every operation of the registry is served by the one generic route: found, method-checked,
 * authenticated, answering with its output schema or an error body; and documented in OpenAPI. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_STATUS } from '../../shared/errors.ts';
import type { OpDef } from '../../shared/ops/define.ts';
import { OPERATION_NAMES, operations } from '../../shared/ops/index.ts';
import { BACKENDS } from './support/db.ts';
import { seedFixtures } from './support/fixtures.ts';
import type { Fixtures } from './support/fixtures.ts';
import { sampleInput } from './support/inputs.ts';
import { startTestServer } from './support/server.ts';
import type { TestServer } from './support/server.ts';

const OPS = operations as Record<string, OpDef>;
type ErrorBody = { error: { code: keyof typeof ERROR_STATUS; message: string; details: Record<string, unknown> } };

function expectErrorBody(status: number, body: unknown, label: string): void {
  const e = (body as ErrorBody).error;
  expect(e, `${label}: error body`).toBeDefined();
  expect(typeof e.message, label).toBe('string');
  expect(e.message.length, label).toBeGreaterThan(0);
  expect(typeof e.details, label).toBe('object');
  expect(Object.keys(ERROR_STATUS), label).toContain(e.code);
  expect(status, `${label}: status of ${e.code}`).toBe(ERROR_STATUS[e.code]);
  expect(JSON.stringify(body), `${label}: no stack in the body`).not.toMatch(/\n\s+at /);
}

describe.each(BACKENDS)('the operation registry over HTTP (%s)', (backend) => {
  let s: TestServer;
  let fx: Fixtures;
  beforeAll(async () => {
    s = await startTestServer(backend);
    fx = await seedFixtures(s.db, s.ours, s.clock.now().toISOString(), 'Acme');
  });
  afterAll(async () => {
    await s?.close();
  });

  it('has operations to serve', () => {
    expect(OPERATION_NAMES.length).toBeGreaterThan(8);
  });

  for (const name of OPERATION_NAMES) {
    const op = OPS[name] as OpDef;

    it(`${name}: answered by the route with its output schema or an error body`, async () => {
      // An empty input first (most operations refuse it cleanly), then a plausible one.
      for (const input of [{}, sampleInput(op, fx, s.clock.now().toISOString()).input]) {
        const res = await s.call(s.ours.ownerKey, name, input, { method: op.method });
        const unknown = res.status === 404 && (res.body as ErrorBody).error?.code === 'UNKNOWN_OPERATION';
        expect(unknown, `${name} is served`).toBe(false);
        if (process.env.SMOKE_REPORT) process.stdout.write(`SMOKE ${name} ${res.status} ${res.status === 200 ? '' : (res.body as ErrorBody).error.message}\n`);
        if (res.status === 200) {
          const parsed = op.output.safeParse(res.body);
          expect(parsed.success, `${name}: response matches the output schema: ${JSON.stringify(parsed.error?.issues ?? [])}`).toBe(true);
        } else {
          expectErrorBody(res.status, res.body, name);
          expect(res.status, `${name}: ${JSON.stringify(res.body)}`).toBeLessThan(500);
        }
        expect(res.headers.get('x-request-id')).toBeTruthy();
      }
    });

    it(`${name}: the other method is refused with 405 and Allow`, async () => {
      const other = op.method === 'GET' ? 'POST' : 'GET';
      const res = await s.call(s.ours.ownerKey, name, {}, { method: other });
      expect(res.status).toBe(405);
      expect((res.body as ErrorBody).error.code).toBe('METHOD_NOT_ALLOWED');
      expect(res.headers.get('allow')).toBe(op.method);
    });

    it(`${name}: refused without a key, with an unknown key and with a malformed header`, async () => {
      const before = await s.maxSeq(s.ours.workspaceId);
      const variants: Record<string, string>[] = [{}, { authorization: 'Bearer live_NotARealKeyNotARealKeyNotARealKey1234' }, { authorization: 'Basic abc' }];
      for (const headers of variants) {
        const res = await s.call(null, name, sampleInput(op, fx, s.clock.now().toISOString()).input, { method: op.method, headers });
        expect(res.status).toBe(401);
        expect((res.body as ErrorBody).error.code).toBe('UNAUTHENTICATED');
      }
      expect(await s.maxSeq(s.ours.workspaceId)).toBe(before);
    });
  }

  it('answers unknown operations and paths with 404 UNKNOWN_OPERATION, before asking for a key', async () => {
    for (const path of ['nope.nothing', 'toString', '__proto__', 'constructor', 'campaigns.leads.search/extra']) {
      const res = await s.call(null, path, {}, { method: 'GET' });
      expect(res.status, path).toBe(404);
      expect((res.body as ErrorBody).error.code, path).toBe('UNKNOWN_OPERATION');
    }
  });

  it('publishes an OpenAPI document (no key) describing every operation, its input, output and errors', async () => {
    const res = await fetch(`${s.url}/openapi.json`);
    expect(res.status).toBe(200);
    const doc = (await res.json()) as {
      openapi: string;
      paths: Record<string, Record<string, { parameters?: { name: string; in: string }[]; requestBody?: unknown; responses: Record<string, unknown>; security: unknown[] }>>;
      components: { securitySchemes: Record<string, { scheme: string }>; schemas: Record<string, unknown> };
    };
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.components.securitySchemes.bearer?.scheme).toBe('bearer');
    expect(doc.components.schemas.ErrorBody).toBeDefined();
    for (const name of OPERATION_NAMES) {
      const op = OPS[name] as OpDef;
      const entry = doc.paths[`/${name}`]?.[op.method.toLowerCase()];
      expect(entry, name).toBeDefined();
      if (!entry) continue;
      expect(entry.security).toEqual([{ bearer: [] }]);
      expect(Object.keys(entry.responses)).toEqual(expect.arrayContaining(['200', '400', '401', '404', '429', '500']));
      expect(JSON.stringify(entry.responses['400'])).toContain('ErrorBody');
      if (op.method === 'POST') expect(entry.requestBody, name).toBeDefined();
      if (op.mutates) expect(Object.keys(entry.responses)).toEqual(expect.arrayContaining(['409', '422']));
    }
    for (const path of ['/replication/collections', '/replication/refusals', '/replication/{collection}/pull', '/replication/{collection}/push', '/replication/{collection}/stream']) {
      expect(doc.paths[path], path).toBeDefined();
    }
    // The pull's count of what remains (the desktop's "n of m"): the parameter and the answer's field.
    expect(doc.paths['/replication/{collection}/pull']?.get?.parameters?.map((p) => p.name)).toEqual(expect.arrayContaining(['checkpoint', 'limit', 'count']));
    expect(Object.keys((doc.components.schemas.ReplicationPullPage as { properties: Record<string, unknown> }).properties)).toEqual(['documents', 'checkpoint', 'remaining']);
    const search = doc.paths['/campaigns.leads.search']?.get;
    if (search) expect(search.parameters?.map((p) => p.name)).toEqual(expect.arrayContaining(['query', 'pipelineStage', 'cursor']));
  });

  it('reports health without a key', async () => {
    const res = await fetch(`${s.url}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true, database: backend, identityKeys: { state: 'done' } });
  });
});
