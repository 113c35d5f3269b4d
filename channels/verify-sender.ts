/**
 * The check of an email sender before its first send, and again on request (sdrProfiles.create,
 * sdrProfiles.verify): the SMTP login (nodemailer's verify), the IMAP login and the Sent folder
 * (imapflow), and the From domain's SPF, DKIM and DMARC (channels/dns-check.ts, read by mailauth).
 * Each finding is a line {check, status, message, fix}.
 *
 * The logins take the transport auth the channels build, not a password: `{user, pass}` today, and
 * `{type: 'OAuth2', user, accessToken}` (SMTP) / `{user, accessToken}` (IMAP) for mailboxes
 * connected with OAuth 2.0 (XOAUTH2), so one check serves both. A host builds its verifier
 * (createSenderVerifier) over the same secrets and network rules as its channels (channels/host.ts):
 * the desktop checks from its own network, the sync server through its address guard.
 *
 * Secrets never reach a line: the servers' answers are quoted, and any secret is cut out of them.
 */
import nodemailer from 'nodemailer';
import type SMTPTransport from 'nodemailer/lib/smtp-transport';
import { ImapFlow } from 'imapflow';
import type { ListResponse } from 'imapflow';
import type { SenderCheckLine, SenderVerifier } from '../shared/context.ts';
import type { Sender } from '../shared/model/index.ts';
import { checkSendingDomain, dnsResolver, providerOf } from './dns-check.ts';
import type { DnsResolve } from './dns-check.ts';
import { imapConfig } from './imap.ts';
import { isOAuthSender } from './oauth-tokens.ts';
import type { TokenAuth } from './oauth-tokens.ts';
import type { ImapChannelOptions, SentCopy } from './imap.ts';
import { smtpConfig } from './smtp.ts';
import type { SmtpChannelOptions } from './smtp.ts';

/** How SMTP logs in: a password, or an OAuth 2.0 access token (XOAUTH2). */
export type SmtpAuth = { user: string; pass: string } | { type: 'OAuth2'; user: string; accessToken: string };
/** How IMAP logs in: a password, or an OAuth 2.0 access token (XOAUTH2). */
export type ImapAuth = { user: string; pass: string } | { user: string; accessToken: string };

export type MailboxCheckInput = {
  from: string;
  smtp: { host: string; port: number; secure: boolean; ignoreTLS?: boolean; auth: SmtpAuth | null };
  /** Null: the sender has no IMAP settings (its mailbox is not read). */
  imap: { host: string; port: number; secure: boolean; auth: ImapAuth | null; sentCopy: SentCopy } | null;
  dkimSelector: string | null;
  resolve: DnsResolve;
  timeoutMs?: number;
  /** The sync server's address guard (sync-server/sender-hosts.ts), as the channels use it. */
  network?: { smtpGetSocket?: SmtpChannelOptions['getSocket']; imapLookup?: ImapChannelOptions['lookup'] };
};

/** The lines that refuse a new sender: it could not log in. */
export const blocksCreation = (line: SenderCheckLine): boolean => (line.check === 'smtp' || line.check === 'imap') && line.status === 'fail';

const secretsOf = (input: MailboxCheckInput): string[] => {
  const out: string[] = [];
  for (const a of [input.smtp.auth, input.imap?.auth ?? null]) {
    if (!a) continue;
    if ('pass' in a && a.pass) out.push(a.pass);
    if ('accessToken' in a && a.accessToken) out.push(a.accessToken);
  }
  return out;
};

/** Any secret cut out of a text. */
function scrub(text: string, secrets: readonly string[]): string {
  let t = text;
  for (const s of secrets) if (s.length >= 3) t = t.split(s).join('[secret]');
  return t;
}

/** A server's answer as a line quotes it, inside parentheses: one line, short, without any secret
 * and without a closing full stop of its own (which would double the sentence's). */
function answer(text: string, secrets: readonly string[]): string {
  const t = scrub(text.replace(/\s+/g, ' ').trim(), secrets).replace(/\.$/, '');
  return t.length > 300 ? `${t.slice(0, 297)}...` : t;
}

type SmtpError = Error & { code?: string; responseCode?: number; response?: string };
type ImapError = Error & { authenticationFailed?: boolean; responseText?: string; code?: string };

const unreachableCodes = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNRESET', 'ESOCKET', 'ECONNECTION', 'ETLS', 'EDNS']);

function loginHelp(host: string, what: 'SMTP' | 'IMAP', oauth: boolean): string {
  if (oauth) return 'Reconnect the mailbox (sign in again with your provider).';
  const p = providerOf(host) ?? (/(^|\.)gmail\.com$/i.test(host) ? providerOf('smtp.gmail.com') : null);
  if (p?.name === 'Google Workspace') return `Check the user name (the full address) and password. Google accepts passwords only as app passwords (Google Account > Security > App passwords), or connect with Sign in with Google.`;
  if (p?.name === 'Microsoft 365') return `Microsoft 365 no longer accepts passwords for ${what}: connect the mailbox with Sign in with Microsoft.`;
  return `Check the ${what} user name (usually the full address) and password with your mail provider.`;
}

async function checkSmtp(input: MailboxCheckInput, secrets: readonly string[]): Promise<SenderCheckLine> {
  const { host, port, secure, ignoreTLS, auth } = input.smtp;
  const timeout = input.timeoutMs ?? 15_000;
  const options: SMTPTransport.Options = {
    host, port, secure, ignoreTLS: ignoreTLS === true,
    ...(auth ? { auth } : {}),
    connectionTimeout: timeout, greetingTimeout: timeout, socketTimeout: timeout,
    ...(input.network?.smtpGetSocket ? { getSocket: input.network.smtpGetSocket } : {}),
  };
  const transport = nodemailer.createTransport(options);
  const oauth = auth !== null && 'accessToken' in auth;
  try {
    await transport.verify();
    return { check: 'smtp', status: 'pass', message: auth ? `SMTP: logged in to ${host}:${port} as ${auth.user}.` : `SMTP: ${host}:${port} accepts connections (no login configured).`, fix: null };
  } catch (e) {
    const err = e as SmtpError;
    const detail = answer(err?.response || err?.message || String(e), secrets);
    const code = err?.responseCode;
    if (err?.code === 'EAUTH' || code === 530 || code === 534 || code === 535) {
      return { check: 'smtp', status: 'fail', message: `SMTP: ${host} refused the login${auth ? ` of ${auth.user}` : ''} (${detail}).`, fix: loginHelp(host, 'SMTP', oauth) };
    }
    if (unreachableCodes.has(err?.code ?? '')) {
      return {
        check: 'smtp', status: 'fail', message: `SMTP: ${host}:${port} could not be reached (${detail}).`,
        fix: `Check the host name and port (587 with STARTTLS, 465 with TLS from the start) and that this ${input.network?.smtpGetSocket ? 'server may connect to it' : 'computer is online'}.`,
      };
    }
    return { check: 'smtp', status: 'fail', message: `SMTP: the check with ${host}:${port} failed (${detail}).`, fix: 'Check the SMTP settings (host, port, TLS) with your mail provider.' };
  } finally {
    transport.close();
  }
}

const SENT_NAMES = ['sent', 'sent items', 'sent messages', 'sent mail', '[gmail]/sent mail', 'inbox.sent', 'gesendet', 'envoyés', 'éléments envoyés'];

function sentLine(boxes: readonly ListResponse[], sentCopy: SentCopy): SenderCheckLine {
  const special = boxes.find((b) => b.specialUse === '\\Sent');
  if (special) return { check: 'sent_folder', status: 'pass', message: `Sent folder: "${special.path}" (marked \\Sent).`, fix: null };
  const named = boxes.find((b) => SENT_NAMES.includes(b.path.toLowerCase()) || SENT_NAMES.includes(b.name.toLowerCase()));
  const needed = sentCopy === 'append';
  if (named) {
    return {
      check: 'sent_folder', status: needed ? 'warn' : 'pass',
      message: `Sent folder: "${named.path}" is named like one but the server does not mark it \\Sent (SPECIAL-USE)${needed ? ', so copies of sent emails are not filed there and an interrupted send cannot be looked up' : ''}.`,
      fix: needed ? `Ask your mail provider to mark "${named.path}" as the Sent folder, or set Sent copies to "provider" if it files them itself.` : null,
    };
  }
  return {
    check: 'sent_folder', status: needed ? 'fail' : 'warn',
    message: `Sent folder: the mailbox has none${needed ? ', so copies of sent emails cannot be filed and an interrupted send cannot be looked up' : ''}.`,
    fix: needed ? 'Create a Sent folder in your mail client (most mark it \\Sent), or set Sent copies to "provider" if your provider files them itself.' : 'Create a Sent folder in your mail client if you want copies of sent emails kept.',
  };
}

async function checkImap(input: MailboxCheckInput, secrets: readonly string[]): Promise<SenderCheckLine[]> {
  const cfg = input.imap;
  if (!cfg) {
    return [{
      check: 'imap', status: 'warn',
      message: 'IMAP: no mailbox settings, so replies, bounces and unsubscribe emails are not read: follow-ups go on after a prospect answers.',
      fix: 'Add the IMAP server of the mailbox (e.g. imap.gmail.com or outlook.office365.com, port 993).',
    }];
  }
  if (!cfg.auth) {
    return [{ check: 'imap', status: 'fail', message: `IMAP: no password or token is kept for ${cfg.host}, so the mailbox cannot be read.`, fix: 'Enter the mailbox password (or reconnect the mailbox).' }];
  }
  const timeout = input.timeoutMs ?? 15_000;
  const client = new ImapFlow({
    host: cfg.host, port: cfg.port, secure: cfg.secure, auth: cfg.auth, logger: false,
    ...(input.network?.imapLookup ? { tls: { lookup: input.network.imapLookup } } : {}),
    // An idle socket is given longer than a connection (as the channel does): a busy server may
    // take a while to list many folders.
    connectionTimeout: timeout, greetingTimeout: timeout, socketTimeout: Math.max(timeout, 30_000),
  });
  // Errors after connect also arrive as events: without a listener they would end the process.
  client.on('error', () => undefined);
  const oauth = 'accessToken' in cfg.auth;
  try {
    await client.connect();
  } catch (e) {
    client.close();
    const err = e as ImapError;
    const detail = answer(err?.responseText || err?.message || String(e), secrets);
    if (err?.authenticationFailed) {
      return [{ check: 'imap', status: 'fail', message: `IMAP: ${cfg.host} refused the login of ${cfg.auth.user} (${detail}).`, fix: loginHelp(cfg.host, 'IMAP', oauth) }];
    }
    // imapflow says so, without a code, when the server offers no mechanism for this login (XOAUTH2).
    if (/authentication mechanism/i.test(err?.message ?? '')) {
      return [{
        check: 'imap', status: 'fail', message: `IMAP: ${cfg.host} does not offer the ${oauth ? 'OAuth 2.0 sign-in (XOAUTH2)' : 'password login'} this mailbox uses (${detail}).`,
        fix: oauth ? 'Reconnect the mailbox (sign in again with your provider), or connect it with its password if this server takes no OAuth sign-in.' : 'Check the IMAP host and port with your mail provider.',
      }];
    }
    return [{
      check: 'imap', status: 'fail', message: `IMAP: ${cfg.host}:${cfg.port} could not be reached (${detail}).`,
      fix: 'Check the host name and port (993 with TLS, or 143 with STARTTLS) and that this ' + (input.network?.imapLookup ? 'server may connect to it.' : 'computer is online.'),
    }];
  }
  try {
    const login: SenderCheckLine = { check: 'imap', status: 'pass', message: `IMAP: logged in to ${cfg.host}:${cfg.port} as ${cfg.auth.user}.`, fix: null };
    try {
      return [login, sentLine(await client.list(), cfg.sentCopy)];
    } catch (e) {
      return [login, { check: 'sent_folder', status: 'warn', message: `Sent folder: the folders could not be listed (${answer(e instanceof Error ? e.message : String(e), secrets)}).`, fix: 'Check again in a few minutes.' }];
    }
  } finally {
    await client.logout().catch(() => client.close());
  }
}

/** Every line of one check: logins first (in parallel with the DNS), then the domain. */
export async function checkMailbox(input: MailboxCheckInput): Promise<SenderCheckLine[]> {
  const secrets = secretsOf(input);
  const [smtp, imap, dns] = await Promise.all([
    checkSmtp(input, secrets),
    checkImap(input, secrets),
    checkSendingDomain({ from: input.from, smtpHost: input.smtp.host, dkimSelector: input.dkimSelector, resolve: input.resolve }),
  ]);
  return [smtp, ...imap, ...dns].map((l) => ({ ...l, message: scrub(l.message, secrets), fix: l.fix === null ? null : scrub(l.fix, secrets) }));
}

type SecretOf = (sender: Sender) => string | null | Promise<string | null>;

export type SenderVerifierOptions = {
  hostedBy: 'desktop' | 'server';
  /** The SMTP password kept on this host for a sender (as the channels read it). */
  smtpPasswordFor: SecretOf;
  /** The IMAP password kept on this host; default: the SMTP password. */
  imapPasswordFor?: SecretOf;
  /**
   * The transport auth of a sender that does not log in with a password (OAuth 2.0: XOAUTH2 with a
   * fresh access token), or null to use the passwords. Called before the passwords.
   */
  authFor?: (sender: Sender, kind: 'smtp' | 'imap') => Promise<SmtpAuth | ImapAuth | null>;
  /** The DNS the domain checks ask (default: DNS_SERVERS, else the system's). */
  resolve?: DnsResolve;
  timeoutMs?: number;
  network?: MailboxCheckInput['network'];
};

/** The verifier a host puts in ctx.senderVerifier, over its own secrets and network. */
export function createSenderVerifier(opts: SenderVerifierOptions): SenderVerifier {
  // Built now: a malformed DNS_SERVERS stops the host at start rather than failing each check.
  const resolve = opts.resolve ?? dnsResolver();
  return {
    hostedBy: opts.hostedBy,
    async verify(sender, { secrets, dkimSelector }) {
      const smtp = smtpConfig(sender);
      if (!smtp) {
        return [{ check: 'smtp', status: 'fail', message: 'SMTP: the settings are incomplete (a host and a From address are needed).', fix: 'Enter the SMTP host and the address you send from.' }];
      }
      const imap = imapConfig(sender);
      const given = (s: string | null | undefined): s is string => typeof s === 'string' && s !== '';
      let smtpPassword: string | null;
      let imapPassword: string | null;
      let smtpToken: SmtpAuth | ImapAuth | null;
      let imapToken: SmtpAuth | ImapAuth | null;
      const oauth = isOAuthSender(sender);
      try {
        // A mailbox signed in with OAuth keeps a grant, not a password: it is never sent as one.
        smtpPassword = given(secrets?.smtp) ? secrets.smtp : oauth ? null : await opts.smtpPasswordFor(sender);
        imapPassword = given(secrets?.imap) ? secrets.imap : given(secrets?.smtp) ? secrets.smtp : oauth ? null : ((await opts.imapPasswordFor?.(sender)) ?? smtpPassword);
        // A token just given (a mailbox being connected with OAuth) logs both in; else the host's.
        const fresh = given(secrets?.accessToken) ? secrets.accessToken : null;
        if (oauth && !fresh && !opts.authFor) {
          return [{ check: 'smtp', status: 'fail', message: `SMTP: ${sender.name} is signed in with OAuth, and this ${opts.hostedBy === 'server' ? 'sync server' : 'computer'} cannot renew its sign-in to check it.`, fix: 'Check it where it runs.' }];
        }
        smtpToken = fresh ? { user: smtp.user, accessToken: fresh } : opts.authFor ? await opts.authFor(sender, 'smtp') : null;
        imapToken = fresh && imap ? { user: imap.user, accessToken: fresh } : opts.authFor && imap ? await opts.authFor(sender, 'imap') : null;
      } catch (e) {
        // A secret that cannot be read (another CREDENTIALS_KEY) or a sign-in that cannot be
        // refreshed is a finding about the login, said like one.
        const why = e instanceof Error ? e.message.replace(/\.$/, '') : String(e);
        return [{
          check: 'smtp', status: 'fail', message: `SMTP: the login kept on this ${opts.hostedBy === 'server' ? 'sync server' : 'computer'} could not be used (${why}).`,
          fix: oauth ? 'Reconnect the mailbox (sign in again with your provider).' : 'Enter the mailbox password again, or reconnect the mailbox.',
        }];
      }
      const smtpAuth: SmtpAuth | null = smtpToken && 'accessToken' in smtpToken ? { type: 'OAuth2', user: smtpToken.user, accessToken: smtpToken.accessToken } : smtp.user && smtpPassword !== null ? { user: smtp.user, pass: smtpPassword } : null;
      if (smtp.user && !smtpAuth) {
        return [{ check: 'smtp', status: 'fail', message: `SMTP: no password is kept for ${smtp.user} on this ${opts.hostedBy === 'server' ? 'sync server' : 'computer'}, so the login cannot be checked.`, fix: 'Enter the mailbox password.' }];
      }
      const imapAuth: ImapAuth | null = imapToken && 'accessToken' in imapToken ? { user: imapToken.user, accessToken: imapToken.accessToken } : imap && imapPassword !== null ? { user: imap.user, pass: imapPassword } : null;
      return checkMailbox({
        from: smtp.from,
        smtp: { host: smtp.host, port: smtp.port, secure: smtp.secure, ignoreTLS: smtp.ignoreTLS, auth: smtpAuth },
        imap: imap ? { host: imap.host, port: imap.port, secure: imap.secure, auth: imapAuth, sentCopy: imap.sentCopy } : null,
        dkimSelector: dkimSelector ?? null,
        resolve,
        ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}),
        ...(opts.network ? { network: opts.network } : {}),
      });
    },
  };
}

/**
 * The verifier's `authFor` over a host's renewal of OAuth access tokens (channels/oauth-tokens.ts):
 * a mailbox signed in with OAuth logs in with XOAUTH2 and a fresh token, renewed first when it is
 * about to expire (and written back where the grant is kept); other mailboxes use their passwords.
 * A renewal the provider refuses (invalid_grant) throws, which the check says as its failing SMTP line.
 */
export function oauthAuthFor(tokens: { auth(sender: Sender): Promise<TokenAuth> }): NonNullable<SenderVerifierOptions['authFor']> {
  return async (sender, kind) => {
    if (!isOAuthSender(sender)) return null;
    const user = kind === 'smtp' ? smtpConfig(sender)?.user : imapConfig(sender)?.user;
    if (!user) return null;
    return { user, accessToken: (await tokens.auth(sender)).accessToken };
  };
}
