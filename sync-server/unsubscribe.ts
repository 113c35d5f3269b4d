/**
 * One-click unsubscribe (RFC 8058) on the sync server, without an API key: the URL of a campaign
 * email's List-Unsubscribe header, `/unsubscribe/<token>`, where the token is signed with the
 * sender's key (shared/replies/unsubscribe-token.ts).
 *
 * - POST (what a mail provider's "Unsubscribe" button sends, body `List-Unsubscribe=One-Click`, and
 *   what our page's button sends) marks the lead unsubscribed (shared/replies/unsubscribe.ts: Do Not
 *   Contact, sequences stopped, timeline) and answers a page that says so.
 * - GET shows a small page with a button and changes nothing: mail scanners and link previews open
 *   every link of an email, and must not unsubscribe anyone.
 * - A token that is malformed, of an unknown sender, or does not verify gets a clear page (404) and
 *   changes nothing. A client address with `failuresPerMinute` such requests in a minute gets 429
 *   without any look-up until the minute is over (guessing tokens is hopeless anyway, but each
 *   well-formed guess costs a database read). Only failures count: a mail provider that sends many
 *   people's one-click requests from few addresses is never throttled by them.
 *
 * The server also keeps every workspace's `publicUrl` equal to its PUBLIC_URL setting (an https
 * address; otherwise none), so the hosts that send the workspace's email, desktops included, can
 * put the one-click URL in it (channels/host.ts reads it).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Clock, Ids } from '../shared/context.ts';
import { systemActor } from '../shared/context.ts';
import { isDomainError } from '../shared/errors.ts';
import type { Lead, Sender } from '../shared/model/index.ts';
import { markUnsubscribed } from '../shared/replies/unsubscribe.ts';
import { readUnsubscribeToken, verifyUnsubscribeToken } from '../shared/replies/unsubscribe-token.ts';
import type { UnsubscribeClaim } from '../shared/replies/unsubscribe-token.ts';
import { validateWrites } from '../shared/rules/index.ts';
import { Tx } from '../shared/tx.ts';
import type { SqlExecutor } from './db.ts';
import type { PgDatabase } from './pg-database.ts';
import { escapeHtml } from '../shared/html.ts';

export type UnsubscribeOptions = {
  db: PgDatabase;
  sql: SqlExecutor;
  clock: Clock;
  ids: Ids;
  /** PUBLIC_URL: the server's public https address (null: none; one-click links are not offered). */
  publicUrl: string | null;
  log: { warn(obj: object, msg: string): void };
  /** How often the workspaces' publicUrl is brought in line with the setting (default 5 minutes). */
  stampEveryMs?: number;
  /** Invalid-token requests per client address and minute before 429 (default 60). */
  failuresPerMinute?: number;
};

/** Invalid-token requests per client address in the current minute (a fixed window). */
class FailureCounter {
  private readonly windows = new Map<string, { start: number; n: number }>();
  constructor(private readonly limit: number) {}

  /** Seconds until the address may ask again, or 0 when it may now. */
  blockedFor(address: string, nowMs: number): number {
    const w = this.windows.get(address);
    if (!w || nowMs - w.start >= 60_000 || w.n < this.limit) return 0;
    return Math.ceil((w.start + 60_000 - nowMs) / 1000);
  }

  fail(address: string, nowMs: number): void {
    const w = this.windows.get(address);
    if (w && nowMs - w.start < 60_000) w.n++;
    else {
      // Windows of past minutes are forgotten before the map can grow with many addresses.
      if (this.windows.size >= 10_000) for (const [a, x] of this.windows) if (nowMs - x.start >= 60_000) this.windows.delete(a);
      this.windows.set(address, { start: nowMs, n: 1 });
    }
  }
}

/** PUBLIC_URL as the server uses it: an https address without a trailing slash, or null. */
export function publicUrlSetting(raw: string | null | undefined): { url: string | null; problem: string | null } {
  const v = (raw ?? '').trim();
  if (!v) return { url: null, problem: null };
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    return { url: null, problem: `PUBLIC_URL is not a URL (${v}); one-click unsubscribe links are off.` };
  }
  if (u.protocol !== 'https:') return { url: null, problem: `PUBLIC_URL must be an https:// address (RFC 8058), not ${v}; one-click unsubscribe links are off.` };
  return { url: `${u.origin}${u.pathname}`.replace(/\/+$/, ''), problem: null };
}


/** Sets every workspace's publicUrl to `url` where it differs; returns how many changed. */
export async function stampPublicUrl(db: PgDatabase, sql: SqlExecutor, clock: Clock, url: string | null): Promise<number> {
  const rows = await sql.query<{ id: string }>(
    "SELECT id FROM documents WHERE collection = 'workspaces' AND NOT deleted AND (doc->>'publicUrl') IS DISTINCT FROM $1::text",
    [url],
  );
  let changed = 0;
  for (const { id } of rows) {
    await withRetry(() =>
      db.withStore(id, async (store) => {
        const ws = await store.get('workspaces', id);
        if (!ws || (ws.publicUrl ?? null) === url) return;
        const tx = new Tx(store);
        await tx.put('workspaces', { ...ws, publicUrl: url, updatedAt: clock.now().toISOString() });
        const writes = tx.writes();
        await validateWrites(writes, { actor: systemActor(id), read: tx, now: clock.now() });
        await store.commit(writes);
        changed++;
      }),
    );
  }
  return changed;
}

/** A concurrent writer (another server process doing the same) changed what we read: again. */
async function withRetry<T>(fn: () => Promise<T>, attempts = 3): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (e) {
      if (i < attempts && isDomainError(e) && e.code === 'CONFLICT') continue;
      throw e;
    }
  }
}

type Found = { claim: UnsubscribeClaim; sender: Sender; lead: Lead | null };

/** The verified claim of a token with its sender and lead; null when the token is not ours. */
async function resolve(db: PgDatabase, token: string): Promise<Found | null> {
  const claim = readUnsubscribeToken(token);
  if (!claim) return null;
  return db.withReadStore(claim.workspaceId, async (store) => {
    const sender = await store.get('senders', claim.sdrProfileId);
    if (!sender?.unsubscribeKey || !(await verifyUnsubscribeToken(sender.unsubscribeKey, token))) return null;
    return { claim, sender, lead: await store.get('leads', claim.leadId) };
  });
}


/** "ada@example.com" as "a**@example.com": enough for the person to recognise, little for others. */
function masked(email: string): string {
  const [local = '', domain = ''] = email.split('@');
  if (!domain) return '';
  return `${local.slice(0, 1)}${'*'.repeat(Math.max(2, Math.min(6, local.length - 1)))}@${domain}`;
}

function page(reply: FastifyReply, status: number, title: string, body: string): FastifyReply {
  return reply
    .code(status)
    .header('content-type', 'text/html; charset=utf-8')
    // The token is in the address: never cached, never sent on as a referrer, never indexed.
    .header('cache-control', 'no-store')
    .header('referrer-policy', 'no-referrer')
    .header('x-robots-tag', 'noindex, nofollow')
    .header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'")
    .send(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;color:#1f2328}h1{font-size:1.4rem}button{font:inherit;padding:.5rem 1.2rem;border-radius:6px;border:1px solid #1f6feb;background:#1f6feb;color:#fff;cursor:pointer}</style>
</head><body><h1>${escapeHtml(title)}</h1>${body}</body></html>`);
}

const invalid = (reply: FastifyReply): FastifyReply =>
  page(reply, 404, 'This unsubscribe link is not valid', '<p>The link is incomplete or was changed, so nothing was done. Use the link of the email exactly as you received it, or reply to the email and ask to be removed.</p>');

const from = (f: Found): string => escapeHtml(f.sender.name);

/** Registers GET and POST /unsubscribe/:token and starts keeping publicUrl stamped. */
export async function registerUnsubscribe(app: FastifyInstance, opts: UnsubscribeOptions): Promise<void> {
  const { db, clock, ids, log } = opts;
  const failures = new FailureCounter(opts.failuresPerMinute ?? 60);
  /** The verified token, or the answer already sent (429 for a throttled address, 404 for a bad token). */
  async function admit(req: FastifyRequest, reply: FastifyReply): Promise<Found | FastifyReply> {
    const nowMs = clock.now().getTime();
    const wait = failures.blockedFor(req.ip, nowMs);
    if (wait > 0) {
      void reply.header('retry-after', String(wait));
      return page(reply, 429, 'Too many attempts', `<p>Too many unsubscribe links that do not work came from your address. Try again in ${wait} seconds.</p>`);
    }
    const { token } = req.params as { token: string };
    const found = await resolve(db, token);
    if (found) return found;
    failures.fail(req.ip, nowMs);
    return invalid(reply);
  }

  await app.register(async (scope) => {
    // RFC 8058's POST is form-encoded (or multipart) with List-Unsubscribe=One-Click; the token in
    // the path is what counts, so any small body is accepted as it is.
    scope.addContentTypeParser('*', { parseAs: 'string', bodyLimit: 16_384 }, (_req, body, done) => done(null, body));

    scope.get('/unsubscribe/:token', async (req: FastifyRequest, reply) => {
      const found = await admit(req, reply);
      if (!('claim' in found)) return found;
      if (!found.lead || (found.lead.doNotContact && found.lead.unsubscribedAt)) {
        return page(reply, 200, 'You are unsubscribed', `<p>You will not receive more emails from ${from(found)}.</p>`);
      }
      const who = found.lead.email ? ` (${escapeHtml(masked(found.lead.email))})` : '';
      return page(reply, 200, 'Unsubscribe?', `<p>Stop receiving emails from ${from(found)}${who}?</p>
<form method="post"><input type="hidden" name="List-Unsubscribe" value="One-Click"><button type="submit">Unsubscribe</button></form>`);
    });

    scope.post('/unsubscribe/:token', async (req: FastifyRequest, reply) => {
      const found = await admit(req, reply);
      if (!('claim' in found)) return found;
      const { claim, sender } = found;
      if (found.lead) {
        await withRetry(() =>
          db.withStore(claim.workspaceId, async (store) => {
            const lead = await store.get('leads', claim.leadId);
            if (!lead) return;
            const tx = new Tx(store);
            const now = clock.now().toISOString();
            await markUnsubscribed(tx, { lead, source: 'one_click', at: now, now, ids, userId: sender.ownerMemberId, sdrProfileId: sender.id });
            const writes = tx.writes();
            if (writes.length === 0) return;
            await validateWrites(writes, { actor: systemActor(claim.workspaceId), read: tx, now: clock.now() });
            await store.commit(writes);
          }),
        );
      }
      return page(reply, 200, 'You are unsubscribed', `<p>You will not receive more emails from ${from(found)}.</p>`);
    });
  });

  // In the background: a server with many workspaces starts without waiting for it. A workspace
  // created meanwhile (the CLI is another process) is stamped at the next round.
  let running: Promise<void> = Promise.resolve();
  const stamp = (): void => {
    running = running.then(() =>
      stampPublicUrl(db, opts.sql, clock, opts.publicUrl).then(
        () => undefined,
        (e: unknown) => log.warn({ err: e }, "setting the workspaces' public address (PUBLIC_URL) failed"),
      ),
    );
  };
  stamp();
  const timer = setInterval(stamp, opts.stampEveryMs ?? 300_000);
  timer.unref();
  app.addHook('onClose', async () => {
    clearInterval(timer);
    await running;
  });
}
