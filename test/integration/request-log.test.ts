/** The `request completed` line says who and what a request was: the workspace, the API key's id
 * (never the key), the operation and the error code, on that one line; no line carries the key, the
 * query string or the body. A real server writing pino's JSON lines, read as an operator would. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer } from './support/server.ts';
import type { TestServer } from './support/server.ts';

type Line = Record<string, unknown> & { msg?: string; reqId?: string };

describe('request log lines', () => {
  let s: TestServer;
  let ownerKeyId: string;
  beforeAll(async () => {
    s = await startTestServer('pglite', { logLevel: 'info', rateLimitPerMinute: 4 });
    const [row] = await s.sql.query<{ id: string }>("SELECT id FROM documents WHERE workspace_id = $1 AND collection = 'apiKeys' AND doc->>'memberId' = $2", [s.ours.workspaceId, s.ours.ownerId]);
    if (!row) throw new Error('no key document');
    ownerKeyId = row.id;
  });
  afterAll(async () => {
    await s?.close();
  });

  const lines = (): Line[] => s.logs.map((l) => JSON.parse(l) as Line);
  const completed = (requestId: string | null): Line => {
    const found = lines().filter((l) => l.reqId === requestId && l.msg === 'request completed');
    expect(found, `one request completed line for ${requestId}`).toHaveLength(1);
    return found[0] as Line;
  };

  it('a 200 names the workspace, key id and operation, and not the query string or the key', async () => {
    const res = await s.call<{ leads: unknown[] }>(s.ours.ownerKey, 'campaigns.leads.search', { query: 'Smithsonian-secret-search' });
    expect(res.status).toBe(200);
    const line = completed(res.headers.get('x-request-id'));
    expect(line).toMatchObject({ level: 30, workspaceId: s.ours.workspaceId, keyId: ownerKeyId, operation: 'campaigns.leads.search', res: { statusCode: 200 } });
    expect(line).not.toHaveProperty('code');
    expect(typeof line.responseTime).toBe('number');
  });

  it('a refusal carries its error code on the same line, and nothing of the body', async () => {
    const res = await s.call<{ error: { code: string } }>(s.ours.ownerKey, 'campaigns.create', { name: `Body-marker-${'x'.repeat(300)}`, unknownField: 'Body-marker-2' });
    expect(res.status).toBe(400);
    const line = completed(res.headers.get('x-request-id'));
    expect(line).toMatchObject({ workspaceId: s.ours.workspaceId, keyId: ownerKeyId, operation: 'campaigns.create', code: res.body.error.code, res: { statusCode: 400 } });
    const missing = await s.call<{ error: { code: string } }>(s.ours.memberKey, 'campaigns.leads.get', { leadId: '00000000-0000-4000-8000-000000000000' });
    expect(missing.status).toBe(404);
    expect(completed(missing.headers.get('x-request-id'))).toMatchObject({ workspaceId: s.ours.workspaceId, operation: 'campaigns.leads.get', code: 'NOT_FOUND', res: { statusCode: 404 } });
    expect(completed(missing.headers.get('x-request-id')).keyId).not.toBe(ownerKeyId);
  });

  it('a 429 says whose key reached the limit, and for which operation', async () => {
    let limited: Awaited<ReturnType<typeof s.call>> | null = null;
    for (let i = 0; i < 10 && !limited; i++) {
      const res = await s.call(s.ours.ownerKey, 'tags.getAll', {}, { method: 'GET' });
      if (res.status === 429) limited = res;
    }
    if (!limited) throw new Error('never rate limited');
    expect(completed(limited.headers.get('x-request-id'))).toMatchObject({ workspaceId: s.ours.workspaceId, keyId: ownerKeyId, operation: 'tags.getAll', code: 'RATE_LIMITED', res: { statusCode: 429 } });
  });

  it('an unknown key is 401 with its code and no workspace; no line ever holds a key, a query string or a body', async () => {
    const res = await s.call<{ error: { code: string } }>('live_not-a-real-key-0000000000', 'tags.getAll', {}, { method: 'GET' });
    expect(res.status).toBe(401);
    const line = completed(res.headers.get('x-request-id'));
    expect(line).toMatchObject({ code: 'UNAUTHENTICATED', operation: 'tags.getAll', res: { statusCode: 401 } });
    expect(line).not.toHaveProperty('workspaceId');
    const all = s.logs.join('\n');
    for (const secret of [s.ours.ownerKey, s.ours.memberKey, 'live_not-a-real-key', 'Smithsonian-secret-search', 'Body-marker']) expect(all).not.toContain(secret);
  });
});
