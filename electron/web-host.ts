/**
 * The web host: the built renderer over HTTP and the backend's bridge over a WebSocket at /rpc, on the
 * loopback interface. It is how the app runs in a plain browser (no Electron binary here, Playwright).
 * Only pages served by this host may open the socket (Origin check), so another site open in the same
 * browser cannot drive the backend. The page (index.html) comes with the leads table's first screen in
 * it (first-screen-html.ts), only to a request naming this host (a page of another site whose name
 * was made to point here, DNS rebinding, gets the plain page), never stored by a cache.
 */
import { createReadStream } from 'node:fs';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { resolve } from 'node:path';
import { WebSocketServer } from 'ws';
import type { ServerMessage } from './bridge.ts';
import type { Backend } from './backend/backend.ts';
import { openRpcConnection } from './backend/rpc.ts';
import { pageWithFirstScreen, styleNonce } from './first-screen-html.ts';
import type { FirstScreenSource } from './first-screen-html.ts';
import { fileHeaders, firstScreenPageHeaders, NOT_BUILT, resolveRendererPath } from './renderer-files.ts';

export type WebHostOptions = {
  backend: Backend;
  /** The Vite build output (renderer/dist). */
  rendererDir: string;
  host?: string;
  /** 0 picks a free port. When the port is taken, the next ones are tried. */
  port?: number;
  log?: (line: string) => void;
  /** Where the page's first screen is read from (default: the backend); false: the plain page. */
  firstScreen?: FirstScreenSource | false;
  /** How long the page waits for the first screen (first-screen-html.ts). */
  firstScreenWaitMs?: number;
};

export type WebHost = { url: string; port: number; close(): Promise<void> };

async function listen(server: Server, host: string, port: number): Promise<number> {
  for (let attempt = 0; ; attempt++) {
    const tryPort = port === 0 ? 0 : port + attempt;
    try {
      await new Promise<void>((ok, fail) => {
        const onError = (e: Error) => {
          server.off('listening', onListening);
          fail(e);
        };
        const onListening = () => {
          server.off('error', onError);
          ok();
        };
        server.once('error', onError);
        server.once('listening', onListening);
        server.listen(tryPort, host);
      });
      const addr = server.address();
      return typeof addr === 'object' && addr ? addr.port : tryPort;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EADDRINUSE' || port === 0 || attempt >= 20) throw e;
    }
  }
}

export async function startWebHost(opts: WebHostOptions): Promise<WebHost> {
  const host = opts.host ?? '127.0.0.1';
  const log = opts.log ?? (() => undefined);
  const root = resolve(opts.rendererDir);
  const firstScreen = opts.firstScreen ?? opts.backend;
  let origin = '';
  /** The page's socket (connect-src of its policy). */
  let socket = '';
  /** The names this host answers to (Host header): its own address and localhost, on its port. */
  let ownHosts = new Set<string>();

  /** The page with the first screen in it (first-screen-html.ts): its head at once, the first
   * screen when the backend has answered (within a bound), the rest. False when the page has no
   * place for it. */
  async function serveIndex(res: ServerResponse, source: FirstScreenSource): Promise<boolean> {
    const nonce = styleNonce();
    const page = await pageWithFirstScreen(root, source, nonce, { waitMs: opts.firstScreenWaitMs, log: (line) => log(`web host: ${line}`) });
    if (!page) return false;
    res.writeHead(200, firstScreenPageHeaders(socket, nonce));
    res.write(page.head);
    res.end(await page.rest);
    return true;
  }

  async function serveFile(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', origin);
    const found = await resolveRendererPath(root, url.pathname);
    switch (found.kind) {
      case 'refused':
        res.writeHead(403).end('Forbidden');
        return;
      case 'malformed':
        res.writeHead(400).end('Bad request');
        return;
      case 'missing':
        res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found');
        return;
      case 'unbuilt':
        res.writeHead(503, { 'content-type': 'text/plain; charset=utf-8' }).end(NOT_BUILT);
        return;
      case 'file':
        break;
    }
    if (found.index && req.method === 'GET' && firstScreen && ownHosts.has(req.headers.host ?? '') && (await serveIndex(res, firstScreen))) return;
    res.writeHead(200, fileHeaders(found.file, found.size, socket));
    if (req.method === 'HEAD') {
      res.end();
      return;
    }
    createReadStream(found.file).pipe(res);
  }

  const server = createServer((req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    serveFile(req, res).catch((e: Error) => {
      log(`web host: ${e.message}`);
      if (!res.headersSent) res.writeHead(500).end('Internal error');
      else res.destroy();
    });
  });

  const wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 * 1024 });
  // The same names as the page's first screen is sent to (ownHosts).
  const allowedOrigins = () => new Set([...ownHosts].map((h) => `http://${h}`));
  server.on('upgrade', (req, socket, head) => {
    const path = new URL(req.url ?? '/', origin).pathname;
    if (path !== '/rpc' || !allowedOrigins().has(req.headers.origin ?? '')) {
      socket.write('HTTP/1.1 403 Forbidden\r\nConnection: close\r\n\r\n');
      socket.destroy();
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      const conn = openRpcConnection(opts.backend, (msg: ServerMessage) => {
        if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(msg));
      }, log);
      ws.on('message', (data) => {
        let parsed: unknown;
        try {
          parsed = JSON.parse(data.toString());
        } catch {
          log('web host: ignored a message that is not JSON');
          return;
        }
        conn.receive(parsed);
      });
      ws.on('close', () => conn.close());
      ws.on('error', () => conn.close());
    });
  });

  const port = await listen(server, host, opts.port ?? 5173);
  origin = `http://${host}:${port}`;
  socket = `ws://${host}:${port}`;
  ownHosts = new Set([new URL(origin).host, `localhost:${port}`]);
  return {
    url: `${origin}/`,
    port,
    async close() {
      for (const client of wss.clients) client.terminate();
      wss.close();
      const closed = new Promise<void>((ok) => server.close(() => ok()));
      server.closeAllConnections();
      await closed;
    },
  };
}
