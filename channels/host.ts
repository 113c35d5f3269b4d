/**
 * The channels a runner host runs for its senders, built the same way on the desktop backend and on
 * the sync server (`--runner`): email (SMTP out; with IMAP settings, the mailbox read for replies,
 * automatic replies and bounces, and a copy of each email in Sent) and the HTTP connector. The host
 * gives its store (to match inbound mail to our sends), the secrets (from its own credential store)
 * and decides which senders it runs; everything else is here.
 */
import { ChannelFailure } from '../shared/engine/channel.ts';
import type { AccountInfo, Channel, FindSentResult } from '../shared/engine/channel.ts';
import type { Sender } from '../shared/model/index.ts';
import type { StoreReader } from '../shared/store.ts';
import { createHttpConnector } from './http-connector.ts';
import type { HttpConnectorChannel } from './http-connector.ts';
import { createImapChannel, imapConfig } from './imap.ts';
import type { ImapChannel, ImapChannelOptions, InboundMatch, InboundMatcher } from './imap.ts';
import { emailKey, KEY_FIELDS } from '../shared/intake/identity.ts';
import { createOAuthTokens, isOAuthSender } from './oauth-tokens.ts';
import type { RenewalLock } from './oauth-tokens.ts';
import { createSmtpChannel, smtpMessageId } from './smtp.ts';
import type { MailLogin, SmtpChannel, SmtpChannelOptions } from './smtp.ts';

type SecretOf = (sender: Sender) => string | null | Promise<string | null>;

export type HostChannelsOptions = {
  /** The workspace's documents, to match inbound mail to our sends and leads. */
  store: StoreReader;
  /** The SMTP password of an email sender (null: no authentication). */
  smtpPasswordFor: SecretOf;
  /** The IMAP password of an email sender; default: the SMTP password (most mailboxes share it). */
  imapPasswordFor?: SecretOf;
  /** The bearer token of an HTTP-connector sender. */
  tokenFor: SecretOf;
  /** Writes a mailbox's renewed OAuth grant back where its secret is kept (channels/oauth-tokens.ts). */
  saveSecret?: (sender: Sender, secret: string) => Promise<void>;
  /** Keeps renewals of one sender's OAuth grant one at a time (default: within this process). */
  renewalLock?: RenewalLock;
  /** Timeout of each network call (the channels' defaults otherwise). */
  timeoutMs?: number;
  /** IMAP polling intervals (channels/imap.ts); tests shorten them. */
  imap?: { recheckMs?: number; pollMs?: number };
  now?: () => number;
  log?: (line: string) => void;
  /** How connections are made (the sync server refuses its own network: sync-server/sender-hosts.ts). */
  network?: { fetch?: typeof fetch; smtpGetSocket?: SmtpChannelOptions['getSocket']; imapLookup?: ImapChannelOptions['lookup'] };
};

export type HostChannels = {
  email: Channel;
  smtp: SmtpChannel;
  imap: ImapChannel;
  http: HttpConnectorChannel;
  /** The channel of a sender of one of these kinds (sandbox senders are the host's own business). */
  forKind(channel: Sender['channel']): Channel | null;
  /** Closes open connections (on stop). */
  close(): Promise<void>;
};

/** Matches inbound mail against the store: our emails by Message-ID, leads by address. */
export function storeMatcher(store: StoreReader): InboundMatcher {
  const ours = (sender: Sender) => [
    { op: 'eq', field: 'sdrProfileId', value: sender.id },
    { op: 'eq', field: 'direction', value: 'out' },
  ] as const;
  return {
    async byMessageIds(sender, messageIds): Promise<InboundMatch | null> {
      if (messageIds.length === 0) return null;
      const { docs } = await store.query('messages', {
        where: { op: 'and', conds: [...ours(sender), { op: 'in', field: 'externalId', values: [...new Set(messageIds)] }] },
        orderBy: [{ field: 'createdAt', dir: 'desc' }],
        limit: 1,
      });
      const m = docs[0];
      return m ? { leadId: m.leadId, chatId: m.chatId } : null;
    },
    async byAddress(sender, address, before): Promise<InboundMatch | null> {
      const wanted = emailKey(address);
      if (!wanted.includes('@')) return null;
      // One probe of the email key (shared/intake/identity.ts): a lead stored in any case or with
      // spaces around its address is found, as every look-up of a person finds it.
      const { docs: leads } = await store.query('leads', { where: { op: 'eq', field: KEY_FIELDS.email, value: wanted } });
      if (leads.length === 0) return null;
      // Only a lead this sender emailed before the message arrived: an old thread or a stranger
      // with the same address is not a reply to our outreach.
      const { docs } = await store.query('messages', {
        where: {
          op: 'and',
          conds: [
            ...ours(sender),
            { op: 'eq', field: 'kind', value: 'email' },
            { op: 'eq', field: 'status', value: 'sent' },
            { op: 'in', field: 'leadId', values: leads.map((l) => l.id) },
            { op: 'lte', field: 'sentAt', value: before },
          ],
        },
        orderBy: [{ field: 'sentAt', dir: 'desc' }],
        limit: 1,
      });
      const m = docs[0];
      return m ? { leadId: m.leadId, chatId: m.chatId } : null;
    },
    async recorded(sender, messageId): Promise<boolean> {
      const n = await store.count('messages', {
        op: 'and',
        conds: [{ op: 'eq', field: 'sdrProfileId', value: sender.id }, { op: 'eq', field: 'direction', value: 'in' }, { op: 'eq', field: 'externalId', value: messageId }],
      });
      return n > 0;
    },
  };
}

export function createHostChannels(opts: HostChannelsOptions): HostChannels {
  const timeout = opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {};
  // A mailbox signed in with OAuth logs in to SMTP and IMAP with the same access token (XOAUTH2).
  const tokens = createOAuthTokens({
    read: async (sender) => opts.smtpPasswordFor(sender),
    ...(opts.saveSecret ? { save: opts.saveSecret } : {}),
    ...(opts.renewalLock ? { lock: opts.renewalLock } : {}),
    ...(opts.network?.fetch ? { fetch: opts.network.fetch } : {}),
    ...(opts.now ? { now: opts.now } : {}),
    ...(opts.log ? { log: opts.log } : {}),
  });
  const smtpLogin = async (sender: Sender): Promise<MailLogin> => (isOAuthSender(sender) ? tokens.auth(sender) : opts.smtpPasswordFor(sender));
  const imap = createImapChannel({
    ...timeout,
    ...(opts.imap ?? {}),
    ...(opts.now ? { now: opts.now } : {}),
    ...(opts.log ? { log: opts.log } : {}),
    ...(opts.network?.imapLookup ? { lookup: opts.network.imapLookup } : {}),
    matcher: storeMatcher(opts.store),
    async passwordFor(sender) {
      if (isOAuthSender(sender)) return tokens.auth(sender);
      const own = opts.imapPasswordFor ? await opts.imapPasswordFor(sender) : null;
      return own ?? (await opts.smtpPasswordFor(sender));
    },
  });
  const smtp = createSmtpChannel({
    ...timeout,
    passwordFor: smtpLogin,
    ...(opts.log ? { log: opts.log } : {}),
    ...(opts.now ? { now: opts.now } : {}),
    ...(opts.network?.smtpGetSocket ? { getSocket: opts.network.smtpGetSocket } : {}),
    afterSend: (sender, raw) => imap.saveSent(sender, raw),
    // The one-click unsubscribe address: the sync server stamps its PUBLIC_URL on the workspace.
    publicUrlFor: async (sender) => (await opts.store.get('workspaces', sender.workspaceId))?.publicUrl ?? null,
  });
  /**
   * A mailbox signed in with OAuth whose token the mail server refuses although it has not expired
   * (the grant was revoked, the password changed): renew it and try once more. A refused login
   * happens before any message data is sent, so the retry cannot send twice; a renewal the provider
   * refuses (invalid_grant) is the failure then, with its own sentence.
   */
  async function withFreshToken<T>(sender: Sender, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      if (!isOAuthSender(sender) || !(e instanceof ChannelFailure) || e.kind !== 'unauthorized') throw e;
      tokens.refusedToken(sender);
      return fn();
    }
  }
  const email: Channel = {
    send: (sender, lead, action, ref) => withFreshToken(sender, () => smtp.send(sender, lead, action, ref)),
    // Without IMAP settings nothing reads the mailbox (replies are entered by hand).
    poll: (sender, cursor) => (imapConfig(sender) ? withFreshToken(sender, () => imap.poll(sender, cursor)) : smtp.poll(sender, cursor)),
    readPost: (sender, url, part, budget) => smtp.readPost(sender, url, part, budget),
    canSendMessage: (sender) => smtp.canSendMessage(sender),
    async accountInfo(sender): Promise<AccountInfo> {
      const out = smtp.accountInfo ? await smtp.accountInfo(sender) : { canSendMessage: true, reason: null };
      if (!out.canSendMessage || !imapConfig(sender)) return out;
      return imap.accountInfo(sender);
    },
    async findSent(sender, ref): Promise<FindSentResult> {
      const messageId = smtpMessageId(sender, ref);
      if (!messageId || !imapConfig(sender)) return { status: 'unknown' };
      return imap.findSent(sender, messageId);
    },
  };
  const http = createHttpConnector({ tokenFor: opts.tokenFor, ...timeout, ...(opts.now ? { now: opts.now } : {}), ...(opts.network?.fetch ? { fetch: opts.network.fetch } : {}) });
  return {
    email,
    smtp,
    imap,
    http,
    forKind: (channel) => (channel === 'email' ? email : channel === 'http' ? http : null),
    async close() {
      smtp.close();
      await imap.close();
    },
  };
}
