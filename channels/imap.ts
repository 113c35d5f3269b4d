/**
 * The IMAP side of an email sender: reads the sender's INBOX for replies, automatic replies and
 * bounces (channels/inbound-mail.ts says which is which), keeps a copy of each sent email in the
 * Sent folder, and finds an interrupted send there by its Message-ID.
 *
 * Settings (channelConfig, beside the SMTP ones; never a password): imapHost, imapPort (993),
 * imapSecure (true on 993), imapUser (default: the SMTP user), imapSentCopy ('append': we file a
 * copy of each sent email in Sent, as mail clients do, the default; 'provider': the mail provider
 * files it itself, e.g. Gmail; 'none'). The password comes from the host's credential store (the
 * IMAP password when one is kept, else the SMTP one).
 *
 * One connection per sender stays open on INBOX: where the server offers IDLE, new mail is
 * announced at once and the next poll fetches it; otherwise polls look at the mailbox on an
 * interval that grows while it stays quiet. A dropped connection is opened again by the next poll;
 * failures reach the runner as ChannelFailures, which back the sender off (or disconnect it when
 * the login is refused), so follow-ups never go out while the mailbox cannot be read.
 *
 * This file holds the settings and the channel's face; the work is in imap-connections.ts (the
 * connections, their reuse and closing, IMAP errors), imap-inbox.ts (a poll: whether to look, what
 * is new, what each message is and which send it answers) and imap-sent.ts (the Sent folder).
 */
import type { LookupFunction } from 'node:net';
import { ChannelFailure } from '../shared/engine/channel.ts';
import type { AccountInfo, FindSentResult, PollResult } from '../shared/engine/channel.ts';
import type { Sender } from '../shared/model/index.ts';
import { ImapConnections, classifyImapError } from './imap-connections.ts';
import type { ImapSettings } from './imap-connections.ts';
import { pollInbox } from './imap-inbox.ts';
import { fileInSent, lookUpSent } from './imap-sent.ts';
import type { MailLogin } from './smtp.ts';

export type SentCopy = 'append' | 'provider' | 'none';

export type ImapConfig = { host: string; port: number; secure: boolean; user: string; sentCopy: SentCopy };

/** The IMAP settings of an email sender, or null when it reads no mailbox. */
export function imapConfig(sender: Sender): ImapConfig | null {
  const c = sender.channelConfig;
  const host = typeof c.imapHost === 'string' ? c.imapHost.trim() : '';
  if (!host) return null;
  const port = typeof c.imapPort === 'number' ? c.imapPort : typeof c.imapPort === 'string' && /^\d+$/.test(c.imapPort) ? Number(c.imapPort) : 993;
  const secure = c.imapSecure === true || c.imapSecure === 'true' || (c.imapSecure === undefined && port === 993);
  const imapUser = typeof c.imapUser === 'string' ? c.imapUser.trim() : '';
  const smtpUser = typeof c.user === 'string' ? c.user.trim() : '';
  const sentCopy: SentCopy = c.imapSentCopy === 'provider' || c.imapSentCopy === 'none' ? c.imapSentCopy : 'append';
  return { host, port, secure, user: imapUser || smtpUser, sentCopy };
}

/** The lead and conversation an inbound email belongs to. */
export type InboundMatch = { leadId: string; chatId: string };

/** How the channel finds our sends (hosts build it over their store: channels/host.ts). */
export type InboundMatcher = {
  /** Our outbound email from this sender carrying one of these Message-IDs (newest first). */
  byMessageIds(sender: Sender, messageIds: string[]): Promise<InboundMatch | null>;
  /** A lead with this address that this sender emailed before `before` (the inbound's date). */
  byAddress(sender: Sender, address: string, before: string): Promise<InboundMatch | null>;
  /** Whether an inbound message with this Message-ID is already recorded for this sender. */
  recorded(sender: Sender, messageId: string): Promise<boolean>;
};

export type ImapChannelOptions = {
  /** The IMAP password from this machine's credential store. */
  passwordFor(sender: Sender): MailLogin | Promise<MailLogin>;
  matcher: InboundMatcher;
  /** Milliseconds before a connection or command is given up (default 20 s). */
  timeoutMs?: number;
  /** With IDLE: the mailbox is fetched anyway this often, in case IDLE silently stopped (default 5 min). */
  recheckMs?: number;
  /** Without IDLE: the first interval between looks at the mailbox; doubles while quiet up to recheckMs (default 30 s). */
  pollMs?: number;
  /** Days a first poll looks back (default 14). */
  lookbackDays?: number;
  /** Messages read per poll at most (default 100); the rest come with the next poll. */
  batch?: number;
  now?: () => number;
  log?: (line: string) => void;
  /** How the IMAP socket resolves its host (the sync server refuses non-public addresses at connect
   * time: sync-server/sender-hosts.ts guardedLookup). */
  lookup?: LookupFunction;
};

export type ImapChannel = {
  poll(sender: Sender, cursor: string | null): Promise<PollResult>;
  /** Files a sent email (its exact bytes) in the Sent folder when the sender's settings ask for it. */
  saveSent(sender: Sender, raw: Buffer): Promise<void>;
  findSent(sender: Sender, messageId: string): Promise<FindSentResult>;
  accountInfo(sender: Sender): Promise<AccountInfo>;
  close(): Promise<void>;
};

/** The channel's options with their defaults. */
function settingsOf(opts: ImapChannelOptions): ImapSettings {
  return {
    passwordFor: opts.passwordFor,
    matcher: opts.matcher,
    timeoutMs: opts.timeoutMs ?? 20_000,
    recheckMs: opts.recheckMs ?? 300_000,
    pollMs: opts.pollMs ?? 30_000,
    lookbackDays: opts.lookbackDays ?? 14,
    batch: opts.batch ?? 100,
    now: opts.now ?? Date.now,
    log: opts.log ?? (() => undefined),
    ...(opts.lookup ? { lookup: opts.lookup } : {}),
  };
}

export function createImapChannel(opts: ImapChannelOptions): ImapChannel {
  const settings = settingsOf(opts);
  const conns = new ImapConnections(settings);
  return {
    async poll(sender, cursor) {
      const cfg = imapConfig(sender);
      if (!cfg) throw new ChannelFailure('unsupported', `${sender.name} has no IMAP settings, so its mailbox is not read.`);
      return pollInbox(conns, settings, sender, cfg, cursor);
    },
    async saveSent(sender, raw) {
      const cfg = imapConfig(sender);
      if (!cfg || cfg.sentCopy !== 'append') return;
      await fileInSent(conns, sender, cfg, raw);
    },
    async findSent(sender, messageId) {
      const cfg = imapConfig(sender);
      // Without a copy kept for every send, absence from Sent proves nothing.
      if (!cfg || cfg.sentCopy === 'none') return { status: 'unknown' };
      return lookUpSent(conns, sender, cfg, messageId);
    },
    async accountInfo(sender) {
      const cfg = imapConfig(sender);
      if (!cfg) return { canSendMessage: true, reason: null };
      try {
        await conns.watch(sender, cfg);
        return { canSendMessage: true, reason: null };
      } catch (e) {
        return { canSendMessage: false, reason: classifyImapError(e).message };
      }
    },
    close: () => conns.closeAll(),
  };
}
