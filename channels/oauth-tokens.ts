/**
 * Access tokens of the mailboxes signed in with OAuth (channelConfig.auth 'oauth2'), for the host
 * that runs them: each is refreshed before it expires and the new grant written back where the
 * secret is kept (the desktop's safeStorage file, the server's sender_credentials). A refresh the
 * provider refuses for good (invalid_grant: revoked, password changed, expired) is an
 * `unauthorized` channel failure, so the runner disconnects the sender and its leads wait. One
 * refresh per sender at a time: SMTP and IMAP asking together share it.
 */
import { ChannelFailure } from '../shared/engine/channel.ts';
import type { Sender } from '../shared/model/index.ts';
import { OAuthError, encodeGrant, parseGrant, refreshGrant } from './oauth.ts';
import type { OAuthGrant } from './oauth.ts';

/** A mailbox login with an OAuth access token (XOAUTH2), instead of a password. */
export type TokenAuth = { accessToken: string };

export const isOAuthSender = (sender: Pick<Sender, 'channelConfig'>): boolean => sender.channelConfig.auth === 'oauth2';

export type OAuthTokensOptions = {
  read(sender: Sender): Promise<string | null> | string | null;
  /** Writes the refreshed grant back (absent: kept in memory only, until the process ends). */
  save?(sender: Sender, secret: string): Promise<void>;
  fetch?: typeof fetch;
  now?: () => number;
  log?: (line: string) => void;
};

/** How long before its expiry a token is renewed: a minute, or a third of a short lifetime. */
const marginOf = (g: OAuthGrant): number => Math.min(60_000, Math.max(0, (g.expiresAt - g.issuedAt) / 3));

export function createOAuthTokens(opts: OAuthTokensOptions) {
  const now = opts.now ?? Date.now;
  const inflight = new Map<string, Promise<TokenAuth>>();
  /** The last grant seen per sender: a refreshed grant whose write-back failed is still used. */
  const latest = new Map<string, OAuthGrant>();
  /** Senders whose access token a mail server refused before its expiry (revoked): renew first. */
  const refused = new Set<string>();

  async function fresh(sender: Sender): Promise<TokenAuth> {
    const stored = parseGrant(await opts.read(sender));
    if (!stored) throw new ChannelFailure('unauthorized', `${sender.name} was signed in with OAuth, but no sign-in is kept on this host: reconnect the mailbox.`);
    const cached = latest.get(sender.id);
    // The stored grant wins unless it is the one we refreshed from (same refresh token, older).
    let grant = cached && cached.refreshToken === stored.refreshToken && cached.issuedAt > stored.issuedAt ? cached : stored;
    if (!refused.has(sender.id) && grant.accessToken && grant.expiresAt - marginOf(grant) > now()) return { accessToken: grant.accessToken };
    refused.delete(sender.id);
    try {
      grant = await refreshGrant(grant, { ...(opts.fetch ? { fetch: opts.fetch } : {}), now: now() });
    } catch (e) {
      if (e instanceof OAuthError && (e.code === 'invalid_grant' || e.code === 'unauthorized_client' || e.code === 'invalid_client')) {
        latest.delete(sender.id);
        throw new ChannelFailure('unauthorized', `${grant.label} no longer accepts ${sender.name}'s sign-in (${e.code}: the access was revoked, the password changed or the sign-in expired). Reconnect the mailbox to go on; its leads wait until then.`);
      }
      // The provider unreachable or failing: try again later, the sender stays connected.
      throw new ChannelFailure('failed', `${grant.label} could not renew ${sender.name}'s sign-in (${e instanceof Error ? e.message : String(e)})`);
    }
    latest.set(sender.id, grant);
    if (opts.save) {
      await opts.save(sender, encodeGrant(grant)).catch((e: unknown) => opts.log?.(`${sender.name}: the renewed sign-in could not be stored (${e instanceof Error ? e.message : String(e)}); it is used from memory`));
    }
    return { accessToken: grant.accessToken };
  }

  return {
    /** A mail server refused the sender's current access token: the next `auth` renews it (and a
     * revoked grant then says so instead of the server's bare "login refused"). */
    refusedToken(sender: Sender): void {
      refused.add(sender.id);
    },
    /** A usable access token for the sender, refreshed first when it is about to expire. */
    auth(sender: Sender): Promise<TokenAuth> {
      const running = inflight.get(sender.id);
      if (running) return running;
      const p = fresh(sender).finally(() => inflight.delete(sender.id));
      inflight.set(sender.id, p);
      return p;
    },
  };
}
