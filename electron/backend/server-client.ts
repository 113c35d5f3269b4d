/**
 * The desktop's one way to talk to its sync server. Replication, server-only operations
 * (Backend.forward), the connect screen and the headless backend all call through ServerClient:
 * the base URL, the bearer key (its format checked once, here), the collection's schema version on
 * replication requests, a time limit on every request, JSON answers checked against the wire
 * schemas, and event streams.
 *
 * Every failure is one ServerError with a stable code, mapped here and nowhere else:
 * SERVER_UNREACHABLE when no answer came (network down, time limit, a gateway in front of the
 * server answering 502-504), UNAUTHENTICATED for a refused key, CLIENT_OUTDATED for an app older than
 * the server (426), and otherwise the server's own code and sentence. The UI shows `message`.
 */
import { z } from 'zod';
import type { Actor } from '../../shared/context.ts';
import { DomainError, ERROR_STATUS } from '../../shared/errors.ts';
import type { ErrorCode, ErrorDetails } from '../../shared/errors.ts';
import { COLLECTIONS, ROLES } from '../../shared/model/index.ts';
import type { CollectionName, Role } from '../../shared/model/index.ts';
import { checkedAs, pullPageSchema } from '../../shared/wire/replication.ts';
import type { PullPage } from '../../shared/wire/replication.ts';

/** The codes a server call fails with: the server's, or SERVER_UNREACHABLE (no answer at all). */
export type ServerErrorCode = ErrorCode | 'SERVER_UNREACHABLE';

/** A call to the sync server that did not succeed. `status` is the HTTP status, 0 without an answer. */
export class ServerError extends Error {
  constructor(
    readonly code: ServerErrorCode,
    message: string,
    readonly status: number,
    readonly details: ErrorDetails = {},
  ) {
    super(message);
    this.name = 'ServerError';
  }

  /** Retrying cannot help until someone acts: a refused key, a missing permission, an outdated app. */
  get needsUser(): boolean {
    return this.status === 401 || this.status === 403 || this.status === 426;
  }
}

export type CallOptions = {
  method?: 'GET' | 'POST';
  /** Sent as JSON. */
  body?: unknown;
  /** The collection a replication request is about: its schema version goes along (X-Schema-Version),
   * so a server with a newer schema answers 426 instead of taking documents this app misreads. */
  collection?: CollectionName;
  /** Default 30 s. */
  timeoutMs?: number;
  /** Ends the request early (a stopped sync); replaces the time limit. */
  signal?: AbortSignal;
  /** Reads the answer's text as JSON.parse would (a pull page: a document at a time, over turns of
   * the event loop); default JSON.parse. */
  read?: (text: string) => Promise<unknown>;
};

const DEFAULT_TIMEOUT_MS = 30_000;

/** Keys are issued as live_ and 40 base62 characters; anything else is a typing or pasting slip. */
const API_KEY = /^live_[0-9A-Za-z]{32,}$/;

/** The key as typed, trimmed; refused (INVALID_INPUT) when it cannot be a key. */
export function checkApiKey(raw: string): string {
  const key = raw.trim();
  if (!API_KEY.test(key)) throw new DomainError('INVALID_INPUT', 'An API key starts with live_ followed by at least 32 letters and digits.', { field: 'apiKey' });
  return key;
}

const errorText = (e: unknown): string => {
  if (e instanceof Error) {
    if (e.name === 'TimeoutError') return 'no answer in time';
    const cause = (e as { cause?: unknown }).cause;
    return cause instanceof Error ? `${e.message}: ${cause.message}` : e.message;
  }
  return String(e);
};

/** No answer came from the server at `serverUrl`. */
export function unreachable(serverUrl: string, why: string): ServerError {
  return new ServerError('SERVER_UNREACHABLE', `The sync server at ${serverUrl} could not be reached (${why}).`, 0, { serverUrl });
}

/** A request path without its query, for messages. */
const route = (path: string): string => path.split('?', 1)[0] ?? path;

const isErrorCode = (c: unknown): c is ErrorCode => typeof c === 'string' && Object.prototype.hasOwnProperty.call(ERROR_STATUS, c);

/** The error for an answer that is not a success (the one mapping of the file comment). */
export function answerError(serverUrl: string, path: string, status: number, body: unknown): ServerError {
  const err = (body as { error?: { code?: unknown; message?: unknown; details?: unknown } } | null)?.error;
  const message = typeof err?.message === 'string' ? err.message.trim() : null;
  const details: ErrorDetails = err?.details !== null && typeof err?.details === 'object' ? { ...(err.details as ErrorDetails) } : {};
  if (status === 401) {
    return new ServerError('UNAUTHENTICATED', `The sync server refused the API key: ${(message ?? 'unknown or revoked key').replace(/\.+$/, '')}.`, status, { ...details, field: 'apiKey' });
  }
  if (status === 426) {
    const why = message ?? `it answered ${status}.`;
    return new ServerError('CLIENT_OUTDATED', `This app is older than the sync server: ${why}${/update the app/i.test(why) ? '' : ' Update the app to keep syncing.'}`, status, details);
  }
  if (message !== null) {
    // A code this app does not know yet (a newer server) keeps its words.
    return isErrorCode(err?.code) ? new ServerError(err.code, message, status, details) : new ServerError('INTERNAL', message, status, { ...details, serverCode: err?.code });
  }
  // No error body of ours: something in front of the server, or not a sync server at all.
  if (status === 502 || status === 503 || status === 504) return unreachable(serverUrl, `its gateway answered ${status}`);
  if (status === 404) return new ServerError('NOT_FOUND', `The server at ${serverUrl} has no ${path} (404); it may not be a sync server, or an older version of it.`, status, { serverUrl, path });
  return new ServerError('INTERNAL', `The sync server at ${serverUrl} answered ${status} to ${path}.`, status, { serverUrl, path });
}

/**
 * A response body as text, decoded chunk by chunk. `Response.text()` first gathers a body into one
 * buffer: for a 2 MB pull page that is a 2 MB allocation outside the JavaScript heap, and after the
 * first of those glibc serves them from its main heap, which never shrinks back past the long-lived
 * allocations made in between (at 100k leads the desktop kept ~80 MB of freed memory resident).
 * Decoded chunk by chunk, the only large value is the string, which lives in the JavaScript heap.
 */
async function bodyText(res: Response): Promise<string> {
  if (!res.body) return '';
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return text + decoder.decode();
    text += decoder.decode(value, { stream: true });
  }
}

/** Who a key acts as: its workspace, and its member with name and role. */
export type Identity = { workspaceId: string; workspaceName: string; member: { id: string; name: string; role: Role } };

const keysAnswer = z.object({ keys: z.array(z.object({ prefix: z.string(), memberId: z.string() })) });
const membersAnswer = z.object({ members: z.array(z.object({ id: z.string(), name: z.string(), role: z.string() })) });
const workspaceDoc = z.object({ id: z.string(), name: z.string() });

/** Requests to one sync server with one key. */
export class ServerClient {
  readonly serverUrl: string;
  private readonly apiKey: string;

  constructor(
    serverUrl: string,
    apiKey: string,
    private readonly fetchFn: typeof fetch = fetch,
  ) {
    this.serverUrl = serverUrl.trim().replace(/\/+$/, '');
    this.apiKey = checkApiKey(apiKey);
  }

  private async send(path: string, opts: CallOptions, accept: string): Promise<Response> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.apiKey}`, accept };
    if (opts.collection) headers['x-schema-version'] = String(COLLECTIONS[opts.collection].schema.version);
    if (opts.body !== undefined) headers['content-type'] = 'application/json';
    try {
      return await this.fetchFn(`${this.serverUrl}${path}`, {
        method: opts.method ?? (opts.body === undefined ? 'GET' : 'POST'),
        headers,
        body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
        signal: opts.signal ?? AbortSignal.timeout(opts.timeoutMs ?? DEFAULT_TIMEOUT_MS),
      });
    } catch (e) {
      throw unreachable(this.serverUrl, errorText(e));
    }
  }

  /** The JSON answer to one request (`path` starts with a slash and carries its query). */
  async json(path: string, opts: CallOptions = {}): Promise<unknown> {
    const res = await this.send(path, opts, 'application/json');
    let text: string;
    try {
      text = await bodyText(res);
    } catch (e) {
      throw unreachable(this.serverUrl, `the answer broke off: ${errorText(e)}`);
    }
    let body: unknown = null;
    let parsed = true;
    if (text !== '') {
      try {
        body = opts.read ? await opts.read(text) : JSON.parse(text);
      } catch {
        parsed = false;
      }
    }
    if (!res.ok) throw answerError(this.serverUrl, route(path), res.status, body);
    if (!parsed) throw new ServerError('INTERNAL', `The server at ${this.serverUrl} did not answer ${route(path)} with JSON; it may not be a sync server.`, res.status, { serverUrl: this.serverUrl });
    return body;
  }

  /**
   * The JSON answer, checked against `schema`. The value handed back is the answer itself, not a
   * parsed copy: a schema checks what the caller relies on and leaves the rest as it came (a pull
   * page's documents are much larger than what their schema checks).
   */
  async checked<S extends z.ZodType>(schema: S, path: string, opts: CallOptions = {}): Promise<z.output<S>> {
    const body = await this.json(path, opts);
    try {
      return checkedAs(schema, body);
    } catch (e) {
      const issue = e instanceof z.ZodError ? e.issues[0] : undefined;
      const where = issue && issue.path.length > 0 ? ` at ${issue.path.join('.')}` : '';
      throw new ServerError('INTERNAL', `The sync server at ${this.serverUrl} answered ${route(path)} with something this app does not understand${where}: ${issue?.message ?? 'unexpected shape'}.`, 200, { serverUrl: this.serverUrl });
    }
  }

  /** Opens an event stream (Server-Sent Events); the caller reads it and ends it with its signal. */
  async eventStream(path: string, opts: CallOptions & { signal: AbortSignal }): Promise<ReadableStream<Uint8Array>> {
    const res = await this.send(path, opts, 'text/event-stream');
    if (!res.ok) {
      let body: unknown = null;
      try {
        body = JSON.parse(await bodyText(res));
      } catch {
        body = null;
      }
      throw answerError(this.serverUrl, route(path), res.status, body);
    }
    if (!res.body) throw new ServerError('INTERNAL', `The sync server at ${this.serverUrl} answered ${route(path)} without a stream.`, res.status, { serverUrl: this.serverUrl });
    return res.body;
  }

  /** Runs an operation of the registry on the server (server-only operations: API keys, members):
   * GET with its input as query parameters (lists repeated), POST with a JSON body. */
  operation(op: string, method: 'GET' | 'POST', input: unknown, timeoutMs = 15_000): Promise<unknown> {
    if (method === 'POST') return this.json(`/${op}`, { method, body: input ?? {}, timeoutMs });
    const qs = new URLSearchParams();
    for (const [k, v] of Object.entries((input ?? {}) as Record<string, unknown>)) {
      if (v === undefined || v === null) continue;
      if (Array.isArray(v)) for (const item of v) qs.append(k, String(item));
      else qs.append(k, String(v));
    }
    const query = qs.toString();
    return this.json(`/${op}${query ? `?${query}` : ''}`, { method, timeoutMs });
  }

  /**
   * Finds out which workspace and member the key acts as: the key's prefix among the caller's keys
   * gives the member; the members list gives their name and role (one this app knows); the
   * workspace comes from the replication feed the desktop is about to follow anyway.
   */
  async identify(timeoutMs = 10_000): Promise<Identity> {
    const keys = await this.checked(keysAnswer, '/apiKeys.list', { timeoutMs });
    const mine = keys.keys.find((k) => this.apiKey.startsWith(k.prefix));
    if (!mine) throw new DomainError('UNAUTHENTICATED', 'The server accepted the key but does not list it among its keys; ask an admin for a new key.', { field: 'apiKey' });
    const members = await this.checked(membersAnswer, '/members.list', { timeoutMs });
    const me = members.members.find((m) => m.id === mine.memberId);
    if (!me) throw new DomainError('UNAUTHENTICATED', "The key's member is no longer in the workspace.", { field: 'apiKey' });
    const role = ROLES.find((r) => r === me.role);
    if (!role) throw new DomainError('CLIENT_OUTDATED', `The key's member has the role "${me.role}", which this app does not know; update the app.`, { role: me.role });
    let page: PullPage;
    try {
      page = await this.checked(pullPageSchema, '/replication/workspaces/pull?limit=1', { collection: 'workspaces', timeoutMs });
    } catch (e) {
      if (e instanceof ServerError && e.status === 404) {
        throw new DomainError('INVALID_INPUT', `The server at ${this.serverUrl} does not offer replication (it may be an older version of the sync server): ${e.message.replace(/\.+$/, '')}.`, { field: 'url' });
      }
      throw e;
    }
    const ws = workspaceDoc.safeParse(page.documents[0]);
    if (!ws.success) throw new DomainError('INVALID_INPUT', `The server at ${this.serverUrl} did not share the workspace record; it may be an older version without replication.`, { field: 'url' });
    return { workspaceId: ws.data.id, workspaceName: ws.data.name, member: { id: me.id, name: me.name, role } };
  }
}

/** Who `apiKey` acts as on the server at `serverUrl`, with the actor operations run as (for the
 * headless backend and scripts, which have no connect screen). */
export async function identifyKey(serverUrl: string, apiKey: string, fetchFn: typeof fetch = fetch): Promise<Identity & { actor: Actor }> {
  const who = await new ServerClient(serverUrl, apiKey, fetchFn).identify();
  return { ...who, actor: { workspaceId: who.workspaceId, memberId: who.member.id, role: who.member.role } };
}
