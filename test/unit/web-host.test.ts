/** The web host: static files with the CSP, client routes, path traversal, and the WebSocket bridge
 * open only to pages of its own origin. */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { ServerMessage } from '../../electron/bridge.ts';
import { Backend } from '../../electron/backend/backend.ts';
import { fileCredentialStore } from '../../electron/backend/credentials.ts';
import { openMemoryLocalDb } from '../../electron/backend/local-db-port.ts';
import { SessionManager } from '../../electron/backend/session.ts';
import { startWebHost } from '../../electron/web-host.ts';
import type { WebHost } from '../../electron/web-host.ts';

let host: WebHost;
let backend: Backend;

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'crm-webhost-'));
  const dist = join(dir, 'dist');
  mkdirSync(join(dist, 'assets'), { recursive: true });
  writeFileSync(join(dist, 'index.html'), '<!doctype html><title>app</title>');
  writeFileSync(join(dist, 'assets', 'app.js'), 'console.log(1)');
  writeFileSync(join(dir, 'secret.txt'), 'do not serve');
  const session = new SessionManager({
    dataDir: dir,
    openDb: ({ workspaceId }) => openMemoryLocalDb({ workspaceId }),
    credentials: fileCredentialStore(join(dir, 'credentials.json')),
    buildDemo: () => {
      throw new Error('not used');
    },
  });
  backend = new Backend({ session });
  host = await startWebHost({ backend, rendererDir: dist, port: 0 });
});

afterAll(async () => {
  await host?.close();
  await backend?.close();
});

/** A raw GET (fetch would normalise the path). */
function get(path: string): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  const url = new URL(host.url);
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path, method: 'GET' }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('web host', () => {
  it('serves the app with a strict content security policy, and client routes fall back to it', async () => {
    const index = await get('/');
    expect(index.status).toBe(200);
    expect(index.body).toContain('<title>app</title>');
    const csp = String(index.headers['content-security-policy']);
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("object-src 'none'");
    expect(csp).toContain(`connect-src 'self' ${host.url.replace('http', 'ws').replace(/\/$/, '')}`);
    expect((await get('/settings')).body).toContain('<title>app</title>');
    const asset = await get('/assets/app.js');
    expect(asset.status).toBe(200);
    expect(asset.headers['content-type']).toContain('text/javascript');
    expect(asset.headers['cache-control']).toContain('immutable');
    expect((await get('/assets/missing.js')).status).toBe(404);
  });

  it('never serves files outside the renderer folder', async () => {
    const r = await get('/%2e%2e/secret.txt');
    expect([403, 404]).toContain(r.status);
    expect(r.body).not.toContain('do not serve');
  });

  it('answers the bridge over WebSocket for its own pages and refuses other origins', async () => {
    const wsUrl = `${host.url.replace('http', 'ws')}rpc`;
    const origin = host.url.replace(/\/$/, '');
    const foreign = new WebSocket(wsUrl, { origin: 'http://evil.example' });
    const refused = await new Promise<string>((resolve) => {
      foreign.on('unexpected-response', (_req, res) => resolve(String(res.statusCode)));
      foreign.on('error', (e) => resolve(e.message));
      foreign.on('open', () => resolve('open'));
    });
    expect(refused).toMatch(/403/);

    const ws = new WebSocket(wsUrl, { origin });
    const messages: ServerMessage[] = [];
    ws.on('message', (d: Buffer) => messages.push(JSON.parse(d.toString()) as ServerMessage));
    await new Promise((r) => ws.on('open', r));
    ws.send(JSON.stringify({ t: 'session', id: 1, action: 'get' }));
    ws.send(JSON.stringify({ t: 'call', id: 2, op: 'tags.getAll', input: {} }));
    for (let i = 0; i < 50 && messages.filter((m) => m.t === 'reply').length < 2; i++) await new Promise((r) => setTimeout(r, 20));
    expect(messages).toContainEqual({ t: 'reply', id: 1, result: { ok: true, value: { state: 'none', dataDir: expect.any(String) } } });
    expect(messages).toContainEqual({ t: 'reply', id: 2, result: { ok: false, error: expect.objectContaining({ code: 'NO_WORKSPACE' }) } });
    ws.close();
  });
});
