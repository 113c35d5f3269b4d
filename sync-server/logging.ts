/** What the server's log lines may carry: ids, codes, sizes and messages, never documents, request
 * bodies, query strings (lead searches, emails) or headers with keys. Every line is capped. */
import { LogController } from 'fastify';
import type { FastifyReply, FastifyRequest } from 'fastify';

/** Longest log line written (bytes); a longer one is replaced by a short line saying so. */
export const MAX_LOG_LINE = 16 * 1024;
const MAX_MESSAGE = 500;
const MAX_STACK = 4_000;

const clip = (s: string, n: number): string => (s.length > n ? `${s.slice(0, n)}… (${s.length} chars)` : s);

/** Request: method, path without the query, id, client address and body size. */
export function serializeRequest(req: FastifyRequest): Record<string, unknown> {
  const url = typeof req.url === 'string' ? req.url : '';
  const q = url.indexOf('?');
  const length = req.headers['content-length'];
  return {
    method: req.method,
    url: clip(q < 0 ? url : url.slice(0, q), 200),
    ...(q >= 0 ? { queryBytes: url.length - q - 1 } : {}),
    ...(typeof length === 'string' ? { bodyBytes: Number(length) } : {}),
    remoteAddress: req.ip,
  };
}

type ErrLike = { name?: unknown; message?: unknown; code?: unknown; stack?: unknown; statusCode?: unknown; cause?: unknown; details?: unknown };

/** Errors: type, code, message (clipped) and stack, plus the ids and sizes of a domain error's
 * details; never other properties (a database error's parameters, a document in details). */
export function serializeError(e: unknown, depth = 0): Record<string, unknown> {
  if (e === null || typeof e !== 'object') return { message: clip(String(e), MAX_MESSAGE) };
  const err = e as ErrLike;
  const out: Record<string, unknown> = {
    type: typeof err.name === 'string' ? err.name : 'Error',
    message: clip(typeof err.message === 'string' ? err.message : '', MAX_MESSAGE),
  };
  if (typeof err.code === 'string' || typeof err.code === 'number') out.code = err.code;
  if (typeof err.statusCode === 'number') out.statusCode = err.statusCode;
  if (typeof err.stack === 'string') out.stack = clip(err.stack, MAX_STACK);
  if (err.details && typeof err.details === 'object') out.details = safeDetails(err.details as Record<string, unknown>);
  if (err.cause !== undefined && depth < 2) out.cause = serializeError(err.cause, depth + 1);
  return out;
}

/** Scalar details whose names say they are ids, codes or counts; everything else by size only. */
function safeDetails(d: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(d).slice(0, 20)) {
    if (/(^id$|Id$|ids$|Ids$|^code$|^collection$|^field$|^requestId$|^status$|Seconds$|Bytes$|^limit|^count$|^row$|^reason$|^name$)/.test(k) && (typeof v !== 'object' || v === null)) {
      out[k] = typeof v === 'string' ? clip(v, 200) : v;
    } else {
      out[k] = { omitted: true, bytes: JSON.stringify(v ?? null)?.length ?? 0 };
    }
  }
  return out;
}

/** A destination that caps each line at `max` bytes: a longer line becomes a short JSON line with
 * its level, time, message start and size, so one huge object cannot flood the log. */
export function cappedStream(dest: { write(line: string): void }, max = MAX_LOG_LINE): { write(line: string): void } {
  return {
    write(line: string) {
      if (Buffer.byteLength(line) <= max) {
        dest.write(line);
        return;
      }
      const level = /"level":(\d+)/.exec(line)?.[1];
      const time = /"time":(\d+)/.exec(line)?.[1];
      const reqId = /"reqId":"([^"]{1,100})"/.exec(line)?.[1];
      const msg = /"msg":"((?:[^"\\]|\\.){0,300})/.exec(line)?.[1];
      dest.write(
        `${JSON.stringify({
          level: level ? Number(level) : 40,
          time: time ? Number(time) : Date.now(),
          ...(reqId ? { reqId } : {}),
          msg: `log line of ${Buffer.byteLength(line)} bytes cut to its summary: ${msg ?? ''}`.slice(0, 600),
          truncated: true,
        })}\n`,
      );
    },
  };
}

/** pino options for Fastify: the serializers above and redaction of secret-bearing paths. */
export function loggerOptions(level: string, stream: { write(line: string): void } | undefined): Record<string, unknown> {
  return {
    level,
    stream: cappedStream(stream ?? process.stdout),
    serializers: {
      req: serializeRequest,
      res: (res: { statusCode?: number }) => ({ statusCode: res.statusCode }),
      err: serializeError,
    },
    redact: {
      paths: ['req.headers', 'headers', 'authorization', '*.authorization', 'apiKey', '*.apiKey', 'password', '*.password', 'token', '*.token', 'secret', '*.secret', 'body', '*.body', 'doc', '*.doc', 'document', '*.document'],
      censor: '[redacted]',
    },
  };
}

/** Who and what a request was, as far as the server learned it: the workspace and the API key's id
 * (never the key), the operation, and the error code of a refusal. */
export type RequestFacts = { workspaceId?: string; keyId?: string; operation?: string; code?: string };

const factsOf = new WeakMap<FastifyRequest, RequestFacts>();

/** Adds to what the request's `request completed` line says. */
export function noteRequest(req: FastifyRequest, facts: RequestFacts): void {
  const known = factsOf.get(req);
  factsOf.set(req, known ? Object.assign(known, facts) : { ...facts });
}

/**
 * Fastify's request lines, with the request's facts on the `request completed` line itself, so an
 * operator who sees 429s or 5xx in /metrics finds which workspace, key and operation they were
 * with one search (not by joining lines on reqId). A route that is not an operation is named by its
 * route pattern (`/replication/:collection/pull`), never by the URL as sent: no query string, no
 * body, no key.
 */
export class RequestLogController extends LogController {
  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (this.isLogDisabled(request)) return;
    const facts = factsOf.get(request);
    const route = facts?.operation === undefined ? request.routeOptions.url : undefined;
    const line = { res: reply, responseTime: reply.elapsedTime, ...facts, ...(route !== undefined && route !== '/:name' ? { route } : {}) };
    if (error) reply.log.error({ ...line, err: error }, 'request errored');
    else reply.log.info(line, 'request completed');
  }
}
