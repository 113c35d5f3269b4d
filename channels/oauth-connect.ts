/**
 * The OAuth connect port of shared/context.ts over a store of pending authorizations: the sync
 * server keeps them in PostgreSQL (sync-server/oauth.ts: several processes may serve one flow), a
 * desktop in its own memory (electron/backend/oauth-loopback.ts). A pending authorization is taken
 * once: the first completion removes it, so a replayed state finds nothing.
 */
import type { OAuthConnectPort, OAuthConnected, OAuthProviderInput } from '../shared/context.ts';
import { OAuthError, PENDING_TTL_MS, authorizationUrl, exchangeCode, newPkce, resolveProvider } from './oauth.ts';
import type { OAuthClientSettings, PendingAuthorization } from './oauth.ts';

export type PendingStore = {
  put(p: PendingAuthorization): Promise<void>;
  /** Removes and returns the pending authorization of this state in this workspace (null: none). */
  take(workspaceId: string, state: string): Promise<PendingAuthorization | null>;
  /** Whether one is waiting (without taking it). */
  has(workspaceId: string, state: string): Promise<boolean>;
};

export type OAuthConnectOptions = {
  hostedBy: 'desktop' | 'server';
  pending: PendingStore;
  settings: OAuthClientSettings;
  fetch?: typeof fetch;
  now?: () => number;
  /** The redirect address when the caller gives none (the server's PUBLIC_URL/oauth/callback, the
   * desktop's loopback listener); null: a redirectUri is required. */
  defaultRedirectUri?: (req: { workspaceId: string; memberId: string }) => Promise<string | null> | string | null;
  /** Told of each begin (the desktop arms its loopback listener for the state). */
  onBegin?: (p: PendingAuthorization) => void;
};

export function createOAuthConnect(opts: OAuthConnectOptions): OAuthConnectPort {
  const now = opts.now ?? Date.now;
  const f = opts.fetch ?? fetch;
  return {
    hostedBy: opts.hostedBy,
    async begin(req: { workspaceId: string; memberId: string; provider: OAuthProviderInput; email: string | null; redirectUri: string | null }) {
      const provider = await resolveProvider(req.provider, opts.settings, f);
      const redirectUri = req.redirectUri ?? (opts.defaultRedirectUri ? await opts.defaultRedirectUri(req) : null);
      if (!redirectUri) throw new OAuthError('no_redirect', 'A redirectUri is needed: this sync server has no PUBLIC_URL to receive the redirect at /oauth/callback.');
      const { verifier, challenge, state } = newPkce();
      const pending: PendingAuthorization = {
        state, workspaceId: req.workspaceId, memberId: req.memberId, verifier, redirectUri, email: req.email, hostedBy: opts.hostedBy, provider, expiresAt: now() + PENDING_TTL_MS,
      };
      await opts.pending.put(pending);
      opts.onBegin?.(pending);
      return { authorizationUrl: authorizationUrl(provider, { redirectUri, state, challenge, email: req.email }), state, redirectUri, expiresAt: new Date(pending.expiresAt).toISOString() };
    },
    async complete(req: { workspaceId: string; memberId: string; state: string; code: string }): Promise<OAuthConnected> {
      const pending = await opts.pending.take(req.workspaceId, req.state);
      if (!pending) throw new OAuthError('state_unknown', 'This sign-in is unknown here, was already used or was begun more than 10 minutes ago: start connecting the mailbox again.');
      if (pending.expiresAt <= now()) throw new OAuthError('state_expired', 'This sign-in was begun more than 10 minutes ago: start connecting the mailbox again.');
      if (pending.memberId !== req.memberId) throw new OAuthError('state_unknown', 'This sign-in was begun by another member: start connecting the mailbox again.');
      return exchangeCode(pending, req.code, { fetch: f, now: now() });
    },
    async status(req: { workspaceId: string; state: string }) {
      return { status: (await opts.pending.has(req.workspaceId, req.state)) ? ('waiting' as const) : ('unknown' as const), sdrProfileId: null, message: null };
    },
  };
}

/** Pending authorizations in this process's memory (a desktop), dropped after their 10 minutes. */
export function memoryPendingStore(now: () => number = Date.now): PendingStore {
  const map = new Map<string, PendingAuthorization>();
  const sweep = () => {
    for (const [k, p] of map) if (p.expiresAt <= now()) map.delete(k);
  };
  return {
    async put(p) {
      sweep();
      map.set(p.state, p);
    },
    async take(workspaceId, state) {
      const p = map.get(state);
      if (!p || p.workspaceId !== workspaceId) return null;
      map.delete(state);
      return p;
    },
    async has(workspaceId, state) {
      sweep();
      return map.get(state)?.workspaceId === workspaceId;
    },
  };
}
