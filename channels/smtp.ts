/**
 * The SMTP email channel (nodemailer). A sender's channelConfig holds host, port, secure, user and
 * from (never the password: the host that runs the sender keeps it, passwordFor reads it). Emails
 * carry our messages document id as their Message-ID, and continue a thread with In-Reply-To and
 * References, so mail clients show a sequence's follow-ups as one conversation. Plain SMTP cannot
 * see replies or opens: poll reports nothing here; a sender with IMAP settings reads its mailbox
 * (channels/imap.ts, joined to this channel in channels/host.ts). Each email is composed once and
 * those exact bytes are sent and handed to `afterSend` (which files the copy in the Sent folder).
 * A recipient the server refuses for good (5xx to RCPT TO, or 5.1.x/5.2.x) is a bounce at send time.
 *
 * Every email to a lead carries List-Unsubscribe (RFC 2369) once its sender has an unsubscribe key:
 * a mailto: to the sender's own mailbox with the subject `unsubscribe <token>` (the runner reads
 * it over IMAP), and, where the workspace has the sync server's public https address, the one-click
 * URL of RFC 8058 with `List-Unsubscribe-Post: List-Unsubscribe=One-Click`. The token is signed
 * with the sender's key (shared/replies/unsubscribe-token.ts), so it names the lead without an API
 * key and cannot be made up.
 */
import nodemailer from 'nodemailer';
import type { Transporter } from 'nodemailer';
import MailComposer from 'nodemailer/lib/mail-composer';
import type { Socket } from 'node:net';
import type SMTPTransport from 'nodemailer/lib/smtp-transport';
import { ChannelFailure } from '../shared/engine/channel.ts';
import type { AccountInfo, Channel, ChannelAction, ChannelSendResult, PollResult, PostReadResult, SendBounce } from '../shared/engine/channel.ts';
import type { Lead, Sender } from '../shared/model/index.ts';
import { signUnsubscribeToken, unsubscribeSubject, unsubscribeUrl } from '../shared/replies/unsubscribe-token.ts';

export type SmtpChannelOptions = {
  /** The account password from this machine's credential store (null: no authentication), or an
   * OAuth access token for a mailbox signed in with OAuth (XOAUTH2, channels/oauth-tokens.ts). */
  passwordFor(sender: Sender): MailLogin | Promise<MailLogin>;
  /** Milliseconds before a connection or command is given up (default 20 s). */
  timeoutMs?: number;
  /** Called with the exact bytes of each email the server accepted (e.g. to file it in Sent). Its
   * failure does not make the send fail: the email went out. */
  afterSend?: (sender: Sender, raw: Buffer, messageId: string) => Promise<void>;
  log?: (line: string) => void;
  /** The clock of the host (milliseconds): the Date header of each email. */
  now?: () => number;
  /** Opens the TCP connection instead of nodemailer (the sync server checks the address it connects
   * to: sync-server/sender-hosts.ts). Callback `false`: nodemailer connects itself. */
  getSocket?: (options: { host?: string; port?: number | string }, callback: (err: Error | null, socket?: { connection: Socket } | false) => void) => void;
  /** The sync server's public https address for the sender's workspace (workspaces.publicUrl), or
   * null: then List-Unsubscribe has the mailto: only. */
  publicUrlFor?: (sender: Sender) => string | null | Promise<string | null>;
};

/** A password, an OAuth access token, or nothing (a relay without a login). */
export type MailLogin = string | { accessToken: string } | null;

export type SmtpConfig = { host: string; port: number; secure: boolean; user: string; from: string; ignoreTLS: boolean };

/** The SMTP settings of a sender, or null when they are incomplete. */
export function smtpConfig(sender: Sender): SmtpConfig | null {
  const c = sender.channelConfig;
  const host = typeof c.host === 'string' ? c.host.trim() : '';
  const user = typeof c.user === 'string' ? c.user.trim() : '';
  const from = typeof c.from === 'string' && c.from.trim() ? c.from.trim() : user;
  const port = typeof c.port === 'number' ? c.port : typeof c.port === 'string' && /^\d+$/.test(c.port) ? Number(c.port) : 587;
  const secure = c.secure === true || c.secure === 'true' || (c.secure === undefined && port === 465);
  if (!host || !from.includes('@')) return null;
  // ignoreTLS exists for servers on a private network (and the tests); STARTTLS is used otherwise.
  return { host, port, secure, user, from, ignoreTLS: c.ignoreTLS === true };
}

const domainOf = (address: string): string => address.split('@')[1]?.replace(/>.*$/, '').trim() || 'localhost';

/** The Message-ID an email with this ref carries (our messages document id at the From domain). */
export function smtpMessageId(sender: Sender, ref: string): string | null {
  const cfg = smtpConfig(sender);
  return cfg ? `<${ref}@${domainOf(cfg.from)}>` : null;
}

type SmtpError = Error & { code?: string; responseCode?: number; command?: string; response?: string; rejected?: string[] };

/** The bounce a permanent refusal says, when it concerns the recipient (not our account or content). */
function bounceOf(err: SmtpError, recipient: string): SendBounce | null {
  const code = err?.responseCode;
  if (code === undefined || code < 500 || code >= 600) return null;
  const response = (err.response ?? err.message ?? '').trim();
  const status = /\b(5\.\d{1,3}\.\d{1,3})\b/.exec(response)?.[1] ?? '';
  const aboutRecipient = /^RCPT/i.test(err.command ?? '') || /^5\.[12]\./.test(status);
  if (!aboutRecipient) return null;
  const reason = response.replace(/^\d{3}[ -]/, '').replace(/^5\.\d{1,3}\.\d{1,3}\s*/, '').trim() || 'the mail server refused the address';
  return { status, recipient: (err.rejected?.[0] ?? recipient).toLowerCase(), reason: reason.slice(0, 500) };
}

/** SMTP and socket failures in the channel's vocabulary. */
export function classifySmtpError(e: unknown, recipient = ''): ChannelFailure {
  const err = e as SmtpError;
  const text = err?.message ?? String(e);
  const code = err?.responseCode;
  if (err?.code === 'EAUTH' || code === 530 || code === 534 || code === 535) return new ChannelFailure('unauthorized', `the mail server refused the login (${text})`);
  // 421 and 45x are "try again later" (also for one recipient): the server is asking us to slow down.
  if (code === 421 || (code !== undefined && code >= 450 && code < 460)) return new ChannelFailure('limited', `the mail server asked to retry later (${text})`);
  if (err?.code === 'EENVELOPE' || (code !== undefined && code >= 550 && code < 560)) {
    return new ChannelFailure('rejected', `the mail server refused the recipient (${text})`, null, bounceOf(err, recipient));
  }
  return new ChannelFailure('failed', `the mail server could not be reached or failed (${text})`);
}

/**
 * The List-Unsubscribe headers of an email from this sender to this lead: none while the sender has
 * no key (the runner gives it one before it sends), the mailto: always, the one-click URL and its
 * List-Unsubscribe-Post only with an https public address (RFC 8058 wants HTTPS).
 */
export async function listUnsubscribeHeaders(sender: Sender, lead: Pick<Lead, 'id'>, mailbox: string, publicUrl: string | null): Promise<Record<string, string>> {
  if (!sender.unsubscribeKey) return {};
  const token = await signUnsubscribeToken(sender.unsubscribeKey, { workspaceId: sender.workspaceId, sdrProfileId: sender.id, leadId: lead.id });
  if (!token) return {};
  const mailto = `<mailto:${encodeURI(mailbox)}?subject=${encodeURIComponent(unsubscribeSubject(token))}>`;
  if (!publicUrl || !/^https:\/\//i.test(publicUrl)) return { 'List-Unsubscribe': mailto };
  return { 'List-Unsubscribe': `<${unsubscribeUrl(publicUrl, token)}>, ${mailto}`, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' };
}

export type SmtpChannel = Channel & { close(): void };

export function createSmtpChannel(opts: SmtpChannelOptions): SmtpChannel {
  const transports = new Map<string, { key: string; transport: Transporter<SMTPTransport.SentMessageInfo> }>();
  const timeout = opts.timeoutMs ?? 20_000;

  async function transportFor(sender: Sender, cfg: SmtpConfig): Promise<Transporter<SMTPTransport.SentMessageInfo>> {
    const password = await opts.passwordFor(sender);
    // The password is part of the key: new credentials must replace a transport that logs in with old ones.
    const key = JSON.stringify([cfg, password]);
    const cached = transports.get(sender.id);
    if (cached && cached.key === key) return cached.transport;
    cached?.transport.close();
    const transport = nodemailer.createTransport({
      host: cfg.host, port: cfg.port, secure: cfg.secure, ignoreTLS: cfg.ignoreTLS,
      // XOAUTH2 with the token given: the host refreshes it (a new token makes a new transport).
      auth: password === null || !cfg.user ? undefined : typeof password === 'string' ? { user: cfg.user, pass: password } : { type: 'OAuth2', user: cfg.user, accessToken: password.accessToken },
      connectionTimeout: timeout, greetingTimeout: timeout, socketTimeout: timeout,
      ...(opts.getSocket ? { getSocket: opts.getSocket } : {}),
    });
    transports.set(sender.id, { key, transport });
    return transport;
  }

  function configOrFail(sender: Sender): SmtpConfig {
    const cfg = smtpConfig(sender);
    if (!cfg) throw new ChannelFailure('unauthorized', `${sender.name}'s email settings are incomplete (host and from address are needed).`);
    return cfg;
  }

  return {
    async send(sender: Sender, lead: Lead, action: ChannelAction, ref: string): Promise<ChannelSendResult> {
      if (action.kind !== 'email') throw new ChannelFailure('unsupported', `An email account cannot send a ${action.kind.replace('_', ' ')}.`);
      const to = lead.email.trim();
      if (!to) throw new ChannelFailure('rejected', `${lead.fullName || 'The lead'} has no email address.`);
      const cfg = configOrFail(sender);
      const transport = await transportFor(sender, cfg);
      const messageId = `<${ref}@${domainOf(cfg.from)}>`;
      const publicUrl = opts.publicUrlFor ? await opts.publicUrlFor(sender) : null;
      const headers = await listUnsubscribeHeaders(sender, lead, cfg.from, publicUrl);
      let raw: Buffer;
      try {
        raw = await new MailComposer({
          from: { name: sender.name, address: cfg.from },
          to: lead.fullName ? { name: lead.fullName, address: to } : to,
          subject: action.subject,
          text: action.text,
          messageId,
          date: new Date(opts.now ? opts.now() : Date.now()),
          headers,
          ...(action.thread ? { inReplyTo: action.thread.inReplyTo, references: action.thread.references } : {}),
        }).compile().build();
      } catch (e) {
        throw new ChannelFailure('rejected', `the email could not be composed (${e instanceof Error ? e.message : String(e)})`);
      }
      try {
        await transport.sendMail({ envelope: { from: cfg.from, to: [to] }, raw });
      } catch (e) {
        throw classifySmtpError(e, to);
      }
      if (opts.afterSend) {
        await opts.afterSend(sender, raw, messageId).catch((e: unknown) => opts.log?.(`${sender.name}: email ${messageId} was sent but its copy was not filed (${e instanceof Error ? e.message : String(e)})`));
      }
      return { status: 'sent', externalId: messageId, chatId: action.thread?.chatId ?? messageId };
    },
    async poll(_sender: Sender, cursor: string | null): Promise<PollResult> {
      return { events: [], cursor: cursor ?? 'smtp' };
    },
    async readPost(): Promise<PostReadResult> {
      throw new ChannelFailure('unsupported', 'An email account cannot read social posts.');
    },
    canSendMessage: (sender: Sender) => sender.status !== 'disconnected' && smtpConfig(sender) !== null,
    async accountInfo(sender: Sender): Promise<AccountInfo> {
      const cfg = smtpConfig(sender);
      if (!cfg) return { canSendMessage: false, reason: 'The email settings are incomplete.' };
      try {
        await (await transportFor(sender, cfg)).verify();
        return { canSendMessage: true, reason: null };
      } catch (e) {
        return { canSendMessage: false, reason: classifySmtpError(e).message };
      }
    },
    close() {
      for (const { transport } of transports.values()) transport.close();
      transports.clear();
    },
  };
}
