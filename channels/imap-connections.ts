/**
 * The IMAP connections of the email channel (channels/imap.ts): one INBOX connection per sender,
 * kept open and reused while its settings and password stay the same, closed when nobody polls its
 * sender any more (providers limit how many connections a mailbox may hold); and short-lived ones
 * for the Sent folder. IMAP and socket failures are said here in the channel's vocabulary.
 */
import type { LookupFunction } from 'node:net';
import { ImapFlow } from 'imapflow';
import { ChannelFailure } from '../shared/engine/channel.ts';
import type { Sender } from '../shared/model/index.ts';
import type { ImapConfig, InboundMatcher } from './imap.ts';
import type { MailLogin } from './smtp.ts';

/** The channel's options with their defaults filled in (channels/imap.ts ImapChannelOptions). */
export type ImapSettings = {
  /** A password, or an OAuth access token (XOAUTH2) for a mailbox signed in with OAuth. */
  passwordFor(sender: Sender): MailLogin | Promise<MailLogin>;
  matcher: InboundMatcher;
  timeoutMs: number;
  recheckMs: number;
  pollMs: number;
  lookbackDays: number;
  batch: number;
  now: () => number;
  log: (line: string) => void;
  lookup?: LookupFunction;
};

/** A sender's INBOX connection and what polling knows about it. */
export type Watch = {
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

/** What makes a connection reusable: the same server, login and password. */
const connectionKey = (cfg: ImapConfig, password: MailLogin): string => JSON.stringify([cfg.host, cfg.port, cfg.secure, cfg.user, password]);

const logoutOrClose = (client: ImapFlow): Promise<void> => client.logout().catch(() => client.close());

/**
 * The open INBOX connections, one per sender. A class with a private map rather than a state
 * object: each entry owns a socket, and only these methods open, reuse, forget and close them, so
 * the map never names a connection that was closed or lost.
 */
export class ImapConnections {
  private readonly watches = new Map<string, Watch>();

  constructor(private readonly settings: ImapSettings) {}

  private newClient(cfg: ImapConfig, password: Exclude<MailLogin, null>): ImapFlow {
    const timeout = this.settings.timeoutMs;
    return new ImapFlow({
      host: cfg.host, port: cfg.port, secure: cfg.secure,
      auth: typeof password === 'string' ? { user: cfg.user, pass: password } : { user: cfg.user, accessToken: password.accessToken },
      // ImapFlow passes its `tls` options to net.connect / tls.connect, which resolve with `lookup`.
      ...(this.settings.lookup ? { tls: { lookup: this.settings.lookup } } : {}),
      logger: false,
      connectionTimeout: timeout, greetingTimeout: timeout, socketTimeout: Math.max(timeout, 60_000),
      // IDLE soon after each command, so new mail is announced between two ticks.
      autoIdleDelay: 500,
      // Some servers end an IDLE after ~30 min; restarting it earlier keeps the connection alive.
      maxIdleTime: 10 * 60_000,
    });
  }

  /** A new connection, logged in with the password given. */
  private async open(sender: Sender, cfg: ImapConfig, password: MailLogin): Promise<ImapFlow> {
    if (password === null) throw new ChannelFailure('unauthorized', `no IMAP password is stored for ${sender.name} on this host`);
    const client = this.newClient(cfg, password);
    // Errors after connect also arrive as 'error' events: without a listener they would crash the process.
    client.on('error', (e: Error) => this.settings.log(`IMAP ${sender.name}: ${e.message}`));
    try {
      await client.connect();
    } catch (e) {
      client.close();
      throw classifyImapError(e);
    }
    return client;
  }

  /** The sender's open INBOX connection: reused while the settings and password are the same. */
  async watch(sender: Sender, cfg: ImapConfig): Promise<Watch> {
    const password = await this.settings.passwordFor(sender);
    const key = connectionKey(cfg, password);
    const cur = this.watches.get(sender.id);
    if (cur && cur.open && cur.key === key && cur.client.usable) return cur;
    if (cur) {
      this.watches.delete(sender.id);
      await logoutOrClose(cur.client);
    }
    const client = await this.open(sender, cfg, password);
    const w: Watch = { key, client, dirty: true, lastFetchAt: 0, interval: this.settings.pollMs, idle: client.capabilities.has('IDLE'), open: true, validity: '', lastPollAt: this.settings.now() };
    client.on('exists', () => {
      w.dirty = true;
    });
    client.on('close', () => {
      w.open = false;
      if (this.watches.get(sender.id) === w) this.watches.delete(sender.id);
    });
    try {
      const mb = await client.mailboxOpen('INBOX');
      w.validity = String(mb.uidValidity);
    } catch (e) {
      client.close();
      throw classifyImapError(e);
    }
    this.watches.set(sender.id, w);
    return w;
  }

  /** The sender's INBOX connection while it is open and usable, else null. */
  usable(senderId: string): ImapFlow | null {
    const w = this.watches.get(senderId);
    return w && w.open && w.client.usable ? w.client : null;
  }

  /** Forgets and closes a sender's connection that failed mid-command; its next poll opens another. */
  drop(senderId: string, w: Watch): void {
    this.watches.delete(senderId);
    w.client.close();
  }

  /** Closes the connections of senders no longer polled here (removed, moved to another host, or
   * IMAP settings dropped), all but `except`'s. */
  sweep(except: string): void {
    const stale = this.settings.now() - Math.max(2 * this.settings.recheckMs, 15 * 60_000);
    for (const [id, w] of this.watches) {
      if (id === except || w.lastPollAt >= stale) continue;
      this.watches.delete(id);
      void logoutOrClose(w.client);
    }
  }

  /** Runs `fn` on a short-lived connection of its own (the INBOX connection stays on INBOX). */
  async withClient<T>(sender: Sender, cfg: ImapConfig, fn: (c: ImapFlow) => Promise<T>): Promise<T> {
    const client = await this.open(sender, cfg, await this.settings.passwordFor(sender));
    try {
      return await fn(client);
    } finally {
      await logoutOrClose(client);
    }
  }

  /** Closes every connection (on stop). */
  async closeAll(): Promise<void> {
    const all = [...this.watches.values()];
    this.watches.clear();
    await Promise.all(all.map((w) => logoutOrClose(w.client)));
  }
}
