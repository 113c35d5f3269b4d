/**
 * The web host: the built renderer over HTTP and the backend's bridge over a WebSocket at /rpc, on the
 * loopback interface. It is how the app runs in a plain browser (no Electron binary here, Playwright).
 * Only pages served by this host may open the socket (Origin check), so another site open in the same
 * browser cannot drive the backend. The page (index.html) comes with the leads table's first screen in
 * it (first-screen-html.ts), only to a request naming this host (a page of another site whose name
 * was made to point here, DNS rebinding, gets the plain page), never stored by a cache.
 */
import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { extname, join, normalize, resolve, sep } from 'node:path';
import { WebSocketServer } from 'ws';
import type { ServerMessage } from './bridge.ts';
import type { Backend } from './backend/backend.ts';
import { openRpcConnection } from './backend/rpc.ts';
import { firstScreenHtml, readFirstScreen, splitIndexHtml, styleNonce } from './first-screen-html.ts';
import type { FirstScreenSource } from './first-screen-html.ts';

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

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.woff2': 'font/woff2',
  '.map': 'application/json',
};

/** Same policy as the Electron window: only this origin's scripts and styles, no plugins, no framing.
 * `styleNonce` allows the one style element of a page that carries the first screen. */
export function contentSecurityPolicy(origin: string, styleNonce?: string): string {
  const ws = origin.replace(/^http/, 'ws');
  return [
    "default-src 'self'",
    "script-src 'self'",
    styleNonce ? `style-src 'self' 'nonce-${styleNonce}'` : "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self'",
    `connect-src 'self' ${ws}`,
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

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
  const index = join(root, 'index.html');
  const firstScreen = opts.firstScreen ?? opts.backend;
  let origin = '';
  /** The headers every response of a file or page carries: the policy (with the first screen's
   * style nonce), no type sniffing, no referrer. */
  const pageHeaders = (nonce?: string) => ({
    'content-security-policy': contentSecurityPolicy(origin, nonce),
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
  });
  /** The names this host answers to (Host header): its own address and localhost, on its port. */
  let ownHosts = new Set<string>();

  /** The page with the first screen in it: its head (with its style sheet) at once, the first
   * screen when the backend has answered (within a bound), the rest. False when the page has no
   * place for it. */
  async function serveIndex(res: ServerResponse, source: FirstScreenSource): Promise<boolean> {
    const nonce = styleNonce();
    const readStyles = (file: string) => readFile(join(root, 'assets', file), 'utf8').catch(() => null);
    const parts = await splitIndexHtml(await readFile(index, 'utf8'), nonce, readStyles);
    if (!parts) return false;
    res.writeHead(200, {
      'content-type': TYPES['.html'],
      // Workspace data: kept by no cache, shared or not.
      'cache-control': 'no-store',
      ...pageHeaders(nonce),
    });
    // The head first: the browser fetches the scripts while the backend answers.
    res.write(parts.head);
    const screen = await readFirstScreen(source, opts.firstScreenWaitMs).catch((e: Error) => {
      log(`web host: the first screen was not read: ${e.message}`);
      return null;
    });
    if (screen) res.write(firstScreenHtml(screen, nonce));
    res.end(parts.tail);
    return true;
  }

  async function serveFile(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', origin);
    let rel = decodeURIComponent(url.pathname);
    if (rel.endsWith('/')) rel += 'index.html';
    let file = normalize(join(root, rel));
    if (file !== root && !file.startsWith(root + sep)) {
      res.writeHead(403).end('Forbidden');
      return;
    }
    let info = await stat(file).catch(() => null);
    if (!info?.isFile()) {
      // Client-side routes fall back to the app; a missing asset is a real 404.
      if (extname(rel) !== '') {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found');
        return;
      }
      file = join(root, 'index.html');
      info = await stat(file).catch(() => null);
      if (!info?.isFile()) {
        res.writeHead(503, { 'content-type': 'text/plain; charset=utf-8' }).end('The renderer is not built yet: run `npm start` (it builds it) or `npx vite build -c renderer/vite.config.ts`.');
        return;
      }
    }
    if (file === index && req.method === 'GET' && firstScreen && ownHosts.has(req.headers.host ?? '') && (await serveIndex(res, firstScreen))) return;
    const type = TYPES[extname(file)] ?? 'application/octet-stream';
    const immutable = file.includes(`${sep}assets${sep}`);
    res.writeHead(200, {
      'content-type': type,
      'content-length': info.size,
      'cache-control': immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
      ...pageHeaders(),
    });
    if (req.method === 'HEAD') {
      res.end();
      return;
    }
    createReadStream(file).pipe(res);
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
