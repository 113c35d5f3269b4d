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
 * The poll cursor is `imap:<UIDVALIDITY>:<last UID>`. A first poll, or a mailbox whose UIDVALIDITY
 * changed, looks back over the last days; a reply already recorded (same Message-ID) is not
 * recorded twice.
 */
import type { LookupFunction } from 'node:net';
import { ImapFlow } from 'imapflow';
import type { FetchMessageObject } from 'imapflow';
import { simpleParser } from 'mailparser';
import type { ParsedMail } from 'mailparser';
import { ChannelFailure } from '../shared/engine/channel.ts';
import type { AccountInfo, ChannelEvent, FindSentResult, PollResult } from '../shared/engine/channel.ts';
import type { Sender } from '../shared/model/index.ts';
import { classifyInbound, firstAddress, messageIdsIn, replyText } from './inbound-mail.ts';

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
  passwordFor(sender: Sender): string | null | Promise<string | null>;
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

type Watch = {
  key: string;
  client: ImapFlow;
  /** New mail was announced (EXISTS) since the last fetch. */
  dirty: boolean;
  lastFetchAt: number;
  /** Without IDLE: the wait before the next look, doubling while nothing arrives. */
  interval: number;
  idle: boolean;
  open: boolean;
  /** The INBOX's UIDVALIDITY when it was opened. */
  validity: string;
  /** When the runner last asked (connections nobody asks about any more are closed). */
  lastPollAt: number;
};

type ImapError = Error & { authenticationFailed?: boolean; serverResponseCode?: string; responseText?: string; code?: string };

/** IMAP and socket failures in the channel's vocabulary. */
export function classifyImapError(e: unknown, what = 'the mail server (IMAP)'): ChannelFailure {
  if (e instanceof ChannelFailure) return e;
  const err = e as ImapError;
  const detail = err?.responseText || err?.message || String(e);
  const temporary = err?.serverResponseCode === 'UNAVAILABLE' || err?.serverResponseCode === 'INUSE' || err?.serverResponseCode === 'LIMIT';
  if (err?.authenticationFailed && !temporary) return new ChannelFailure('unauthorized', `${what} refused the login (${detail})`);
  if (temporary) return new ChannelFailure('limited', `${what} asked to retry later (${detail})`);
  return new ChannelFailure('failed', `${what} could not be reached or failed (${detail})`);
}

const CURSOR = /^imap:(\d+):(\d+)$/;
const MAX_SOURCE = 4 * 1024 * 1024;

/** The bare address of a From setting ("Name <a@b>" or "a@b"), lower-cased. */
const bareAddress = (v: unknown): string => {
  const text = typeof v === 'string' ? v.trim() : '';
  return (/<([^<>\s]+)>/.exec(text)?.[1] ?? text).toLowerCase();
};

export type ImapChannel = {
  poll(sender: Sender, cursor: string | null): Promise<PollResult>;
  /** Files a sent email (its exact bytes) in the Sent folder when the sender's settings ask for it. */
  saveSent(sender: Sender, raw: Buffer): Promise<void>;
  findSent(sender: Sender, messageId: string): Promise<FindSentResult>;
  accountInfo(sender: Sender): Promise<AccountInfo>;
  close(): Promise<void>;
};

export function createImapChannel(opts: ImapChannelOptions): ImapChannel {
  const watches = new Map<string, Watch>();
  const timeout = opts.timeoutMs ?? 20_000;
  const recheckMs = opts.recheckMs ?? 300_000;
  const pollMs = opts.pollMs ?? 30_000;
  const lookbackDays = opts.lookbackDays ?? 14;
  const batch = opts.batch ?? 100;
  const now = opts.now ?? Date.now;
  const log = opts.log ?? (() => undefined);

  function configOrFail(sender: Sender): ImapConfig {
    const cfg = imapConfig(sender);
    if (!cfg) throw new ChannelFailure('unsupported', `${sender.name} has no IMAP settings, so its mailbox is not read.`);
    return cfg;
  }

  function newClient(cfg: ImapConfig, password: string | null): ImapFlow {
    return new ImapFlow({
      host: cfg.host, port: cfg.port, secure: cfg.secure,
      auth: { user: cfg.user, pass: password ?? '' },
      // ImapFlow passes its `tls` options to net.connect / tls.connect, which resolve with `lookup`.
      ...(opts.lookup ? { tls: { lookup: opts.lookup } } : {}),
      logger: false,
      connectionTimeout: timeout, greetingTimeout: timeout, socketTimeout: Math.max(timeout, 60_000),
      // IDLE soon after each command, so new mail is announced between two ticks.
      autoIdleDelay: 500,
      // Some servers end an IDLE after ~30 min; restarting it earlier keeps the connection alive.
      maxIdleTime: 10 * 60_000,
    });
  }

  async function connect(sender: Sender, cfg: ImapConfig): Promise<{ client: ImapFlow; key: string }> {
    const password = await opts.passwordFor(sender);
    if (password === null) throw new ChannelFailure('unauthorized', `no IMAP password is stored for ${sender.name} on this host`);
    const key = JSON.stringify([cfg.host, cfg.port, cfg.secure, cfg.user, password]);
    const client = newClient(cfg, password);
    // Errors after connect also arrive as 'error' events: without a listener they would crash the process.
    client.on('error', (e: Error) => log(`IMAP ${sender.name}: ${e.message}`));
    try {
      await client.connect();
    } catch (e) {
      client.close();
      throw classifyImapError(e);
    }
    return { client, key };
  }

  /** The sender's open INBOX connection: reused while the settings and password are the same. */
  async function watch(sender: Sender, cfg: ImapConfig): Promise<Watch> {
    const password = await opts.passwordFor(sender);
    const key = JSON.stringify([cfg.host, cfg.port, cfg.secure, cfg.user, password]);
    const cur = watches.get(sender.id);
    if (cur && cur.open && cur.key === key && cur.client.usable) return cur;
    if (cur) {
      watches.delete(sender.id);
      await cur.client.logout().catch(() => cur.client.close());
    }
    const { client } = await connect(sender, cfg);
    const w: Watch = { key, client, dirty: true, lastFetchAt: 0, interval: pollMs, idle: client.capabilities.has('IDLE'), open: true, validity: '', lastPollAt: now() };
    client.on('exists', () => {
      w.dirty = true;
    });
    client.on('close', () => {
      w.open = false;
      if (watches.get(sender.id) === w) watches.delete(sender.id);
    });
    try {
      const mb = await client.mailboxOpen('INBOX');
      w.validity = String(mb.uidValidity);
    } catch (e) {
      client.close();
      throw classifyImapError(e);
    }
    watches.set(sender.id, w);
    return w;
  }

  /** Whether this poll should look at the mailbox, or the connection says nothing new arrived. */
  function due(w: Watch, sameMailbox: boolean): boolean {
    if (!sameMailbox || w.dirty) return true;
    const since = now() - w.lastFetchAt;
    return w.idle ? since >= recheckMs : since >= w.interval;
  }

  async function toEvent(sender: Sender, m: FetchMessageObject, own: string): Promise<ChannelEvent | null> {
    if (!m.source) return null;
    let mail: ParsedMail;
    try {
      mail = await simpleParser(m.source, { skipImageLinks: true, skipTextToHtml: true });
    } catch (e) {
      log(`IMAP ${sender.name}: message ${m.uid} could not be parsed (${(e as Error).message})`);
      return null;
    }
    const from = firstAddress(mail.from);
    // Our own mail (a copy filed in INBOX, a send to ourselves) is nobody's reply.
    if (own && from === own) return null;
    const received = m.internalDate ? new Date(m.internalDate) : null;
    const at = (received && !Number.isNaN(received.getTime()) ? received : mail.date && !Number.isNaN(mail.date.getTime()) ? mail.date : new Date(now())).toISOString();
    const messageId = mail.messageId ? messageIdsIn(mail.messageId)[0] ?? mail.messageId.trim() : `<imap-${m.uid}@${sender.id}>`;
    const kind = classifyInbound(mail, m.source.toString('utf8'));
    if (kind.kind === 'bounce') {
      const b = kind.bounce;
      const match = (b.originalMessageIds.length > 0 ? await opts.matcher.byMessageIds(sender, b.originalMessageIds) : null)
        ?? (b.recipient ? await opts.matcher.byAddress(sender, b.recipient, at) : null);
      if (!match) return null;
      return {
        kind: 'bounce', leadId: match.leadId, chatId: match.chatId, at, severity: b.severity, status: b.status, recipient: b.recipient, reason: b.reason,
        externalId: messageId, originalMessageId: b.originalMessageIds[0] ?? null,
      };
    }
    const cited = [...messageIdsIn(mail.inReplyTo), ...messageIdsIn(mail.references)].reverse();
    const match = (cited.length > 0 ? await opts.matcher.byMessageIds(sender, cited) : null) ?? (from ? await opts.matcher.byAddress(sender, from, at) : null);
    if (!match) return null;
    if (await opts.matcher.recorded(sender, messageId)) return null;
    const text = replyText(mail);
    if (kind.kind === 'auto_reply') {
      return { kind: 'auto_reply', leadId: match.leadId, chatId: match.chatId, at, subject: (mail.subject ?? '').slice(0, 500), text, why: kind.why, externalId: messageId };
    }
    return { kind: 'reply', leadId: match.leadId, chatId: match.chatId, text, at, externalId: messageId };
  }

  /** Closes the connections of senders no longer polled here (removed, moved to another host, or
   * IMAP settings dropped): providers limit how many connections a mailbox may hold. */
  function sweep(except: string): void {
    const stale = now() - Math.max(2 * recheckMs, 15 * 60_000);
    for (const [id, w] of watches) {
      if (id === except || w.lastPollAt >= stale) continue;
      watches.delete(id);
      void w.client.logout().catch(() => w.client.close());
    }
  }

  async function poll(sender: Sender, cursor: string | null): Promise<PollResult> {
    const cfg = configOrFail(sender);
    sweep(sender.id);
    const w = await watch(sender, cfg);
    w.lastPollAt = now();
    const own = bareAddress(sender.channelConfig.from);
    const fetched: FetchMessageObject[] = [];
    let validity = w.validity;
    let last = 0;
    {
      // Nothing announced and not yet time to look: answer without a command, so the connection
      // stays in IDLE (any command ends it until the client starts it again).
      const parsed = cursor ? CURSOR.exec(cursor) : null;
      if (parsed !== null && parsed[1] === w.validity && !due(w, true)) return { events: [], cursor: `imap:${w.validity}:${parsed[2]}` };
    }
    try {
      const announced = w.dirty;
      const lock = await w.client.getMailboxLock('INBOX');
      try {
        // A look on the interval (nothing announced): NOOP brings the mailbox's news first.
        if (!announced) await w.client.noop();
        const mb = w.client.mailbox;
        if (!mb) throw new ChannelFailure('failed', 'the INBOX could not be opened');
        validity = String(mb.uidValidity);
        w.validity = validity;
        const parsed = cursor ? CURSOR.exec(cursor) : null;
        const same = parsed !== null && parsed[1] === validity;
        if (same) last = Number(parsed[2]);
        w.dirty = false;
        // Which messages are new: UIDs after the cursor, or (a first look, or a rebuilt mailbox)
        // those of the last days. Only a batch is read now; the rest with the next poll.
        let uids: number[] = [];
        if (mb.exists > 0) {
          const found = same ? await w.client.search({ uid: `${last + 1}:*` }, { uid: true }) : await w.client.search({ since: new Date(now() - lookbackDays * 86_400_000) }, { uid: true });
          // `n:*` also answers the highest message when n is above it.
          uids = (found || []).filter((u) => u > last).sort((a, b) => a - b);
        }
        if (uids.length > batch) w.dirty = true;
        const wanted = uids.slice(0, batch);
        if (wanted.length > 0) {
          // Replies and reports are small; a message with large attachments is read up to its first
          // few megabytes, which hold the headers and text that decide what it is.
          for await (const m of w.client.fetch(wanted, { uid: true, source: { maxLength: MAX_SOURCE }, internalDate: true }, { uid: true })) fetched.push(m);
        }
      } finally {
        lock.release();
      }
    } catch (e) {
      watches.delete(sender.id);
      w.client.close();
      throw classifyImapError(e);
    }
    fetched.sort((a, b) => a.uid - b.uid);
    const events: ChannelEvent[] = [];
    for (const m of fetched) {
      const ev = await toEvent(sender, m, own);
      if (ev) events.push(ev);
      last = Math.max(last, m.uid);
    }
    w.lastFetchAt = now();
    w.interval = events.length > 0 ? pollMs : Math.min(recheckMs, w.interval * 2);
    return { events, cursor: `imap:${validity}:${last}` };
  }

  /** A short-lived connection (the Sent folder; the INBOX connection stays on INBOX). */
  async function withClient<T>(sender: Sender, cfg: ImapConfig, fn: (c: ImapFlow) => Promise<T>): Promise<T> {
    const { client } = await connect(sender, cfg);
    try {
      return await fn(client);
    } finally {
      await client.logout().catch(() => client.close());
    }
  }

  async function sentFolder(c: ImapFlow): Promise<string | null> {
    const boxes = await c.list();
    return boxes.find((b) => b.specialUse === '\\Sent')?.path ?? null;
  }

  return {
    poll,
    async saveSent(sender, raw) {
      const cfg = imapConfig(sender);
      if (!cfg || cfg.sentCopy !== 'append') return;
      const w = watches.get(sender.id);
      const append = async (c: ImapFlow): Promise<void> => {
        const path = await sentFolder(c);
        if (!path) throw new ChannelFailure('failed', 'the mailbox has no Sent folder (SPECIAL-USE \\Sent)');
        await c.append(path, raw, ['\\Seen']);
      };
      if (w && w.open && w.client.usable) await append(w.client);
      else await withClient(sender, cfg, append);
    },
    async findSent(sender, messageId) {
      const cfg = imapConfig(sender);
      // Without a copy kept for every send, absence from Sent proves nothing.
      if (!cfg || cfg.sentCopy === 'none') return { status: 'unknown' };
      return withClient(sender, cfg, async (c) => {
        const path = await sentFolder(c);
        if (!path) return { status: 'unknown' } satisfies FindSentResult;
        const lock = await c.getMailboxLock(path);
        try {
          const uids = await c.search({ header: { 'message-id': messageId } }, { uid: true });
          const uid = uids && uids.length > 0 ? uids[uids.length - 1] : undefined;
          if (uid === undefined) {
            // A copy is filed after the server accepted the email: a crash in between leaves none,
            // so a missing copy cannot prove the email was not sent.
            return { status: 'unknown' } satisfies FindSentResult;
          }
          const m = await c.fetchOne(String(uid), { uid: true, headers: ['references'] }, { uid: true });
          const refs = m && m.headers ? messageIdsIn(m.headers.toString('utf8')) : [];
          return { status: 'sent', externalId: messageId, chatId: refs[0] ?? messageId } satisfies FindSentResult;
        } finally {
          lock.release();
        }
      });
    },
    async accountInfo(sender) {
      const cfg = imapConfig(sender);
      if (!cfg) return { canSendMessage: true, reason: null };
      try {
        await watch(sender, cfg);
        return { canSendMessage: true, reason: null };
      } catch (e) {
        return { canSendMessage: false, reason: classifyImapError(e).message };
      }
    },
    async close() {
      const all = [...watches.values()];
      watches.clear();
      await Promise.all(all.map((w) => w.client.logout().catch(() => w.client.close())));
    },
  };
}
