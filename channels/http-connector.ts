/**
 * The HTTP connector channel: a social account worked through a third-party service speaking the
 * JSON protocol of docs/http-connector.md (actions, events, post reads, account state; bearer auth;
 * idempotency by our message id; 429 + Retry-After to slow us down).
 */
import { ChannelFailure } from '../shared/engine/channel.ts';
import type {
  AccountInfo, Channel, ChannelAction, ChannelEvent, ChannelSendResult, PollResult, PostReadResult, SocialPostItem,
} from '../shared/engine/channel.ts';
import type { Lead, Sender } from '../shared/model/index.ts';

export type HttpConnectorOptions = {
  /** The bearer token of a sender's account, from this machine's credential store. */
  tokenFor(sender: Sender): string | null | Promise<string | null>;
  /** Per-request timeout (default 15 s). */
  timeoutMs?: number;
  /** Injected for tests of clock-relative Retry-After dates; Date.now by default. */
  now?: () => number;
  fetch?: typeof fetch;
};

export type HttpConnectorChannel = Channel & {
  /** Asks the connector for the account's state and remembers it for canSendMessage. */
  accountInfo(sender: Sender): Promise<AccountInfo>;
};

/** Seconds to wait from a Retry-After header (delta seconds or an HTTP date), or null. */
export function retryAfterSeconds(header: string | null, nowMs: number): number | null {
  if (!header) return null;
  const v = header.trim();
  if (/^\d+$/.test(v)) return Number(v);
  const at = Date.parse(v);
  if (Number.isNaN(at)) return null;
  return Math.max(0, Math.ceil((at - nowMs) / 1000));
}

const EVENT_KINDS = new Set(['connection_accepted', 'reply', 'meeting_booked', 'email_opened']);

function isEvent(x: unknown): x is ChannelEvent {
  if (x === null || typeof x !== 'object') return false;
  const e = x as Record<string, unknown>;
  if (typeof e.kind !== 'string' || !EVENT_KINDS.has(e.kind) || typeof e.leadId !== 'string' || typeof e.at !== 'string') return false;
  if (e.kind === 'reply') return typeof e.chatId === 'string' && typeof e.text === 'string' && typeof e.externalId === 'string';
  if (e.kind === 'email_opened') return typeof e.externalId === 'string';
  return true;
}

function isPostItem(x: unknown): x is SocialPostItem {
  if (x === null || typeof x !== 'object') return false;
  const i = x as Record<string, unknown>;
  const d = i.authorDetails as Record<string, unknown> | undefined;
  return typeof i.author === 'string' && typeof i.text === 'string' && typeof i.date === 'string' && !!d && typeof d.headline === 'string' && typeof d.profileUrl === 'string';
}

export function createHttpConnector(opts: HttpConnectorOptions): HttpConnectorChannel {
  const timeoutMs = opts.timeoutMs ?? 15_000;
  const now = opts.now ?? Date.now;
  const doFetch = opts.fetch ?? fetch;
  const lastKnown = new Map<string, boolean>();

  function base(sender: Sender): string {
    const url = sender.channelConfig.baseUrl;
    if (typeof url !== 'string' || !/^https?:\/\//.test(url)) {
      throw new ChannelFailure('unauthorized', `${sender.name}'s connector address (channelConfig.baseUrl) is missing or not http(s).`);
    }
    const account = typeof sender.channelConfig.accountId === 'string' && sender.channelConfig.accountId ? sender.channelConfig.accountId : sender.id;
    return `${url.replace(/\/+$/, '')}/v1/accounts/${encodeURIComponent(account)}`;
  }

  /** One request; every non-2xx answer becomes the ChannelFailure the protocol assigns to it. */
  async function call(sender: Sender, method: 'GET' | 'POST', path: string, body?: unknown): Promise<unknown> {
    const token = await opts.tokenFor(sender);
    if (!token) throw new ChannelFailure('unauthorized', `No connector token is stored on this machine for ${sender.name}.`);
    let res: Response;
    try {
      res = await doFetch(`${base(sender)}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json; charset=utf-8' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (e) {
      if (e instanceof ChannelFailure) throw e;
      throw new ChannelFailure('failed', `the connector could not be reached (${(e as Error).message})`);
    }
    const text = await res.text().catch(() => '');
    let json: unknown = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      json = null;
    }
    if (res.ok) {
      if (json === null || typeof json !== 'object') throw new ChannelFailure('failed', `the connector answered ${res.status} without a JSON object`);
      return json;
    }
    const err = (json as { error?: { message?: unknown; code?: unknown } } | null)?.error;
    const message = typeof err?.message === 'string' && err.message ? err.message : `HTTP ${res.status}`;
    const code = typeof err?.code === 'string' ? ` ${err.code}` : '';
    if (res.status === 429) throw new ChannelFailure('limited', `HTTP 429${code}: ${message}`, retryAfterSeconds(res.headers.get('retry-after'), now()));
    if (res.status === 401 || res.status === 403) throw new ChannelFailure('unauthorized', message);
    if (res.status === 501) throw new ChannelFailure('unsupported', message);
    if (res.status === 400 || res.status === 404 || res.status === 409 || res.status === 422) throw new ChannelFailure('rejected', message);
    throw new ChannelFailure('failed', `HTTP ${res.status}${code}: ${message}`, res.status === 503 ? retryAfterSeconds(res.headers.get('retry-after'), now()) : null);
  }

  return {
    // The connector protocol dedupes actions by idempotencyKey (our message id): asking again after
    // a crash answers the first result without acting twice.
    idempotentSends: true,
    async send(sender: Sender, lead: Lead, action: ChannelAction, ref: string): Promise<ChannelSendResult> {
      const out = (await call(sender, 'POST', '/actions', {
        idempotencyKey: ref,
        recipient: {
          leadId: lead.id, profileUrl: lead.socialUrl, email: lead.email, firstName: lead.firstName, lastName: lead.lastName,
          fullName: lead.fullName, company: lead.company,
        },
        action,
      })) as Record<string, unknown>;
      const status = out.status === 'queued' ? 'queued' : 'sent';
      if (typeof out.externalId !== 'string' || typeof out.chatId !== 'string') {
        // The action may have happened: report a failure the runner retries with the same key.
        throw new ChannelFailure('failed', 'the connector answered without externalId and chatId');
      }
      return { status, externalId: out.externalId, chatId: out.chatId };
    },
    async poll(sender: Sender, cursor: string | null): Promise<PollResult> {
      const out = (await call(sender, 'GET', `/events${cursor === null ? '' : `?cursor=${encodeURIComponent(cursor)}`}`)) as Record<string, unknown>;
      if (!Array.isArray(out.events) || typeof out.cursor !== 'string') throw new ChannelFailure('failed', 'the connector answered events without a list and a cursor');
      return { events: out.events.filter(isEvent), cursor: out.cursor };
    },
    async readPost(sender: Sender, postUrl: string, part: 'comments' | 'reactions', budget: number): Promise<PostReadResult> {
      if (budget < 1) return { items: [], total: 0, searchesUsed: 0, stoppedEarly: true };
      const q = new URLSearchParams({ url: postUrl, part, maxSearches: String(Math.floor(budget)) });
      const out = (await call(sender, 'GET', `/posts?${q.toString()}`)) as Record<string, unknown>;
      const items = Array.isArray(out.items) ? out.items.filter(isPostItem) : [];
      const used = typeof out.searchesUsed === 'number' && out.searchesUsed >= 0 ? Math.min(Math.ceil(out.searchesUsed), Math.floor(budget)) : Math.floor(budget);
      return { items, total: typeof out.total === 'number' ? out.total : items.length, searchesUsed: used, stoppedEarly: out.complete !== true };
    },
    canSendMessage: (sender: Sender) => sender.status !== 'disconnected' && (lastKnown.get(sender.id) ?? true),
    async accountInfo(sender: Sender): Promise<AccountInfo> {
      try {
        const out = (await call(sender, 'GET', '')) as Record<string, unknown>;
        const can = out.canSendMessage === true;
        lastKnown.set(sender.id, can);
        return { canSendMessage: can, reason: typeof out.reason === 'string' ? out.reason : null };
      } catch (e) {
        lastKnown.set(sender.id, false);
        return { canSendMessage: false, reason: e instanceof Error ? e.message : String(e) };
      }
    },
  };
}
