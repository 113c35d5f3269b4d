/**
 * Polling a sender's INBOX (channels/imap.ts), step by step: whether to look at all (new mail was
 * announced, or the interval is over), which messages are new since the cursor (a batch at a time),
 * what each one is (channels/inbound-mail.ts) and which of our sends it answers (the matcher).
 *
 * The poll cursor is `imap:<UIDVALIDITY>:<last UID>`. A first poll, or a mailbox whose UIDVALIDITY
 * changed, looks back over the last days; a reply already recorded (same Message-ID) is not
 * recorded twice.
 */
import type { FetchMessageObject } from 'imapflow';
import { simpleParser } from 'mailparser';
import type { ParsedMail } from 'mailparser';
import { ChannelFailure } from '../shared/engine/channel.ts';
import type { ChannelEvent, PollResult } from '../shared/engine/channel.ts';
import type { Sender } from '../shared/model/index.ts';
import type { ImapConfig, InboundMatcher } from './imap.ts';
import { classifyImapError } from './imap-connections.ts';
import type { ImapConnections, ImapSettings, Watch } from './imap-connections.ts';
import { classifyInbound, firstAddress, messageIdsIn, replyText } from './inbound-mail.ts';

const CURSOR = /^imap:(\d+):(\d+)$/;
const MAX_SOURCE = 4 * 1024 * 1024;
const DAY_MS = 86_400_000;

/** The mailbox (UIDVALIDITY) and last UID a cursor names, or null for no cursor or another kind. */
export function parseCursor(cursor: string | null): { validity: string; last: number } | null {
  const parsed = cursor ? CURSOR.exec(cursor) : null;
  return parsed && parsed[1] !== undefined && parsed[2] !== undefined ? { validity: parsed[1], last: Number(parsed[2]) } : null;
}

/** Whether a poll of the same mailbox should look at it: new mail was announced, or the time
 * between looks is over (with IDLE the long recheck, in case IDLE silently stopped; without it the
 * growing interval). */
export function lookDue(w: Pick<Watch, 'dirty' | 'idle' | 'lastFetchAt' | 'interval'>, recheckMs: number, nowMs: number): boolean {
  if (w.dirty) return true;
  const since = nowMs - w.lastFetchAt;
  return w.idle ? since >= recheckMs : since >= w.interval;
}

/** The wait before the next look without IDLE: back to the shortest after mail came, else doubled
 * up to the recheck interval. */
export function nextInterval(interval: number, gotMail: boolean, s: Pick<ImapSettings, 'pollMs' | 'recheckMs'>): number {
  return gotMail ? s.pollMs : Math.min(s.recheckMs, interval * 2);
}

/** The UIDs to read now from what a search found: those after `last`, in order, at most `batch`;
 * `more` when some are left for the next poll (`n:*` also answers the highest message when n is
 * above it, hence the filter). */
export function newUids(found: readonly number[] | false | undefined, last: number, batch: number): { wanted: number[]; more: boolean } {
  const uids = (found || []).filter((u) => u > last).sort((a, b) => a - b);
  return { wanted: uids.slice(0, batch), more: uids.length > batch };
}

/** The messages of one look at the INBOX, oldest first, with the mailbox's UIDVALIDITY and the
 * last UID already read before them. */
type Look = { validity: string; last: number; messages: FetchMessageObject[] };

/** Looks at the INBOX: the new messages since the cursor (a first look, or a rebuilt mailbox: those
 * of the last days), a batch of them read. Throws what the server or socket said. */
async function lookAtInbox(w: Watch, cursor: string | null, s: ImapSettings): Promise<Look> {
  const messages: FetchMessageObject[] = [];
  const announced = w.dirty;
  const lock = await w.client.getMailboxLock('INBOX');
  let validity: string;
  let last = 0;
  try {
    // A look on the interval (nothing announced): NOOP brings the mailbox's news first.
    if (!announced) await w.client.noop();
    const mb = w.client.mailbox;
    if (!mb) throw new ChannelFailure('failed', 'the INBOX could not be opened');
    validity = String(mb.uidValidity);
    w.validity = validity;
    const parsed = parseCursor(cursor);
    const same = parsed !== null && parsed.validity === validity;
    if (same) last = parsed.last;
    w.dirty = false;
    let wanted: number[] = [];
    if (mb.exists > 0) {
      const found = same ? await w.client.search({ uid: `${last + 1}:*` }, { uid: true }) : await w.client.search({ since: new Date(s.now() - s.lookbackDays * DAY_MS) }, { uid: true });
      const uids = newUids(found, last, s.batch);
      if (uids.more) w.dirty = true;
      wanted = uids.wanted;
    }
    if (wanted.length > 0) {
      // Replies and reports are small; a message with large attachments is read up to its first
      // few megabytes, which hold the headers and text that decide what it is.
      for await (const m of w.client.fetch(wanted, { uid: true, source: { maxLength: MAX_SOURCE }, internalDate: true }, { uid: true })) messages.push(m);
    }
  } finally {
    lock.release();
  }
  messages.sort((a, b) => a.uid - b.uid);
  return { validity, last, messages };
}

/** An inbound email as the matching needs it. */
export type InboundMail = { mail: ParsedMail; source: string; at: string; messageId: string };

/** Parses a fetched message: when it arrived (the server's date, else the message's, else now) and
 * its Message-ID (one made from its UID when it has none). Null when it has no source or cannot be
 * parsed (logged). */
export async function readInbound(sender: Sender, m: Pick<FetchMessageObject, 'uid' | 'source' | 'internalDate'>, s: Pick<ImapSettings, 'now' | 'log'>): Promise<InboundMail | null> {
  if (!m.source) return null;
  let mail: ParsedMail;
  try {
    mail = await simpleParser(m.source, { skipImageLinks: true, skipTextToHtml: true });
  } catch (e) {
    s.log(`IMAP ${sender.name}: message ${m.uid} could not be parsed (${(e as Error).message})`);
    return null;
  }
  const received = m.internalDate ? new Date(m.internalDate) : null;
  const at = (received && !Number.isNaN(received.getTime()) ? received : mail.date && !Number.isNaN(mail.date.getTime()) ? mail.date : new Date(s.now())).toISOString();
  const messageId = mail.messageId ? messageIdsIn(mail.messageId)[0] ?? mail.messageId.trim() : `<imap-${m.uid}@${sender.id}>`;
  return { mail, source: m.source.toString('utf8'), at, messageId };
}

/** The channel event an inbound email is: a bounce of one of our sends, a request to unsubscribe
 * (by the token in its subject), or an (automatic) reply to one (by the Message-IDs it cites, else
 * by its sender's address). Null for our own mail
 * (`own`: the sender's address), mail about none of our outreach, and a reply already recorded. */
export async function inboundEvent(matcher: InboundMatcher, sender: Sender, own: string, inbound: InboundMail): Promise<ChannelEvent | null> {
  const { mail, at, messageId } = inbound;
  const from = firstAddress(mail.from);
  // Our own mail (a copy filed in INBOX, a send to ourselves) is nobody's reply.
  if (own && from === own) return null;
  const kind = classifyInbound(mail, inbound.source);
  if (kind.kind === 'bounce') {
    const b = kind.bounce;
    const match = (b.originalMessageIds.length > 0 ? await matcher.byMessageIds(sender, b.originalMessageIds) : null)
      ?? (b.recipient ? await matcher.byAddress(sender, b.recipient, at) : null);
    if (!match) return null;
    return {
      kind: 'bounce', leadId: match.leadId, chatId: match.chatId, at, severity: b.severity, status: b.status, recipient: b.recipient, reason: b.reason,
      externalId: messageId, originalMessageId: b.originalMessageIds[0] ?? null,
    };
  }
  // An unsubscribe mail names its lead in its token, whatever address it comes from (a forwarding
  // alias, a mail client acting for the person); the runner verifies the token.
  if (kind.kind === 'unsubscribe') return { kind: 'unsubscribe', leadId: kind.leadId, token: kind.token, at, externalId: messageId };
  const cited = [...messageIdsIn(mail.inReplyTo), ...messageIdsIn(mail.references)].reverse();
  const match = (cited.length > 0 ? await matcher.byMessageIds(sender, cited) : null) ?? (from ? await matcher.byAddress(sender, from, at) : null);
  if (!match) return null;
  if (await matcher.recorded(sender, messageId)) return null;
  const text = replyText(mail);
  if (kind.kind === 'auto_reply') {
    return { kind: 'auto_reply', leadId: match.leadId, chatId: match.chatId, at, subject: (mail.subject ?? '').slice(0, 500), text, why: kind.why, externalId: messageId };
  }
  return { kind: 'reply', leadId: match.leadId, chatId: match.chatId, text, at, externalId: messageId };
}

/** The bare address of a From setting ("Name <a@b>" or "a@b"), lower-cased. */
export const bareAddress = (v: unknown): string => {
  const text = typeof v === 'string' ? v.trim() : '';
  return (/<([^<>\s]+)>/.exec(text)?.[1] ?? text).toLowerCase();
};

/** One poll of a sender's INBOX: the events since the cursor and the cursor after them. */
export async function pollInbox(conns: ImapConnections, s: ImapSettings, sender: Sender, cfg: ImapConfig, cursor: string | null): Promise<PollResult> {
  conns.sweep(sender.id);
  const w = await conns.watch(sender, cfg);
  w.lastPollAt = s.now();
  const own = bareAddress(sender.channelConfig.from);
  // Nothing announced and not yet time to look: answer without a command, so the connection
  // stays in IDLE (any command ends it until the client starts it again). The cursor stays as it is.
  const parsed = parseCursor(cursor);
  if (cursor !== null && parsed !== null && parsed.validity === w.validity && !lookDue(w, s.recheckMs, s.now())) return { events: [], cursor };
  let look: Look;
  try {
    look = await lookAtInbox(w, cursor, s);
  } catch (e) {
    conns.drop(sender.id, w);
    throw classifyImapError(e);
  }
  const events: ChannelEvent[] = [];
  let last = look.last;
  for (const m of look.messages) {
    const inbound = await readInbound(sender, m, s);
    const ev = inbound ? await inboundEvent(s.matcher, sender, own, inbound) : null;
    if (ev) events.push(ev);
    last = Math.max(last, m.uid);
  }
  w.lastFetchAt = s.now();
  w.interval = nextInterval(w.interval, events.length > 0, s);
  return { events, cursor: `imap:${look.validity}:${last}` };
}
