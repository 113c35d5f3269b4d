/**
 * Fuzzing the sync server: a real server on loopback, its own OpenAPI document, and for every
 * operation generated bad inputs (wrong types, NUL and lone surrogates in every string field, huge and
 * negative numbers, deep nesting, huge arrays, unknown fields, foreign and non-existent ids, tampered
 * cursors, bad dates, empty and non-JSON bodies, wrong methods and content types, bad idempotency
 * keys), then the replication routes and malformed HTTP on a raw socket.
 *
 * Asserted: no answer is a 5xx, every error body has the contract's shape
 * `{"error": {"code", "message", "details"}}`, and the server never logged that bad input reached the
 * database. Deterministic: the cases come from a seeded generator (FUZZ_SEED, default 12) and run one
 * at a time, so a failure names its case and reproduces with the same seed. Bounded: at most
 * FUZZ_CASES_PER_OP cases per operation (default 32) plus NUL and a lone surrogate in every field.
 */
import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPLICATED_COLLECTIONS } from '../../shared/model/index.ts';
import { seededRandom } from '../support/harness.ts';
import { BACKENDS } from '../integration/support/db.ts';
import { seedFixtures } from '../integration/support/fixtures.ts';
import type { Fixtures } from '../integration/support/fixtures.ts';
import { idFor } from '../integration/support/inputs.ts';
import { startTestServer } from '../integration/support/server.ts';
import type { TestServer } from '../integration/support/server.ts';
import type { Schema } from '../integration/support/inputs.ts';

const SEED = Number(process.env.FUZZ_SEED ?? 12);
const CASES_PER_OP = Number(process.env.FUZZ_CASES_PER_OP ?? 32);

type OpenApi = { paths: Record<string, Record<string, { operationId?: string; parameters?: { name: string; in: string; schema: Schema }[]; requestBody?: { content: { 'application/json': { schema: Schema } } } }>> };

type Outcome = { label: string; status: number; body: string };

const NUL = 'a\u0000b';
const LONE = 'x\udfffy';
const BAD_STRINGS = [
  NUL,
  LONE,
  '\ud800',
  '',
  '   ',
  'x'.repeat(100_001),
  '0000-01-01T00:00:00Z',
  '275760-09-13T00:00:00.000Z',
  '2026-02-30T00:00:00Z',
  '9999-99-99',
  'not a date',
  "'; DROP TABLE documents; --",
  '%00%ff',
  '\u202e\ufeff',
  '🙂'.repeat(3000),
  '{"seq":1}',
];
const BAD_VALUES: unknown[] = [null, true, false, 0, -1, -1e308, 1e308, 2 ** 53 + 1, 1.5, [], {}, [[[[[]]]]], { a: { b: { c: {} } } }, Array.from({ length: 20_000 }, (_, i) => i), 'text'];

const nested = (depth: number): unknown => {
  let v: unknown = 'deep';
  for (let i = 0; i < depth; i++) v = i % 2 ? [v] : { a: v };
  return v;
};
const deepText = (depth: number): string => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);

/** Whether a body is the contract's error body. */
function isErrorBody(text: string): boolean {
  try {
    const b = JSON.parse(text) as { error?: { code?: unknown; message?: unknown; details?: unknown } };
    const e = b.error;
    return (
      e !== undefined && typeof e.code === 'string' && /^[A-Z][A-Z_]+$/.test(e.code) && typeof e.message === 'string' && e.message.length > 0 &&
      e.details !== null && typeof e.details === 'object' && !Array.isArray(e.details)
    );
  } catch {
    return false;
  }
}

/** What is wrong with an answer, or null. */
function problemOf(o: Outcome): string | null {
  if (o.status >= 500) return `${o.label}: ${o.status} ${o.body.slice(0, 300)}`;
  if (o.status >= 400 && !isErrorBody(o.body)) return `${o.label}: ${o.status} body outside the contract: ${o.body.slice(0, 300)}`;
  return null;
}

/** One answer over a raw socket: status and body (the connection is closed by either side). */
function rawRequest(url: string, payload: string | Buffer): Promise<Outcome & { raw: string }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) });
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => socket.destroy(), 1_500);
    socket.on('connect', () => socket.write(payload));
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      const raw = Buffer.concat(chunks).toString('utf8');
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(raw);
      const sep = raw.indexOf('\r\n\r\n');
      const head = sep === -1 ? raw : raw.slice(0, sep);
      const len = /content-length: *(\d+)/i.exec(head);
      const rest = sep === -1 ? '' : raw.slice(sep + 4);
      resolve({ label: '', status: m ? Number(m[1]) : 0, body: len ? rest.slice(0, Number(len[1])) : rest, raw });
    });
    socket.on('timeout', () => reject(new Error('raw request timed out')));
  });
}

describe.each(BACKENDS)('fuzzing the sync server (%s)', (backend) => {
  let s: TestServer;
  let ours: Fixtures;
  let theirs: Fixtures;
  let api: OpenApi;
  const random = seededRandom(SEED);
  /** Request id -> case label, to name the case behind a log line. */
  const labels = new Map<string, string>();
  const pick = <T,>(list: readonly T[]): T => list[Math.floor(random() * list.length)] as T;

  beforeAll(async () => {
    s = await startTestServer(backend, { rateLimitPerMinute: 10_000_000 });
    const now = s.clock.now().toISOString();
    ours = await seedFixtures(s.db, s.ours, now, 'Acme');
    theirs = await seedFixtures(s.db, s.theirs, now, 'Globex');
    api = (await (await fetch(`${s.url}/openapi.json`)).json()) as OpenApi;
  }, 120_000);
  afterAll(async () => {
    await s?.close();
  });

  /** Sends one request with fetch and records its outcome. */
  async function send(label: string, path: string, init: { method: string; headers?: Record<string, string>; body?: string; key?: string | null }): Promise<Outcome> {
    const headers: Record<string, string> = { ...(init.key === null ? {} : { authorization: `Bearer ${init.key ?? s.ours.ownerKey}` }), ...init.headers };
    const res = await fetch(`${s.url}${path}`, { method: init.method, headers, body: init.body, signal: AbortSignal.timeout(20_000) });
    labels.set(res.headers.get('x-request-id') ?? '', label);
    const type = res.headers.get('content-type') ?? '';
    // A live stream that opened is not an error; do not wait for it to end.
    if (type.startsWith('text/event-stream')) {
      await res.body?.cancel();
      return { label, status: res.status, body: '' };
    }
    return { label, status: res.status, body: await res.text() };
  }

  /** A plausible value for a schema, with the fixture ids of `f` for id fields. */
  function plausible(name: string, schema: Schema, opName: string, f: Fixtures, depth = 0): unknown {
    const options = schema.anyOf ?? schema.oneOf;
    if (options) return plausible(name, options.find((o) => o.type !== 'null') ?? (options[0] as Schema), opName, f, depth);
    if (schema.const !== undefined) return schema.const;
    if (schema.enum) return schema.enum.find((e) => e !== null) ?? null;
    const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
    const id = idFor(name, opName, f);
    switch (type) {
      case 'string':
        if (typeof id === 'string') return id;
        if (schema.format === 'date-time') return s.clock.now().toISOString();
        if (schema.format === 'uuid') return randomUUID();
        if (schema.format === 'email' || /email/i.test(name)) return 'fuzz@example.test';
        if (/url/i.test(name) || schema.format === 'uri') return 'https://example.test/in/fuzz';
        if (/color/i.test(name)) return '#123456';
        return 'Fuzz'.padEnd(schema.minLength ?? 0, 'z');
      case 'integer':
      case 'number':
        return Math.max(schema.minimum ?? 1, Math.min(schema.maximum ?? 1, 1));
      case 'boolean':
        return false;
      case 'array':
        if (Array.isArray(id)) return id;
        return depth > 3 || !schema.items ? [] : Array.from({ length: Math.max(1, schema.minItems ?? 1) }, () => plausible(name.replace(/s$/, ''), schema.items as Schema, opName, f, depth + 1));
      case 'object': {
        if (depth > 3) return {};
        const out: Record<string, unknown> = {};
        for (const [k, sub] of Object.entries(schema.properties ?? {})) {
          if (k === 'dryRun' || k === 'cursor') continue;
          if ((schema.required ?? []).includes(k) || idFor(k, opName, f) !== undefined || random() < 0.5) out[k] = plausible(k, sub, opName, f, depth + 1);
        }
        return out;
      }
      default:
        return 'Fuzz';
    }
  }

  /** Every leaf path of a value (objects and arrays, a few levels deep). */
  function leafPaths(v: unknown, path: (string | number)[] = []): { path: (string | number)[]; value: unknown }[] {
    if (path.length > 4) return [];
    if (Array.isArray(v)) return v.length === 0 ? [{ path, value: v }] : v.slice(0, 2).flatMap((x, i) => leafPaths(x, [...path, i]));
    if (v !== null && typeof v === 'object') {
      const entries = Object.entries(v);
      return entries.length === 0 ? [{ path, value: v }] : entries.flatMap(([k, x]) => leafPaths(x, [...path, k]));
    }
    return [{ path, value: v }];
  }

  function withValue(base: Record<string, unknown>, path: (string | number)[], value: unknown): Record<string, unknown> {
    const copy = structuredClone(base);
    let cur: Record<string | number, unknown> = copy;
    for (let i = 0; i < path.length - 1; i++) cur = cur[path[i] as string] as Record<string | number, unknown>;
    cur[path[path.length - 1] as string] = value;
    return copy;
  }

  const foreignFixtures = (): Fixtures => theirs;
  const missingFixtures = (): Fixtures => Object.fromEntries(Object.entries(ours).map(([k, v]) => [k, k === 'marker' ? v : randomUUID()])) as Fixtures;

  function queryOf(input: Record<string, unknown>): string {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(input)) {
      if (v === undefined) continue;
      if (Array.isArray(v)) for (const item of v) q.append(k, typeof item === 'object' && item !== null ? JSON.stringify(item) : String(item));
      else q.append(k, typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v));
    }
    const text = q.toString();
    return text ? `?${text}` : '';
  }

  /** The bad requests for one operation, seeded. */
  function casesFor(name: string, method: 'get' | 'post', schema: Schema): { label: string; path: string; init: Parameters<typeof send>[2] }[] {
    const base = plausible('input', schema, name, ours) as Record<string, unknown>;
    const cases: { label: string; path: string; init: Parameters<typeof send>[2] }[] = [];
    const call = (label: string, input: unknown, extra: { headers?: Record<string, string>; raw?: string } = {}) => {
      if (method === 'get') {
        const query = extra.raw ?? queryOf(input as Record<string, unknown>);
        cases.push({ label: `${name} ${label}`, path: `/${name}${query}`, init: { method: 'GET', headers: extra.headers } });
      } else {
        cases.push({ label: `${name} ${label}`, path: `/${name}`, init: { method: 'POST', headers: { 'content-type': 'application/json', ...extra.headers }, body: extra.raw ?? JSON.stringify(input) } });
      }
    };
    // Every leaf: NUL and a lone surrogate always, then seeded wrong values.
    const leaves = leafPaths(base).filter((l) => l.path.length > 0);
    const perLeaf: { label: string; input: unknown }[] = [];
    for (const leaf of leaves) {
      const where = leaf.path.join('.');
      perLeaf.push({ label: `${where}=NUL`, input: withValue(base, leaf.path, NUL) }, { label: `${where}=lone surrogate`, input: withValue(base, leaf.path, LONE) });
      for (let i = 0; i < 3; i++) {
        const v = random() < 0.5 ? pick(BAD_STRINGS) : pick(BAD_VALUES);
        perLeaf.push({ label: `${where}=${JSON.stringify(v)?.slice(0, 40)}`, input: withValue(base, leaf.path, v) });
      }
    }
    // Whole-request cases.
    const ids = leaves.filter((l) => typeof l.value === 'string' && /^[0-9a-f-]{36}$/.test(l.value));
    const whole: { label: string; input: unknown; extra?: { headers?: Record<string, string>; raw?: string } }[] = [
      { label: 'plausible input', input: base },
      { label: 'foreign ids', input: plausible('input', schema, name, foreignFixtures()) },
      { label: 'non-existent ids', input: plausible('input', schema, name, missingFixtures()) },
      { label: 'unknown field', input: { ...base, notAField: 1, __proto__x: 'y' } },
      { label: 'NUL field name', input: { ...base, [NUL]: 1 } },
      { label: 'tampered cursor (garbage)', input: { ...base, cursor: 'not-a-cursor%%' } },
      { label: 'tampered cursor (NUL inside)', input: { ...base, cursor: Buffer.from(JSON.stringify({ k: [NUL], id: NUL })).toString('base64url') } },
      { label: 'tampered cursor (nested)', input: { ...base, cursor: Buffer.from(JSON.stringify({ k: [nested(50)], id: 'x' })).toString('base64url') } },
      { label: 'tampered cursor (types)', input: { ...base, cursor: Buffer.from(JSON.stringify({ k: [{ $gt: 1 }, 1e308, [1]], id: 5 })).toString('base64url') } },
      { label: 'tampered cursor (surrogate)', input: { ...base, cursor: Buffer.from(JSON.stringify({ k: ['\udfff'], id: '\ud800' })).toString('base64url') } },
      { label: 'deep nesting 60', input: { ...base, [Object.keys(base)[0] ?? 'x']: nested(60) } },
      { label: 'huge array', input: { ...base, [Object.keys(base)[0] ?? 'x']: Array.from({ length: 50_000 }, () => 'x') } },
    ];
    if (ids.length > 0) whole.push({ label: 'id with NUL', input: withValue(base, (ids[0] as { path: (string | number)[] }).path, `${randomUUID().slice(0, 35)}\u0000`) });
    if (method === 'post') {
      whole.push(
        { label: 'empty body', input: null, extra: { raw: '' } },
        { label: 'non-JSON body', input: null, extra: { raw: '{"a": nope' } },
        { label: 'JSON array body', input: null, extra: { raw: '[1,2,3]' } },
        { label: 'JSON string body', input: null, extra: { raw: '"text"' } },
        { label: 'body nested 20000 deep', input: null, extra: { raw: deepText(20_000) } },
        { label: 'body nested 20000 deep with Idempotency-Key', input: null, extra: { raw: deepText(20_000), headers: { 'idempotency-key': randomUUID() } } },
        { label: 'Idempotency-Key too long', input: base, extra: { headers: { 'idempotency-key': 'k'.repeat(300) } } },
        { label: 'Idempotency-Key latin1', input: base, extra: { headers: { 'idempotency-key': 'clé-\u00ff' } } },
        { label: 'Idempotency-Key with spaces', input: base, extra: { headers: { 'idempotency-key': 'a b' } } },
        { label: 'huge number body', input: null, extra: { raw: `{"n": 1e99999, "m": -1e99999, "x": 123456789012345678901234567890}` } },
      );
    } else {
      whole.push(
        { label: 'raw %00 query', input: null, extra: { raw: `?${Object.keys(base)[0] ?? 'q'}=a%00b` } },
        { label: 'raw invalid UTF-8 query', input: null, extra: { raw: `?${Object.keys(base)[0] ?? 'q'}=x%ED%BF%BFy&query=%ff%fe` } },
        { label: 'repeated parameters', input: null, extra: { raw: `?${Object.keys(base)[0] ?? 'q'}=1&${Object.keys(base)[0] ?? 'q'}=2&limit=1&limit=x` } },
        { label: 'huge limit', input: { ...base, limit: '99999999999999999999999' } },
        { label: 'negative limit', input: { ...base, limit: '-5' } },
      );
    }
    // Bounded: every whole-request case, then seeded leaf cases up to the cap.
    const leafBudget = Math.max(0, CASES_PER_OP - whole.length);
    // NUL and a lone surrogate in every leaf always; the seeded wrong values fill the rest of the budget.
    const always = perLeaf.filter((c) => c.label.endsWith('=NUL') || c.label.endsWith('=lone surrogate'));
    const others = perLeaf.filter((c) => !always.includes(c));
    const room = Math.max(0, leafBudget - always.length);
    const leafCases = [...always, ...others.filter(() => random() < room / Math.max(1, others.length)).slice(0, room)];
    for (const c of whole) call(c.label, c.input, c.extra ?? {});
    for (const c of leafCases) call(c.label, c.input);
    // The wrong method.
    cases.push({ label: `${name} wrong method`, path: `/${name}`, init: { method: method === 'get' ? 'POST' : 'GET' } });
    cases.push({ label: `${name} DELETE`, path: `/${name}`, init: { method: 'DELETE' } });
    if (method === 'post') {
      cases.push({ label: `${name} text/plain body`, path: `/${name}`, init: { method: 'POST', headers: { 'content-type': 'text/plain' }, body: JSON.stringify(base) } });
      cases.push({ label: `${name} unknown content type`, path: `/${name}`, init: { method: 'POST', headers: { 'content-type': 'application/x-evil' }, body: 'x=1' } });
      cases.push({ label: `${name} JSON latin1 charset`, path: `/${name}`, init: { method: 'POST', headers: { 'content-type': 'application/json; charset=latin1' }, body: JSON.stringify(base) } });
    }
    cases.push({ label: `${name} no key`, path: `/${name}`, init: { method: method.toUpperCase(), key: null } });
    cases.push({ label: `${name} bad key with NUL-like text`, path: `/${name}`, init: { method: method.toUpperCase(), key: 'live_\u00ff\u00fe' } });
    return cases;
  }

  /** Error log lines (and gaps the database caught), each with the case that caused it. */
  function errorsLogged(): string[] {
    const lines = s.logs.filter((l) => /"level":(50|60)/.test(l) || l.includes('bad input reached the database'));
    s.logs.length = 0;
    return lines.map((l) => {
      const id = /"reqId":"([^"]+)"/.exec(l)?.[1] ?? '';
      return `${labels.get(id) ?? 'unknown request'}: ${l.slice(0, 400)}`;
    });
  }

  it('every operation refuses generated bad input with a 4xx in the contract shape', { timeout: 240_000 }, async () => {
    const failures: string[] = [];
    let count = 0;
    for (const [path, methods] of Object.entries(api.paths)) {
      if (path.startsWith('/replication') || path === '/openapi.json' || path === '/healthz' || path === '/metrics' || path === '/docs') continue;
      const name = path.slice(1);
      for (const [method, op] of Object.entries(methods)) {
        if (method !== 'get' && method !== 'post') continue;
        const schema: Schema =
          method === 'post'
            ? (op.requestBody?.content['application/json'].schema ?? { type: 'object' })
            : { type: 'object', properties: Object.fromEntries((op.parameters ?? []).filter((p) => p.in === 'query').map((p) => [p.name, p.schema])) };
        for (const c of casesFor(name, method, schema)) {
          count++;
          const problem = problemOf(await send(c.label, c.path, c.init));
          if (problem) failures.push(problem);
        }
      }
    }
    expect(count).toBeGreaterThan(500);
    expect(failures, `seed ${SEED}: ${failures.length} bad answers of ${count}\n${failures.slice(0, 30).join('\n')}`).toEqual([]);
    expect(errorsLogged(), `seed ${SEED}`).toEqual([]);
  });

  it('the replication routes refuse bad input with a 4xx in the contract shape', { timeout: 120_000 }, async () => {
    const failures: string[] = [];
    const check = async (label: string, path: string, init: Parameters<typeof send>[2]) => {
      const problem = problemOf(await send(label, path, init));
      if (problem) failures.push(problem);
    };
    const badCheckpoints = ['{"seq":-1}', '{"seq":1e400}', '{"seq":"1"}', `{"seq":1,"x":"${NUL}"}`, '[[[[[[[[[[', '['.repeat(4000) + ']'.repeat(4000), 'null', '%ff', NUL, '{"seq":1.5}', '{"seq":9007199254740993}'];
    const badLimits = ['0', '-1', '1e9', 'abc', '2001', NUL, ''];
    const badVersions = ['-1', '1e400', 'abc', '99999', NUL, '0x1'];
    const badCounts = ['1', 'TRUE', 'yes', NUL, 'true&count=true'];
    for (const c of REPLICATED_COLLECTIONS) {
      for (const cp of badCheckpoints) await check(`pull ${c} checkpoint=${cp.slice(0, 30)}`, `/replication/${c}/pull?checkpoint=${encodeURIComponent(cp)}`, { method: 'GET' });
      for (const l of badLimits) await check(`pull ${c} limit=${l}`, `/replication/${c}/pull?limit=${encodeURIComponent(l)}`, { method: 'GET' });
      for (const n of badCounts) await check(`pull ${c} count=${n}`, `/replication/${c}/pull?count=${n.includes('&') ? n : encodeURIComponent(n)}`, { method: 'GET' });
      for (const v of badVersions) {
        await check(`pull ${c} schemaVersion=${v}`, `/replication/${c}/pull?schemaVersion=${encodeURIComponent(v)}`, { method: 'GET' });
        await check(`stream ${c} schemaVersion=${v}`, `/replication/${c}/stream?schemaVersion=${encodeURIComponent(v)}`, { method: 'GET' });
      }
      await check(`pull ${c} raw invalid encoding`, `/replication/${c}/pull?checkpoint=%ff%fe&limit=%00`, { method: 'GET' });
      const push = (label: string, body: string) => check(`push ${c} ${label}`, `/replication/${c}/push`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      await push('object body', '{}');
      await push('empty body', '');
      await push('rows of numbers', '[1,2,3]');
      await push('row without newDocumentState', '[{}]');
      await push('document null', '[{"newDocumentState":null}]');
      await push('1001 rows', JSON.stringify(Array.from({ length: 1001 }, () => ({ newDocumentState: { id: randomUUID() } }))));
      await push('nested 20000', `[{"newDocumentState":${deepText(20_000)}}]`);
      await push('nested 60', JSON.stringify([{ newDocumentState: nested(60), assumedMasterState: nested(60) }]));

      // Every string field of a real document of this collection: NUL, a lone surrogate, a huge text,
      // a bad date; and every id field pointed at the other workspace and at nothing.
      const pulled = (await (await fetch(`${s.url}/replication/${c}/pull?limit=50`, { headers: { authorization: `Bearer ${s.ours.ownerKey}` } })).json()) as { documents: Record<string, unknown>[] };
      const doc = pulled.documents.find((d) => d._deleted !== true);
      if (!doc) continue;
      const { _deleted: _d, ...plain } = doc;
      for (const leaf of leafPaths(plain).filter((l) => l.path.length > 0)) {
        const where = leaf.path.join('.');
        const variants: unknown[] = typeof leaf.value === 'string'
          ? [NUL, LONE, 'x'.repeat(100_001), '0000-01-01T00:00:00Z', /Id$/.test(String(leaf.path[leaf.path.length - 1])) ? theirs.leadId : '🙂'.repeat(2_000), randomUUID()]
          : [pick(BAD_VALUES), pick(BAD_STRINGS)];
        for (const v of variants) {
          const next = withValue(plain, leaf.path, v);
          await push(`${where}=${JSON.stringify(v)?.slice(0, 30)}`, JSON.stringify([{ assumedMasterState: doc, newDocumentState: next }]));
        }
      }
      await push('new document with NUL id', JSON.stringify([{ newDocumentState: { ...plain, id: 'a\u0000b' } }]));
      await push('foreign document id', JSON.stringify([{ newDocumentState: { ...plain, id: (theirs as Record<string, string>)[`${c.replace(/s$/, '')}Id`] ?? theirs.leadId } }]));
    }
    for (const since of ['0000-01-01T00:00:00Z', '275760-09-13T00:00:00.000Z', '-001000-01-01T00:00:00Z', '2026-02-30T00:00:00Z', 'yesterday', NUL, '9999-12-31T23:59:59.999+14:00', '']) {
      await check(`refusals since=${since}`, `/replication/refusals?since=${encodeURIComponent(since)}`, { method: 'GET' });
    }
    await check('refusals since twice', '/replication/refusals?since=a&since=b', { method: 'GET' });
    await check('unknown collection', `/replication/${encodeURIComponent(NUL)}/pull`, { method: 'GET' });
    await check('apiKeys are not replicated', '/replication/apiKeys/push', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '[]' });
    expect(failures, `seed ${SEED}: ${failures.length} bad answers\n${failures.slice(0, 30).join('\n')}`).toEqual([]);
    expect(errorsLogged(), `seed ${SEED}`).toEqual([]);
  });

  it('malformed HTTP on a raw socket gets a 4xx with the contract body', { timeout: 60_000 }, async () => {
    const key = s.ours.ownerKey;
    const cases: { label: string; payload: string | Buffer; status?: number }[] = [
      { label: 'bad percent-encoding in the path', payload: 'GET /%ff HTTP/1.1\r\nHost: x\r\n\r\n', status: 400 },
      { label: 'bad percent-encoding of an operation', payload: `GET /tags.list%ff%fe HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n\r\n` },
      { label: 'garbage request line', payload: 'GARBAGE\r\n\r\n', status: 400 },
      { label: 'unknown HTTP version', payload: 'GET / HTTP/9.9\r\nHost: x\r\n\r\n' },
      { label: 'headers over 16 KB', payload: `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, status: 431 },
      { label: 'URL over 16 KB', payload: `GET /tags.list?q=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`, status: 431 },
      { label: 'NUL in a header value', payload: 'GET /tags.list HTTP/1.1\r\nHost: x\r\nX-A: a\u0000b\r\n\r\n', status: 400 },
      { label: 'invalid header name', payload: 'GET /tags.list HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\n\r\n', status: 400 },
      { label: 'invalid Content-Length', payload: 'POST /tags.create HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n', status: 400 },
      { label: 'Content-Length and Transfer-Encoding', payload: 'POST /tags.create HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', status: 400 },
      { label: 'bad chunk size', payload: 'POST /tags.create HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\nzz\r\n{}\r\n0\r\n\r\n', status: 400 },
      { label: 'unknown method token', payload: 'FOO /tags.list HTTP/1.1\r\nHost: x\r\n\r\n' },
      { label: 'HTTP/2 preface', payload: 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n' },
      { label: 'bare LF line endings with a control character', payload: 'GET /tags.list HTTP/1.1\nHost: x\u0001\n\n' },
      { label: 'binary noise', payload: Buffer.from(Array.from({ length: 64 }, (_, i) => (i * 37 + SEED) % 256)) },
      { label: 'absolute-form URL with bad encoding', payload: 'GET http://x/%zz HTTP/1.1\r\nHost: x\r\n\r\n' },
      { label: 'body bigger than its Content-Length on keep-alive', payload: 'POST /tags.create HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}GARBAGE / HTTP/1.1\r\n\r\n' },
    ];
    const failures: string[] = [];
    for (const c of cases) {
      const out = await rawRequest(s.url, c.payload);
      // A connection closed without any answer is acceptable only for noise that is not HTTP at all.
      if (out.status === 0) {
        if (c.status !== undefined) failures.push(`${c.label}: no answer`);
        continue;
      }
      // The last answer on the connection is the one about the malformed part.
      const answers = [...out.raw.matchAll(/HTTP\/1\.[01] (\d{3})[^\r]*\r\n([\s\S]*?)\r\n\r\n/g)];
      for (const a of answers) {
        const status = Number(a[1]);
        if (status >= 500) failures.push(`${c.label}: ${status}`);
      }
      const problem = problemOf({ ...out, label: c.label });
      if (problem) failures.push(problem);
      if (c.status !== undefined && out.status !== c.status) failures.push(`${c.label}: expected ${c.status}, got ${out.status} ${out.body.slice(0, 200)}`);
    }
    expect(failures).toEqual([]);
    // The server still answers normally afterwards.
    expect((await fetch(`${s.url}/healthz`)).status).toBe(200);
  });
});
