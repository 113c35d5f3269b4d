/**
 * The SMTP email channel (nodemailer). A sender's channelConfig holds host, port, secure, user and
 * from (never the password: the host that runs the sender keeps it, passwordFor reads it). Emails
 * carry our messages document id as their Message-ID, and continue a thread with In-Reply-To and
 * References, so mail clients show a sequence's follow-ups as one conversation. Plain SMTP cannot
 * see replies or opens: poll reports nothing (replies are recorded when entered in the CRM).
 */
import nodemailer from 'nodemailer';
import type { Transporter } from 'nodemailer';
import type SMTPTransport from 'nodemailer/lib/smtp-transport';
import { ChannelFailure } from '../../../shared/engine/channel.ts';
import type { AccountInfo, Channel, ChannelAction, ChannelSendResult, PollResult, PostReadResult } from '../../../shared/engine/channel.ts';
import type { Lead, Sender } from '../../../shared/model/index.ts';

export type SmtpChannelOptions = {
  /** The account password from this machine's credential store (null: no authentication). */
  passwordFor(sender: Sender): string | null | Promise<string | null>;
  /** Milliseconds before a connection or command is given up (default 20 s). */
  timeoutMs?: number;
};

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

type SmtpError = Error & { code?: string; responseCode?: number; command?: string };

/** SMTP and socket failures in the channel's vocabulary. */
export function classifySmtpError(e: unknown): ChannelFailure {
  const err = e as SmtpError;
  const text = err?.message ?? String(e);
  const code = err?.responseCode;
  if (err?.code === 'EAUTH' || code === 530 || code === 534 || code === 535) return new ChannelFailure('unauthorized', `the mail server refused the login (${text})`);
  // 421 and 45x are "try again later" (also for one recipient): the server is asking us to slow down.
  if (code === 421 || (code !== undefined && code >= 450 && code < 460)) return new ChannelFailure('limited', `the mail server asked to retry later (${text})`);
  if (err?.code === 'EENVELOPE' || (code !== undefined && code >= 550 && code < 560)) return new ChannelFailure('rejected', `the mail server refused the recipient (${text})`);
  return new ChannelFailure('failed', `the mail server could not be reached or failed (${text})`);
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
      auth: password !== null && cfg.user ? { user: cfg.user, pass: password } : undefined,
      connectionTimeout: timeout, greetingTimeout: timeout, socketTimeout: timeout,
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
      try {
        await transport.sendMail({
          from: { name: sender.name, address: cfg.from },
          to: lead.fullName ? { name: lead.fullName, address: to } : to,
          subject: action.subject,
          text: action.text,
          messageId,
          ...(action.thread ? { inReplyTo: action.thread.inReplyTo, references: action.thread.references } : {}),
        });
      } catch (e) {
        throw classifySmtpError(e);
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
