/**
 * Access tokens of the mailboxes signed in with OAuth (channelConfig.auth 'oauth2'), for the host
 * that runs them: each is refreshed before it expires and the new grant written back where the
 * secret is kept (the desktop's safeStorage file, the server's sender_credentials). A refresh the
 * provider refuses for good (invalid_grant: revoked, password changed, expired) is an
 * `unauthorized` channel failure, so the runner disconnects the sender and its leads wait. One
 * refresh per sender at a time: SMTP and IMAP asking together share it.
 *
 * Several renewers may hold the same grant: on one host the runner and the mailbox check each keep
 * one, and every sync server process has both. A provider that rotates refresh tokens and detects
 * reuse (the OAuth security BCP's replay detection; oidc-provider does it) revokes the whole grant
 * when a spent refresh token comes back, so two renewers refreshing at the same moment would
 * disconnect a good sender. Renewals of one sender therefore run one at a time across all of them
 * (`RenewalLock`: in-process by default, a PostgreSQL advisory lock across server processes), and a
 * renewer that waited reads the stored grant again and uses what the one before it stored.
 */
import { ChannelFailure } from '../shared/engine/channel.ts';
import type { Sender } from '../shared/model/index.ts';
import { OAuthError, encodeGrant, parseGrant, refreshGrant } from './oauth.ts';
import type { OAuthGrant } from './oauth.ts';

/** A mailbox login with an OAuth access token (XOAUTH2), instead of a password. */
export type TokenAuth = { accessToken: string };

export const isOAuthSender = (sender: Pick<Sender, 'channelConfig'>): boolean => sender.channelConfig.auth === 'oauth2';

/** Runs `work` (a renewal of `senderId`'s grant: read, refresh, write back) while no other renewal
 * of that sender runs, in this process or, where the lock says so, in another. */
export type RenewalLock = <T>(senderId: string, work: () => Promise<T>) => Promise<T>;

const processQueues = new Map<string, Promise<unknown>>();

/** The renewals of this process, one at a time per sender: every token keeper shares it. */
export const processRenewalLock: RenewalLock = (senderId, work) => {
  const before = processQueues.get(senderId) ?? Promise.resolve();
  const run = before.then(work, work);
  const tail = run.catch(() => undefined);
  processQueues.set(senderId, tail);
  void tail.then(() => {
    if (processQueues.get(senderId) === tail) processQueues.delete(senderId);
  });
  return run;
};

export type OAuthTokensOptions = {
  read(sender: Sender): Promise<string | null> | string | null;
  /** Writes the refreshed grant back (absent: kept in memory only, until the process ends). */
  save?(sender: Sender, secret: string): Promise<void>;
  fetch?: typeof fetch;
  now?: () => number;
  log?: (line: string) => void;
  /** Keeps renewals of one sender one at a time across renewers (default: this process's). */
  lock?: RenewalLock;
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

  /** The grant to use: the stored one, unless it is the one we refreshed from (same refresh token,
   * older) and the refreshed one could not be written back. */
  async function current(sender: Sender): Promise<OAuthGrant> {
    const stored = parseGrant(await opts.read(sender));
    if (!stored) throw new ChannelFailure('unauthorized', `${sender.name} was signed in with OAuth, but no sign-in is kept on this host: reconnect the mailbox.`);
    const cached = latest.get(sender.id);
    return cached && cached.refreshToken === stored.refreshToken && cached.issuedAt > stored.issuedAt ? cached : stored;
  }

  const usable = (g: OAuthGrant): boolean => Boolean(g.accessToken) && g.expiresAt - marginOf(g) > now();

  async function fresh(sender: Sender): Promise<TokenAuth> {
    const seen = await current(sender);
    if (!refused.has(sender.id) && usable(seen)) return { accessToken: seen.accessToken };
    return (opts.lock ?? processRenewalLock)(sender.id, () => renew(sender, seen));
  }

  /** Renews `seen` under the renewal lock, unless another renewer did while this one waited. */
  async function renew(sender: Sender, seen: OAuthGrant): Promise<TokenAuth> {
    let grant = await current(sender);
    // Another renewer stored a new grant meanwhile: its access token is the one to use (also when
    // the mail server refused `seen`'s token: this one is newer).
    if (grant.accessToken !== seen.accessToken && usable(grant)) {
      refused.delete(sender.id);
      return { accessToken: grant.accessToken };
    }
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
