/** A webhook receiver on 127.0.0.1, as an integration would write one: it verifies every request
 * with the Standard Webhooks reference library (`standardwebhooks`) and answers what the test asks
 * (200 by default; per path, a queue of statuses to answer first). */
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export type Received = {
  path: string;
  headers: Record<string, string>;
  body: string;
  /** What the library said: null when the signature verified with the receiver's secret. */
  verifyError: string | null;
  /** The status the receiver answered. */
  answered: number;
  at: number;
};

export type Receiver = {
  url: string;
  port: number;
  received: Received[];
  /** The secret the library verifies with, per path (set after the endpoint is created). */
  secrets: Map<string, string>;
  /** Statuses to answer next per path, in order; then 200. */
  scripts: Map<string, number[]>;
  /** Called on each request before it is answered (e.g. to kill the server that sent it). */
  onRequest: ((r: Received) => 'answer' | 'hang') | null;
  /** Requests to one path. */
  at(path: string): Received[];
  waitFor(path: string, n: number, timeoutMs?: number): Promise<Received[]>;
  close(): Promise<void>;
};

const flat = (h: IncomingHttpHeaders): Record<string, string> => Object.fromEntries(Object.entries(h).flatMap(([k, v]) => (typeof v === 'string' ? [[k, v]] : Array.isArray(v) ? [[k, v.join(', ')]] : [])));

/** Verifies like a receiver: throws the library's error when the request does not verify. */
export function verify(secret: string, r: Pick<Received, 'headers' | 'body'>): unknown {
  return new Webhook(secret).verify(r.body, r.headers);
}

export async function startReceiver(): Promise<Receiver> {
  const receiver: Receiver = {
    url: '',
    port: 0,
    received: [],
    secrets: new Map(),
    scripts: new Map(),
    onRequest: null,
    at: (path) => receiver.received.filter((r) => r.path === path),
    async waitFor(path, n, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (receiver.at(path).length < n) {
        if (Date.now() > deadline) throw new Error(`The receiver got ${receiver.at(path).length} of ${n} requests to ${path} within ${timeoutMs} ms.`);
        await new Promise((r) => setTimeout(r, 20));
      }
      return receiver.at(path);
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const headers = flat(req.headers);
      const path = req.url ?? '/';
      const secret = receiver.secrets.get(path);
      let verifyError: string | null = 'no secret set';
      if (secret) {
        try {
          verify(secret, { headers, body });
          verifyError = null;
        } catch (e) {
          verifyError = e instanceof Error ? e.message : String(e);
        }
      }
      const answered = verifyError === null ? (receiver.scripts.get(path)?.shift() ?? 200) : 400;
      const r: Received = { path, headers, body, verifyError, answered, at: Date.now() };
      receiver.received.push(r);
      if (receiver.onRequest?.(r) === 'hang') return;
      res.writeHead(answered, { 'content-type': 'text/plain' });
      res.end(answered >= 200 && answered < 300 ? 'ok' : `refused with ${answered}: ${verifyError ?? 'as scripted'}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  receiver.port = (server.address() as AddressInfo).port;
  receiver.url = `http://127.0.0.1:${receiver.port}`;
  return receiver;
}

/** The sync server's webhook options for tests against a receiver on loopback: plain HTTP to a
 * private address allowed, and retries, polling and timeouts short enough for a test's minute. */
export const LOOPBACK_WEBHOOKS = {
  allowHttp: true,
  policy: { allowPrivate: true },
  delivery: { retryDelaysMs: [150, 150, 150], pollMs: 50, timeoutMs: 2_000, disableAfterMs: 60_000 },
};
