/**
 * What an inbound email is, from its parsed form (mailparser): a delivery-status report (bounce,
 * RFC 3464), a request to unsubscribe through our List-Unsubscribe mailto: (subject
 * `unsubscribe <token>`), an automatic reply (RFC 3834 and the headers auto-responders use in
 * practice), or a person's reply. Pure functions, so each rule has a unit test without a server.
 */
import type { AddressObject, HeaderValue, ParsedMail } from 'mailparser';
import { withoutQuotedHistory } from '../shared/replies/quoted.ts';
import { readUnsubscribeToken, tokenInSubject } from '../shared/replies/unsubscribe-token.ts';

export type BounceInfo = {
  /** failed + 5.x.x: the address does not work. delayed, or 4.x.x: the mail server still tries. */
  severity: 'hard' | 'soft';
  /** The enhanced status code (RFC 3463), e.g. 5.1.1; '' when the report has none. */
  status: string;
  /** The recipient the report is about (Final-Recipient or Original-Recipient), lower-cased. */
  recipient: string;
  /** A human reason: the Diagnostic-Code's text when given, else the status's meaning. */
  reason: string;
  /** Message-IDs of the original message, from the returned headers or message. */
  originalMessageIds: string[];
};

export type InboundKind =
  | { kind: 'bounce'; bounce: BounceInfo }
  /** `leadId`: the lead the token names (verified against the sender's key by the runner). */
  | { kind: 'unsubscribe'; token: string; leadId: string }
  | { kind: 'auto_reply'; why: string }
  | { kind: 'reply' };

function headerText(v: HeaderValue | undefined): string {
  if (v === undefined || v === null) return '';
  if (typeof v === 'string') return v;
  if (Array.isArray(v)) return v.map((x) => headerText(x)).join(', ');
  if (v instanceof Date) return v.toISOString();
  if (typeof v === 'object' && 'value' in v) {
    const value = (v as { value: unknown }).value;
    return typeof value === 'string' ? value : '';
  }
  return '';
}

/** A header as text (first value of a structured header), lower-cased keys as mailparser keeps them. */
export function header(mail: Pick<ParsedMail, 'headers'>, name: string): string {
  return headerText(mail.headers.get(name.toLowerCase())).trim();
}

/** Message-IDs in a header value, with their angle brackets, in order. */
export function messageIdsIn(text: string | string[] | undefined): string[] {
  const all = Array.isArray(text) ? text.join(' ') : (text ?? '');
  return [...all.matchAll(/<[^<>\s]+>/g)].map((m) => m[0]);
}

const OUT_OF_OFFICE = /(out of (the )?office|automatic reply|auto(matic)?[- ]?(reply|response|antwort)|autoreply|away from (the |my )?(office|desk)|on (annual )?leave|on vacation|vacation (reply|notice)|abwesenheit|réponse automatique|absence|fuera de la oficina|assente|afwezig)/i;

/** Why a message is an automatic reply, or null when a person wrote it. */
export function autoReplyReason(mail: Pick<ParsedMail, 'headers' | 'subject'>): string | null {
  const autoSubmitted = header(mail, 'auto-submitted').toLowerCase();
  if (autoSubmitted && !/^no\b/.test(autoSubmitted)) return `Auto-Submitted: ${autoSubmitted}`;
  if (mail.headers.has('x-autoreply')) return 'X-Autoreply';
  if (mail.headers.has('x-autorespond')) return 'X-Autorespond';
  const precedence = header(mail, 'precedence').toLowerCase();
  if (precedence === 'auto_reply' || precedence === 'bulk' || precedence === 'junk') return `Precedence: ${precedence}`;
  const suppress = header(mail, 'x-auto-response-suppress');
  if (suppress && /oof|autoreply|all/i.test(suppress) && OUT_OF_OFFICE.test(mail.subject ?? '')) return 'out-of-office';
  if (OUT_OF_OFFICE.test(mail.subject ?? '')) return 'out-of-office subject';
  return null;
}

type Fields = Map<string, string>;

/** The header-like blocks of a message/delivery-status body: the message's fields, then one per recipient. */
function statusBlocks(body: string): Fields[] {
  const blocks: Fields[] = [];
  for (const chunk of body.replace(/\r\n/g, '\n').split(/\n\s*\n/)) {
    const fields: Fields = new Map();
    let last = '';
    for (const line of chunk.split('\n')) {
      if (/^\s/.test(line) && last) {
        fields.set(last, `${fields.get(last) ?? ''} ${line.trim()}`);
        continue;
      }
      const m = /^([A-Za-z0-9-]+):\s*(.*)$/.exec(line);
      if (!m || m[1] === undefined) continue;
      last = m[1].toLowerCase();
      fields.set(last, m[2] ?? '');
    }
    if (fields.size > 0) blocks.push(fields);
  }
  return blocks;
}

const STATUS_MEANING: Record<string, string> = {
  '5.1.1': 'the mailbox does not exist',
  '5.1.2': 'the domain does not exist',
  '5.1.10': 'the recipient address has no mail server',
  '5.2.1': 'the mailbox is disabled',
  '5.2.2': 'the mailbox is full',
  '5.4.1': 'the recipient server refused the message',
  '5.7.1': 'the recipient server refused the message as unauthorised or as spam',
  '4.2.2': 'the mailbox is full for now',
  '4.4.1': 'the recipient server did not answer yet',
  '4.7.1': 'the recipient server asked to try later',
};

function addressOf(field: string): string {
  // "rfc822; someone@example.com" (RFC 3464 address-type; address)
  const v = field.includes(';') ? field.slice(field.indexOf(';') + 1) : field;
  return v.trim().replace(/^<|>$/g, '').toLowerCase();
}

type RawPart = { contentType: string; body: string };

/** The top-level parts of a multipart message, from its source: mailparser folds a
 * message/delivery-status part into the text, so the report's fields are read here. */
export function rawParts(source: string, boundary: string): RawPart[] {
  const text = source.replace(/\r\n/g, '\n');
  const marker = `\n--${boundary}`;
  const chunks = `\n${text}`.split(marker).slice(1);
  const parts: RawPart[] = [];
  for (const chunk of chunks) {
    if (chunk.startsWith('--')) break;
    const body = chunk.replace(/^[ \t]*\n/, '');
    const split = body.indexOf('\n\n');
    const head = (split < 0 ? body : body.slice(0, split)).replace(/\n[ \t]+/g, ' ');
    let content = split < 0 ? '' : body.slice(split + 2);
    const contentType = (/^content-type:\s*([^;\s]+)/im.exec(head)?.[1] ?? 'text/plain').toLowerCase();
    const encoding = (/^content-transfer-encoding:\s*(\S+)/im.exec(head)?.[1] ?? '').toLowerCase();
    if (encoding === 'base64') content = Buffer.from(content.replace(/\s+/g, ''), 'base64').toString('utf8');
    else if (encoding === 'quoted-printable') content = content.replace(/=\n/g, '').replace(/=([0-9A-Fa-f]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));
    parts.push({ contentType, body: content });
  }
  return parts;
}

/** The bounce a delivery-status report describes, or null when the message is not one. */
export function bounceOf(mail: Pick<ParsedMail, 'headers'>, source: string): BounceInfo | null {
  const ct = mail.headers.get('content-type');
  const params = ct && typeof ct === 'object' && 'params' in ct ? (ct.params as Record<string, string>) : {};
  const type = headerText(ct).toLowerCase();
  if (type !== 'multipart/report' || (params['report-type'] ?? '').toLowerCase() !== 'delivery-status' || !params.boundary) return null;
  const parts = rawParts(source, params.boundary);
  const statusPart = parts.find((a) => /^message\/(global-)?delivery-status$/i.test(a.contentType));
  if (!statusPart) return null;
  const blocks = statusBlocks(statusPart.body);
  const recipients = blocks.filter((b) => b.has('action') && (b.has('final-recipient') || b.has('original-recipient')));
  // The worst recipient decides: a failure outranks a delay.
  const failed = recipients.find((b) => (b.get('action') ?? '').trim().toLowerCase() === 'failed');
  const delayed = recipients.find((b) => (b.get('action') ?? '').trim().toLowerCase() === 'delayed');
  const block = failed ?? delayed;
  if (!block) return null;
  const status = /(\d\.\d{1,3}\.\d{1,3})/.exec(block.get('status') ?? '')?.[1] ?? '';
  const severity: BounceInfo['severity'] = failed === block && status.startsWith('5') ? 'hard' : 'soft';
  const diagnostic = (block.get('diagnostic-code') ?? '').replace(/^[^;]*;\s*/, '').trim();
  const reason = diagnostic || STATUS_MEANING[status] || (severity === 'hard' ? 'the recipient server refused the message' : 'delivery is delayed');
  const original = parts.find((a) => /^(message\/(global-)?rfc822|text\/(rfc822-)?headers|message\/global-headers)$/i.test(a.contentType));
  let originalMessageIds: string[] = [];
  if (original) {
    const head = original.body.split(/\n\n/)[0] ?? '';
    const m = /^message-id:\s*(.*(?:\n[ \t].*)*)/im.exec(head);
    originalMessageIds = messageIdsIn(m?.[1]);
  }
  return {
    severity,
    status,
    recipient: addressOf(block.get('original-recipient') ?? block.get('final-recipient') ?? ''),
    reason: reason.slice(0, 500),
    originalMessageIds,
  };
}

/** `source`: the raw message (the report's parts are read from it). */
export function classifyInbound(mail: Pick<ParsedMail, 'headers' | 'subject'>, source: string): InboundKind {
  const bounce = bounceOf(mail, source);
  if (bounce) return { kind: 'bounce', bounce };
  // Before the automatic-reply test: a mail client that sends the unsubscribe mail by itself may
  // mark it Auto-Submitted, and it is still the person's request.
  const token = tokenInSubject(mail.subject ?? '');
  const claim = token ? readUnsubscribeToken(token) : null;
  if (token && claim) return { kind: 'unsubscribe', token, leadId: claim.leadId };
  const why = autoReplyReason(mail);
  if (why) return { kind: 'auto_reply', why };
  return { kind: 'reply' };
}

/** The first address of a From/To header, lower-cased. */
export function firstAddress(a: AddressObject | AddressObject[] | undefined): string {
  const list = Array.isArray(a) ? a : a ? [a] : [];
  for (const obj of list) for (const v of obj.value) if (v.address) return v.address.trim().toLowerCase();
  return '';
}

/** The new part of a reply: the text above the quoted earlier message and the signature
 * (shared/replies/quoted.ts, which the label rules read too). */
export function replyText(mail: Pick<ParsedMail, 'text' | 'html'>, max = 20_000): string {
  let text = mail.text ?? '';
  if (!text.trim() && typeof mail.html === 'string') {
    text = mail.html.replace(/<(br|\/p|\/div)[^>]*>/gi, '\n').replace(/<[^>]+>/g, '').replace(/&nbsp;/g, ' ').replace(/&amp;/g, '&').replace(/&lt;/g, '<').replace(/&gt;/g, '>');
  }
  return withoutQuotedHistory(text).slice(0, max);
}
