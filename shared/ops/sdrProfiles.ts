/** Sender profiles (sdrProfiles): list, daily limits, warm-up, pausing, usage, the hosts the sync
 * server connects to, and secrets. Connecting a new sender is in sdrProfiles.create.ts; where a
 * sender's secrets are kept, in credentials.ts. */
import { DateTime } from 'luxon';
import { z } from 'zod';
import { nowIso } from '../context.ts';
import type { Ctx, PrepareCtx, SenderCheckLine, SenderCheckSecrets } from '../context.ts';
import type { StoreReader } from '../store.ts';
import { DomainError, notFound } from '../errors.ts';
import { emptyUsage } from '../model/factories.ts';
import { CHANNEL_KINDS, LIMIT_KEYS, SENDER_CHECKS } from '../model/index.ts';
import type { LimitKey, LimitSet, Sender } from '../model/index.ts';
import { DEFAULT_WEEKLY_CONNECTIONS, RAMP_UP_DAYS, rampUpOf } from '../engine/limits.ts';
import { canRaiseLimits } from '../rules/senders.ts';
import { hostedByOf, storeSenderSecret } from './credentials.ts';
import { mutation, opsByName, query } from './define.ts';
import { senderHostsOf } from './sender-hosts.ts';
import { dryRun, planCappedLimit, uuid } from './params.ts';

const count = z.number().int().min(0);
const limitSetOut = z.object(Object.fromEntries(LIMIT_KEYS.map((k) => [k, count])) as Record<LimitKey, typeof count>);
const usageKeys = [...LIMIT_KEYS, 'emails', 'searches'] as const;
const usageSetOut = z.object(Object.fromEntries(usageKeys.map((k) => [k, count])) as Record<(typeof usageKeys)[number], typeof count>);

const checkLineOut = z.object({ check: z.enum(SENDER_CHECKS), status: z.enum(['pass', 'warn', 'fail']), message: z.string(), fix: z.string().nullable() });
/** The last check of an email sender: when, with which DKIM selector, and its lines. */
export const senderCheckOut = z.object({ at: z.string(), dkimSelector: z.string().nullable(), lines: z.array(checkLineOut) });
export type SenderCheck = z.infer<typeof senderCheckOut>;

/** A DKIM selector as DNS names it (labels of letters, digits, hyphens, underscores). */
export const dkimSelectorInput = z.string().trim().regex(/^[A-Za-z0-9_-]{1,63}(\.[A-Za-z0-9_-]{1,63}){0,3}$/, 'must be a DKIM selector such as google or selector1');

/** A line that keeps a new sender from being created: it could not log in. */
export const loginFailed = (l: SenderCheckLine): boolean => (l.check === 'smtp' || l.check === 'imap') && l.status === 'fail';

/** A line as one sentence: what was found, then what to do. */
export const lineSentence = (l: SenderCheckLine): string => (l.fix ? `${l.message} ${l.fix}` : l.message);

/**
 * Runs the check of an email sender where this host can (ctx.senderVerifier serves the side that
 * runs it: its owner's desktop, or the sync server), else says where it can run. A server-hosted
 * sender whose host the sync server refuses is not logged in to: that refusal is the finding.
 */
export async function checkSender(ctx: Pick<Ctx, 'clock' | 'senderVerifier'>, sender: Sender, opts: { secrets?: SenderCheckSecrets; dkimSelector: string | null; hostRefusal: string | null }): Promise<SenderCheck> {
  const at = nowIso(ctx);
  const out = (lines: SenderCheckLine[]): SenderCheck => ({ at, dkimSelector: opts.dkimSelector, lines });
  if (opts.hostRefusal) {
    return out([{ check: 'hosts', status: 'fail', message: opts.hostRefusal, fix: 'Use a host on the public internet, or ask the sync server\'s operator to allow private hosts (ALLOW_PRIVATE_SENDER_HOSTS=1).' }]);
  }
  const verifier = ctx.senderVerifier ?? null;
  const side = hostedByOf(sender);
  if (!verifier || verifier.hostedBy !== side) {
    const where = side === 'server' ? 'the sync server, which runs it' : "its owner's desktop, which runs it";
    return out([{
      check: 'setup', status: 'warn',
      message: `Not checked: ${sender.name}'s login, Sent folder and DNS records are checked from ${where}, not here.`,
      fix: side === 'server' ? 'Check it through the sync server (POST /sdrProfiles.verify) once its password is stored there.' : "Press Check again in its owner's desktop app.",
    }]);
  }
  return out(await verifier.verify(sender, { ...(opts.secrets ? { secrets: opts.secrets } : {}), dkimSelector: opts.dkimSelector }));
}

export const senderOut = z.object({
  id: z.string(),
  sdrProfileId: z.string(),
  name: z.string(),
  /** The member whose sender it is (told when it is disconnected). */
  ownerMemberId: z.string(),
  status: z.string(),
  channel: z.enum(CHANNEL_KINDS),
  limits: limitSetOut,
  planMax: limitSetOut,
  searchLimit: count,
  premium: z.boolean(),
  capabilities: z.array(z.string()),
  timeZone: z.string(),
  outreachPaused: z.boolean(),
  statusReason: z.string().nullable(),
  backoffUntil: z.string().nullable(),
  /** Whose runner connects it: its owner's desktop or the sync server (channelConfig.hostedBy). */
  hostedBy: z.enum(['desktop', 'server']),
  /** The user said the account is already warmed up: full limits from the start, no ramp-up. */
  warmedUp: z.boolean(),
  /** A mailbox signed in with OAuth (sdrProfiles.oauth.*): its provider and address, so the app
   * can offer Reconnect; null for a password login or another channel. */
  signIn: z.object({ provider: z.enum(['google', 'microsoft', 'oidc']), issuer: z.string().nullable(), email: z.string() }).nullable(),
  /** Email senders: the last check (login, Sent folder, SPF, DKIM, DMARC), or null when never checked. */
  lastCheck: senderCheckOut.nullable(),
});

function signInOf(s: Sender): z.input<typeof senderOut>['signIn'] {
  const c = s.channelConfig;
  if (s.channel !== 'email' || c.auth !== 'oauth2' || typeof c.from !== 'string') return null;
  const provider = c.oauthProvider === 'google' || c.oauthProvider === 'microsoft' ? c.oauthProvider : 'oidc';
  return { provider, issuer: typeof c.oauthIssuer === 'string' ? c.oauthIssuer : null, email: c.from };
}

export const summary = (s: Sender): z.input<typeof senderOut> => ({
  id: s.id,
  sdrProfileId: s.id,
  name: s.name,
  ownerMemberId: s.ownerMemberId,
  status: s.status,
  channel: s.channel,
  limits: { ...s.limits },
  planMax: { ...s.planMax },
  searchLimit: s.searchLimit,
  premium: s.premium,
  capabilities: [...s.capabilities],
  timeZone: s.timeZone,
  outreachPaused: s.outreachPaused,
  statusReason: s.statusReason,
  backoffUntil: s.backoffUntil,
  hostedBy: hostedByOf(s),
  warmedUp: s.warmedUp === true,
  signIn: signInOf(s),
  lastCheck: s.lastCheck ? { at: s.lastCheck.at, dkimSelector: s.lastCheck.dkimSelector ?? null, lines: s.lastCheck.lines.map((l) => ({ ...l })) } : null,
});

const day = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a day like 2026-11-16').refine((d) => DateTime.fromISO(d).isValid, { message: 'must be a real calendar day' });

export async function senderOrNotFound(ctx: { db: Pick<StoreReader, 'get'> }, id: string): Promise<Sender> {
  const s = await ctx.db.get('senders', id);
  if (!s) throw notFound('Sender', id);
  return s;
}

/** Today (or `at`) as YYYY-MM-DD in the sender's time zone: usage counters roll over at its midnight. */
export function senderDay(sender: Pick<Sender, 'timeZone'>, at: Date): string {
  const d = DateTime.fromJSDate(at, { zone: sender.timeZone });
  return (d.isValid ? d : DateTime.fromJSDate(at, { zone: 'UTC' })).toISODate() ?? at.toISOString().slice(0, 10);
}

const limitsInput = z.object(Object.fromEntries(LIMIT_KEYS.map((k) => [k, planCappedLimit.optional()])) as Record<LimitKey, z.ZodOptional<typeof planCappedLimit>>).strict();

const hostName = z.string().trim().min(1).max(253);

/** The sync server's refusal of a server-hosted sender's hosts, or null (also when it cannot be asked). */
async function hostRefusal(ctx: Pick<Ctx, 'senderHosts'>, sender: Sender): Promise<string | null> {
  try {
    return (await ctx.senderHosts?.refusal(senderHostsOf(sender))) ?? null;
  } catch {
    return null;
  }
}

const secretInput = z.string().min(1, 'must not be empty').max(4096);

const list = query({
  name: 'sdrProfiles.list',
  summary: 'Lists the sender profiles of the workspace with their limits, plan maximums and status.',
  input: z.object({}),
  output: z.object({ sdrProfiles: z.array(senderOut) }),
  async handler(_input, ctx) {
    const { docs } = await ctx.db.query('senders', { orderBy: [{ field: 'name', dir: 'asc' }] });
    return { sdrProfiles: docs.map(summary) };
  },
});

const setDailyLimits = mutation({
  name: 'sdrProfiles.setDailyLimits',
  summary: "Changes a sender's daily limits; requests above the plan maximum are lowered and reported.",
  input: z.object({
    sdrProfileId: uuid,
    limits: limitsInput,
    /** The weekly cap on connection requests (default 100), at most 7 times the plan's daily maximum. */
    weeklyConnectionRequests: planCappedLimit.optional(),
    dryRun,
  }),
  output: z.object({
    dryRun: z.boolean(),
    sdrProfileId: z.string(),
    name: z.string(),
    before: limitSetOut,
    after: limitSetOut,
    planMax: limitSetOut,
    changes: z.array(z.object({ limit: z.string(), before: count, after: count })),
    cappedAtPlan: z.array(z.object({ limit: z.string(), requested: z.number().min(0), planMax: count })),
  }),
  dryRun: true,
  async handler(input, ctx) {
    const sender = await senderOrNotFound(ctx, input.sdrProfileId);
    const before: LimitSet = { ...sender.limits };
    const after: LimitSet = { ...sender.limits };
    const cappedAtPlan: { limit: LimitKey; requested: number; planMax: number }[] = [];
    for (const k of LIMIT_KEYS) {
      const requested = input.limits[k];
      if (requested === undefined) continue;
      const max = sender.planMax[k];
      if (requested > max) cappedAtPlan.push({ limit: k, requested, planMax: max });
      after[k] = Math.min(requested, max);
    }
    const changes: { limit: string; before: number; after: number }[] = LIMIT_KEYS.filter((k) => after[k] !== before[k]).map((k) => ({ limit: k, before: before[k], after: after[k] }));
    const cappedWeekly: { limit: string; requested: number; planMax: number }[] = [];
    const weeklyBefore = sender.weeklyConnectionLimit ?? DEFAULT_WEEKLY_CONNECTIONS;
    let weeklyAfter = weeklyBefore;
    if (input.weeklyConnectionRequests !== undefined) {
      const max = sender.planMax.connectionRequests * 7;
      if (input.weeklyConnectionRequests > max) cappedWeekly.push({ limit: 'weeklyConnectionRequests', requested: input.weeklyConnectionRequests, planMax: max });
      weeklyAfter = Math.min(input.weeklyConnectionRequests, max);
      if (weeklyAfter !== weeklyBefore) changes.push({ limit: 'weeklyConnectionRequests', before: weeklyBefore, after: weeklyAfter });
    }
    const raised = changes.filter((c) => c.after > c.before).map((c) => c.limit);
    if (raised.length > 0 && !canRaiseLimits(ctx.actor)) {
      throw new DomainError('PERMISSION_DENIED', `Raising daily limits (${raised.join(', ')}) needs the same permission as starting a campaign (owner or admin).`, {
        permission: 'campaigns.launch',
        limits: raised,
      });
    }
    if (changes.length > 0) {
      await ctx.db.put('senders', { ...sender, limits: after, ...(weeklyAfter !== weeklyBefore ? { weeklyConnectionLimit: weeklyAfter } : {}), updatedAt: nowIso(ctx) });
    }
    return { dryRun: ctx.dryRun, sdrProfileId: sender.id, name: sender.name, before, after, planMax: { ...sender.planMax }, changes, cappedAtPlan: [...cappedAtPlan, ...cappedWeekly] };
  },
});

const setWarmedUp = mutation({
  name: 'sdrProfiles.setWarmedUp',
  summary:
    "Says whether a sender's account is already warmed up. true: it sends at its full daily limits at once, without the 14-day ramp-up (the weekly cap on connection requests still holds); sending at full volume from an account without a sending history risks its reputation. false: a new account; it ramps up from 20% of its limits, from now unless a ramp-up already began. dryRun previews.",
  input: z.object({ sdrProfileId: uuid, warmedUp: z.boolean(), dryRun }),
  output: z.object({
    dryRun: z.boolean(),
    sdrProfileId: z.string(),
    name: z.string(),
    warmedUp: z.boolean(),
    changed: z.boolean(),
    /** The pace that applies after the change (as social.getAccountLimits shows it). */
    rampUp: z.object({ active: z.boolean(), day: z.number().int(), of: z.number().int(), percent: z.number().int(), endsAt: z.string().nullable(), warmedUp: z.boolean() }),
  }),
  dryRun: true,
  async handler(input, ctx) {
    const sender = await senderOrNotFound(ctx, input.sdrProfileId);
    const now = nowIso(ctx);
    let next: Sender = sender;
    if ((sender.warmedUp === true) !== input.warmedUp) {
      // Back to "new": a ramp-up that already began goes on from its start; otherwise it starts now.
      next = { ...sender, warmedUp: input.warmedUp, rampUpStartedAt: input.warmedUp ? (sender.rampUpStartedAt ?? null) : (sender.rampUpStartedAt ?? now), updatedAt: now };
      await ctx.db.put('senders', next);
    }
    const r = rampUpOf(next, ctx.clock.now());
    return {
      dryRun: ctx.dryRun, sdrProfileId: sender.id, name: sender.name, warmedUp: next.warmedUp === true, changed: next !== sender,
      rampUp: { active: r.active, day: r.day, of: RAMP_UP_DAYS, percent: Math.round(r.factor * 100), endsAt: r.endsAt, warmedUp: r.warmedUp },
    };
  },
});

const pauseOutreach = mutation({
  name: 'sdrProfiles.pauseOutreach',
  summary: 'Pauses (or resumes) a sender on every campaign at once; its leads stay assigned and wait.',
  input: z.object({ sdrProfileId: uuid, paused: z.boolean().default(true) }),
  output: z.object({ sdrProfileId: z.string(), outreachPaused: z.boolean(), status: z.string() }),
  async handler(input, ctx) {
    const sender = await senderOrNotFound(ctx, input.sdrProfileId);
    const now = nowIso(ctx);
    let status: Sender['status'];
    if (sender.status === 'disconnected') {
      // Pausing or resuming does not reconnect an account: keep showing the problem to fix.
      status = 'disconnected';
    } else if (input.paused) {
      status = 'paused';
    } else {
      status = sender.backoffUntil !== null && sender.backoffUntil > now ? 'limited' : 'available';
    }
    const next: Sender = { ...sender, outreachPaused: input.paused, status };
    if (next.outreachPaused !== sender.outreachPaused || next.status !== sender.status) {
      await ctx.db.put('senders', { ...next, updatedAt: now });
    }
    return { sdrProfileId: sender.id, outreachPaused: next.outreachPaused, status: next.status };
  },
});

const checkHosts = query({
  name: 'sdrProfiles.checkHosts',
  method: 'POST',
  summary:
    "Whether the sync server's runner would connect a server-hosted sender to these SMTP, IMAP or connector hosts: refusal is null, or the sentence saying why not (it refuses private, loopback and link-local addresses unless ALLOW_PRIVATE_SENDER_HOSTS=1). sdrProfiles.create asks it by itself; a desktop asks the server through it.",
  input: z.object({ hosts: z.array(hostName).min(1).max(3) }).strict(),
  output: z.object({ refusal: z.string().nullable() }),
  serverOnly: true,
  async handler(input, ctx) {
    if (!ctx.senderHosts) throw new DomainError('SERVER_ONLY', 'Only the sync server can say which sender hosts it connects to.');
    return { refusal: await ctx.senderHosts.refusal(input.hosts) };
  },
});

const getUsage = query({
  name: 'sdrProfiles.getUsage',
  summary: "A sender's actions on one day (default today in the sender's time zone) against its limits.",
  input: z.object({ sdrProfileId: uuid, day: day.optional() }),
  output: z.object({ sdrProfileId: z.string(), day: z.string(), used: usageSetOut, limits: usageSetOut.omit({ emails: true }), remaining: usageSetOut.omit({ emails: true }) }),
  async handler(input, ctx) {
    const sender = await senderOrNotFound(ctx, input.sdrProfileId);
    const d = input.day ?? senderDay(sender, ctx.clock.now());
    const usage = (await ctx.db.get('usage', `${sender.id}:${d}`)) ?? emptyUsage(ctx.actor.workspaceId, sender.id, d, nowIso(ctx));
    const limits = { ...sender.limits, searches: sender.searchLimit };
    const remaining = { ...limits };
    for (const k of [...LIMIT_KEYS, 'searches'] as const) remaining[k] = Math.max(0, limits[k] - usage.counts[k]);
    return { sdrProfileId: sender.id, day: d, used: { ...usage.counts }, limits, remaining };
  },
});

const setCredentials = mutation({
  name: 'sdrProfiles.setCredentials',
  summary: "Stores a sender's SMTP password or connector token where its channel runs; never returned.",
  input: z.object({
    sdrProfileId: uuid,
    secret: secretInput,
    /** True: the email sender's IMAP password, when it differs from the SMTP one. */
    imap: z.boolean().optional(),
  }).strict(),
  output: z.object({
    sdrProfileId: z.string(),
    channel: z.string(),
    /** Where the secret is kept: the sync server or the owner's desktop. */
    storedOn: z.enum(['server', 'desktop']),
    /** True when the sender was disconnected (its login refused) and is available again. */
    reconnected: z.boolean(),
    status: z.string(),
  }),
  async handler(input, ctx) {
    const sender = await ctx.db.get('senders', input.sdrProfileId);
    if (!sender) throw notFound('Sender', input.sdrProfileId);
    const storedOn = await storeSenderSecret(ctx, sender, input.secret, input.imap === true ? 'imap' : 'login');
    // The runner disconnects a sender whose login was refused; new credentials are the fix, so
    // the sender works again (paused stays paused).
    let status = sender.status;
    // New credentials do not change a host the sync server refuses: that sender stays disconnected.
    const refusal = sender.status === 'disconnected' && hostedByOf(sender) === 'server' ? await hostRefusal(ctx, sender) : null;
    const reconnected = sender.status === 'disconnected' && refusal === null;
    if (reconnected) {
      status = sender.outreachPaused ? 'paused' : 'available';
      await ctx.db.put('senders', { ...sender, status, statusReason: null, backoffUntil: null, updatedAt: nowIso(ctx) });
    } else if (refusal !== null && sender.statusReason !== refusal) {
      await ctx.db.put('senders', { ...sender, statusReason: refusal, updatedAt: nowIso(ctx) });
    }
    return { sdrProfileId: sender.id, channel: sender.channel, storedOn, reconnected, status };
  },
});

const verify = mutation({
  name: 'sdrProfiles.verify',
  summary:
    "Checks an email sender again and stores the result on it (lastCheck): the SMTP login, the IMAP login and its Sent folder, and the From domain's SPF, DKIM (dkimSelector, else the one given before, else the provider's usual selectors) and DMARC records, each a line {check, status: pass | warn | fail, message, fix}. It runs where the sender runs (its owner's desktop, or the sync server for server-hosted senders). No secret is ever in the answer.",
  input: z.object({ sdrProfileId: uuid, dkimSelector: dkimSelectorInput.optional() }).strict(),
  output: z.object({ sdrProfileId: z.string(), name: z.string(), checkedAt: z.string(), dkimSelector: z.string().nullable(), ok: z.boolean(), lines: z.array(checkLineOut) }),
  prepare: (input, ctx) => checkAgain(input, ctx),
  async handler(input, ctx) {
    const sender = await senderOrNotFound(ctx, input.sdrProfileId);
    // Made by prepare before the transaction, unless the sender changed since (then made now).
    const pre = ctx.prepared instanceof VerifyChecks && ctx.prepared.config === configKey(sender) ? ctx.prepared : await checkAgain(input, ctx);
    const kept = keptSelector(sender);
    // The selector named here is the one later checks use.
    const channelConfig = input.dkimSelector !== undefined && input.dkimSelector !== kept ? { ...sender.channelConfig, dkimSelector: input.dkimSelector } : sender.channelConfig;
    const check = pre.check;
    await ctx.db.put('senders', { ...sender, channelConfig, lastCheck: check, updatedAt: check.at });
    return { sdrProfileId: sender.id, name: sender.name, checkedAt: check.at, dkimSelector: check.dkimSelector, ok: check.lines.every((l) => l.status !== 'fail'), lines: check.lines };
  },
});

const keptSelector = (sender: Sender): string | null => (typeof sender.channelConfig.dkimSelector === 'string' && sender.channelConfig.dkimSelector !== '' ? sender.channelConfig.dkimSelector : null);
/** What a check depends on in the document: a sender whose settings changed meanwhile is checked again. */
const configKey = (sender: Sender): string => JSON.stringify([sender.name, sender.channelConfig]);

/** A check made for a sender as its settings were (`config`). */
class VerifyChecks {
  constructor(
    readonly config: string,
    readonly check: SenderCheck,
  ) {}
}

/** sdrProfiles.verify's check: where the sender runs, outside the transaction on the sync server. */
async function checkAgain(input: { sdrProfileId: string; dkimSelector?: string | undefined }, ctx: PrepareCtx | Ctx): Promise<VerifyChecks> {
  const sender = await senderOrNotFound(ctx, input.sdrProfileId);
  if (sender.channel !== 'email') {
    throw new DomainError('INVALID_INPUT', `${sender.name} is not an email sender: only mailboxes are checked.`, { sdrProfileId: sender.id, channel: sender.channel });
  }
  const side = hostedByOf(sender);
  if (!ctx.senderVerifier || ctx.senderVerifier.hostedBy !== side) {
    const where = side === 'server'
      ? `${sender.name} runs on the sync server, so it is checked there: call POST /sdrProfiles.verify on the sync server with an API key.`
      : `${sender.name} runs on its owner's desktop, so it is checked there: press Check again in that desktop app.`;
    throw new DomainError('SERVER_ONLY', where, { sdrProfileId: sender.id, hostedBy: side });
  }
  const dkimSelector = input.dkimSelector ?? keptSelector(sender);
  const refusal = side === 'server' ? await hostRefusal(ctx, sender) : null;
  return new VerifyChecks(configKey(sender), await checkSender(ctx, sender, { dkimSelector, hostRefusal: refusal }));
}

export const ops = opsByName(list, setDailyLimits, setWarmedUp, pauseOutreach, checkHosts, getUsage, setCredentials, verify);
