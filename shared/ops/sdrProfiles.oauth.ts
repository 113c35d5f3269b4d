/**
 * Mailboxes connected with OAuth 2.0 (Google, Microsoft, any OpenID provider): begin answers the
 * address to send the user to, complete creates the email sender, or reconnects the one with that
 * address. The protocol (PKCE, discovery, the code exchange) is the host's ctx.oauth port
 * (channels/oauth.ts): the state and verifier stay on the host that began. The grant is a secret:
 * it goes to the credentials port like a password, never into the sender document nor an answer.
 */
import { z } from 'zod';
import { nowIso } from '../context.ts';
import type { Ctx, OAuthConnectPort, OAuthConnected, PrepareCtx } from '../context.ts';
import { DomainError } from '../errors.ts';
import { newSender } from '../model/factories.ts';
import type { Sender } from '../model/index.ts';
import { newUnsubscribeKey } from '../replies/unsubscribe-token.ts';
import { hostedByOf, storeSenderSecret } from './credentials.ts';
import { mutation, opsByName, query } from './define.ts';
import { capabilitiesFor, serverHostProblem } from './sdrProfiles.create.ts';
import { checkSender, lineSentence, loginFailed, senderOut, summary } from './sdrProfiles.ts';
import type { SenderCheck } from './sdrProfiles.ts';

const endpoint = z.object({ host: z.string().trim().min(1).max(253), port: z.number().int().min(1).max(65535), secure: z.boolean() }).strict();

const issuerProvider = z.object({
  issuer: z.string().trim().url().max(2000),
  clientId: z.string().trim().min(1).max(500),
  clientSecret: z.string().min(1).max(2000).optional(),
  scopes: z.array(z.string().trim().min(1).max(500)).max(20).optional(),
  smtp: endpoint,
  imap: endpoint,
}).strict();

const redirectUri = z.string().trim().url().max(2000).refine((u) => /^https:\/\//i.test(u) || /^http:\/\/(127\.0\.0\.1|localhost|\[::1\])(:\d+)?\//i.test(u), {
  message: 'must be an https address, or http on the loopback address (127.0.0.1, [::1] or localhost) for a desktop app',
});

/** The port of this host, refusing where no sign-in is offered or the sender would run elsewhere. */
function portFor(ctx: Pick<Ctx, 'oauth'>, hostedBy: 'desktop' | 'server'): OAuthConnectPort {
  const port = ctx.oauth ?? null;
  if (!port) throw new DomainError('SERVER_ONLY', 'Signing a mailbox in with OAuth is done in the desktop app or on the sync server, where the sender runs; this host offers neither.');
  if (port.hostedBy !== hostedBy) {
    throw new DomainError(
      'SERVER_ONLY',
      hostedBy === 'server'
        ? 'A mailbox the sync server runs is signed in through the sync server, which keeps its tokens: from the desktop app connected to it, or with POST /sdrProfiles.oauth.begin and an API key.'
        : 'A mailbox run by its owner\'s desktop is signed in from that desktop app, which keeps its tokens.',
      { hostedBy },
    );
  }
  return port;
}

/** The provider's refusal, or a bad state, as the error model says it. An issuer that cannot be
 * reached when beginning is the caller's input (400); a provider failing mid-exchange is 502. */
function refusal(e: unknown, during: 'begin' | 'complete'): never {
  if (e instanceof DomainError) throw e;
  const code = e !== null && typeof e === 'object' && 'code' in e && typeof e.code === 'string' ? e.code : 'oauth_failed';
  const message = e instanceof Error ? e.message : String(e);
  throw new DomainError(code === 'unreachable' && during === 'complete' ? 'CHANNEL_ERROR' : 'INVALID_INPUT', message, { oauthError: code });
}

const begin = mutation({
  name: 'sdrProfiles.oauth.begin',
  summary:
    'Starts connecting a mailbox with OAuth 2.0 (authorization code with PKCE): answers the address to open in a browser and the state. provider: google, microsoft, or {issuer, clientId, clientSecret?, scopes?, smtp, imap} for any OpenID provider. email: the mailbox to reconnect. redirectUri: where the provider sends the browser back (a desktop passes its loopback address; the sync server defaults to PUBLIC_URL/oauth/callback). The state and verifier stay on this host for 10 minutes.',
  input: z.object({
    provider: z.union([z.enum(['google', 'microsoft']), issuerProvider]),
    email: z.string().trim().toLowerCase().email().max(320).optional(),
    redirectUri: redirectUri.optional(),
    hostedBy: z.enum(['desktop', 'server']).optional(),
  }).strict(),
  output: z.object({ authorizationUrl: z.string(), state: z.string(), redirectUri: z.string(), expiresAt: z.string() }),
  async handler(input, ctx) {
    const port = portFor(ctx, input.hostedBy ?? 'desktop');
    try {
      return await port.begin({ workspaceId: ctx.actor.workspaceId, memberId: ctx.actor.memberId, provider: input.provider, email: input.email ?? null, redirectUri: input.redirectUri ?? null });
    } catch (e) {
      return refusal(e, 'begin');
    }
  },
});

/** The email sender settings of a mailbox signed in with OAuth (no password: channelConfig.auth). */
function oauthConfig(c: OAuthConnected): Sender['channelConfig'] {
  return {
    host: c.smtp.host, port: c.smtp.port, secure: c.smtp.secure, user: c.email, from: c.email,
    imapHost: c.imap.host, imapPort: c.imap.port, imapSecure: c.imap.secure,
    auth: 'oauth2', oauthProvider: c.provider, ...(c.issuer ? { oauthIssuer: c.issuer } : {}),
    ...(c.hostedBy === 'server' ? { hostedBy: 'server' } : {}),
  };
}

/** The mailbox with this address among the workspace's email senders (reconnected rather than added). */
async function senderOfMailbox(ctx: Pick<PrepareCtx, 'db'>, email: string): Promise<Sender | null> {
  const { docs } = await ctx.db.query('senders', { where: { op: 'eq', field: 'channel', value: 'email' } });
  return docs.find((s) => typeof s.channelConfig.from === 'string' && s.channelConfig.from.trim().toLowerCase() === email) ?? null;
}

/** What the completion's prepare step found: the signed-in mailbox and its check. */
class Completion {
  constructor(
    readonly connected: OAuthConnected,
    readonly host: { warning: string; refusal: string | null } | null,
    readonly check: SenderCheck,
  ) {}
}

/**
 * The network work of a completion, before anything is written (on the sync server outside its
 * transaction): the code exchanged for the grant, then the mailbox checked with the new access token
 * like a mailbox connected with a password (SMTP and IMAP logins with XOAUTH2, Sent folder, SPF,
 * DKIM, DMARC). A login that fails refuses the sign-in: nothing is stored. The pending sign-in is
 * spent either way (its code is spent at the provider): the user signs in again once it is fixed.
 */
async function completeAndCheck(input: { state: string; code: string }, ctx: PrepareCtx): Promise<Completion> {
  const port = ctx.oauth ?? null;
  if (!port) portFor(ctx, 'desktop');
  let connected: OAuthConnected;
  try {
    connected = await (port as OAuthConnectPort).complete({ workspaceId: ctx.actor.workspaceId, memberId: ctx.actor.memberId, state: input.state, code: input.code });
  } catch (e) {
    return refusal(e, 'complete');
  }
  const existing = await senderOfMailbox(ctx, connected.email);
  // The sender as it will run (its id is not needed: the check keeps nothing).
  const draft = newSender(
    { id: existing?.id ?? PENDING_ID, workspaceId: ctx.actor.workspaceId, now: nowIso(ctx) },
    { name: existing?.name ?? connected.email, ownerMemberId: ctx.actor.memberId, channel: 'email', channelConfig: oauthConfig(connected), premium: false, capabilities: capabilitiesFor('email', false), timeZone: 'UTC' },
  );
  const host = await serverHostProblem(ctx, draft);
  // A reconnected mailbox keeps the DKIM selector its user named (as sdrProfiles.verify uses it).
  const kept = existing?.channelConfig.dkimSelector;
  const dkimSelector = typeof kept === 'string' && kept !== '' ? kept : null;
  const check = await checkSender(ctx, draft, { secrets: { accessToken: connected.accessToken }, dkimSelector, hostRefusal: host?.refusal ?? null });
  const refused = check.lines.filter(loginFailed);
  if (refused.length > 0) {
    throw new DomainError('SENDER_CHECK_FAILED', `${connected.email} was not ${existing ? 'reconnected' : 'connected'}: ${refused.map(lineSentence).join(' ')} Sign in again once it is fixed.`, { lines: check.lines });
  }
  return new Completion(connected, host, check);
}

const PENDING_ID = '00000000-0000-4000-8000-000000000000';

const complete = mutation({
  name: 'sdrProfiles.oauth.complete',
  summary:
    'Finishes connecting a mailbox with OAuth 2.0: exchanges the code of the state begun on this host, checks the mailbox with the new access token (SMTP and IMAP logins with XOAUTH2, Sent folder, SPF, DKIM, DMARC: a failing login is 422 SENDER_CHECK_FAILED and nothing is stored), then creates the email sender, or reconnects the sender with that address. An unknown, expired or already used state is refused and nothing is stored; the state is spent by a completion that fails after the exchange.',
  input: z.object({ state: z.string().trim().min(16).max(512), code: z.string().min(1).max(4096) }).strict(),
  output: senderOut.extend({ reconnected: z.boolean(), warnings: z.array(z.string()) }),
  prepare: (input, ctx) => completeAndCheck(input, ctx),
  async handler(input, ctx) {
    // Found by prepare (before the transaction); a caller that skipped it gets it done now.
    const found = ctx.prepared instanceof Completion ? ctx.prepared : await completeAndCheck(input, ctx);
    const { connected } = found;
    const now = nowIso(ctx);
    const existing = await senderOfMailbox(ctx, connected.email);
    let sender: Sender;
    if (existing) {
      if (hostedByOf(existing) !== connected.hostedBy) {
        throw new DomainError('CONFLICT', `${existing.name} (${connected.email}) runs on ${hostedByOf(existing) === 'server' ? 'the sync server' : "its owner's desktop"}: reconnect it there.`, { sdrProfileId: existing.id });
      }
      // Same mailbox: the same sender goes on (its campaigns, history and limits stay).
      // The mailbox's own login replaces a password-era IMAP user name.
      const kept = Object.fromEntries(Object.entries(existing.channelConfig).filter(([k]) => k !== 'imapUser'));
      sender = {
        ...existing,
        channelConfig: { ...kept, ...oauthConfig(connected) },
        status: existing.outreachPaused ? 'paused' : 'available', statusReason: null, backoffUntil: null, updatedAt: now,
      };
    } else {
      sender = newSender(
        { id: ctx.ids.uuid(), workspaceId: ctx.actor.workspaceId, now },
        { name: connected.email, ownerMemberId: ctx.actor.memberId, channel: 'email', channelConfig: oauthConfig(connected), premium: false, capabilities: capabilitiesFor('email', false), timeZone: 'UTC' },
      );
      sender.warmedUp = false;
      sender.rampUpStartedAt = sender.createdAt;
      sender.unsubscribeKey = newUnsubscribeKey(ctx.secrets.randomBytes);
    }
    const warnings: string[] = [];
    if (found.host) {
      warnings.push(found.host.warning);
      // The sync server would refuse its hosts: connected, but disconnected with the reason (as sdrProfiles.create).
      if (found.host.refusal) {
        sender.status = 'disconnected';
        sender.statusReason = found.host.refusal;
      }
    }
    // The findings that do not block (Sent folder, SPF, DKIM, DMARC) are warnings and its last check.
    sender.lastCheck = found.check;
    for (const l of found.check.lines) if (l.status !== 'pass' && l.check !== 'hosts') warnings.push(lineSentence(l));
    await ctx.db.put('senders', sender);
    await storeSenderSecret(ctx, sender, connected.secret);
    return { ...summary(sender), reconnected: existing !== null, warnings };
  },
});

const status = query({
  name: 'sdrProfiles.oauth.status',
  summary:
    "Where a sign-in begun on this host stands: waiting (for the browser), connected (with the sender's id), failed (with why), or unknown (never begun here, or over 10 minutes ago). The desktop app shows its progress from it.",
  input: z.object({ state: z.string().trim().min(16).max(512) }).strict(),
  output: z.object({ status: z.enum(['waiting', 'connected', 'failed', 'unknown']), sdrProfileId: z.string().nullable(), message: z.string().nullable() }),
  async handler(input, ctx) {
    const port = ctx.oauth ?? null;
    if (!port?.status) return { status: 'unknown' as const, sdrProfileId: null, message: null };
    return port.status({ workspaceId: ctx.actor.workspaceId, state: input.state });
  },
});

export const ops = opsByName(begin, complete, status);
