/** Sender profiles (sdrProfiles): connect, list, daily limits, pausing and usage. */
import { DateTime, IANAZone } from 'luxon';
import { z } from 'zod';
import { nowIso } from '../context.ts';
import type { Ctx } from '../context.ts';
import { DomainError, notFound } from '../errors.ts';
import { emptyUsage, newSender } from '../model/factories.ts';
import { CHANNEL_KINDS, LIMIT_KEYS } from '../model/index.ts';
import type { ChannelKind, LimitKey, LimitSet, Sender, SenderCapability } from '../model/index.ts';
import { DEFAULT_WEEKLY_CONNECTIONS, RAMP_UP_DAYS, rampUpOf } from '../engine/limits.ts';
import { newUnsubscribeKey } from '../replies/unsubscribe-token.ts';
import { canRaiseLimits } from '../rules/senders.ts';
import { hostedByOf, storeSenderSecret } from './credentials.ts';
import { mutation, opsByName, query } from './define.ts';
import { senderHostsOf } from './sender-hosts.ts';
import { dryRun, planCappedLimit, uuid } from './params.ts';

const count = z.number().int().min(0);
const limitSetOut = z.object(Object.fromEntries(LIMIT_KEYS.map((k) => [k, count])) as Record<LimitKey, typeof count>);
const usageKeys = [...LIMIT_KEYS, 'emails', 'searches'] as const;
const usageSetOut = z.object(Object.fromEntries(usageKeys.map((k) => [k, count])) as Record<(typeof usageKeys)[number], typeof count>);

const senderOut = z.object({
  id: z.string(),
  sdrProfileId: z.string(),
  name: z.string(),
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
});

const summary = (s: Sender): z.input<typeof senderOut> => ({
  id: s.id,
  sdrProfileId: s.id,
  name: s.name,
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
});

const timeZone = z.string().min(1).max(64).refine((tz) => IANAZone.isValidZone(tz), { message: 'must be an IANA time zone such as Europe/Paris' });
const day = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a day like 2026-11-16').refine((d) => DateTime.fromISO(d).isValid, { message: 'must be a real calendar day' });

/** Where the sender's mailbox is read (replies, automatic replies, bounces) and its Sent copies
 * kept; stored flat in channelConfig (imapHost, imapPort, ...), the password in the credentials port. */
const imapInput = z.object({
  host: z.string().trim().min(1).max(253),
  port: z.number().int().min(1).max(65535).optional(),
  secure: z.boolean().optional(),
  /** Default: the SMTP user. */
  user: z.string().max(320).optional(),
  /** Default: the SMTP password. Never in the document, like it. */
  password: z.string().min(1).max(4096).optional(),
  /** Who files a copy of each sent email in Sent: we do ('append', default), the provider does, or nobody. */
  sentCopy: z.enum(['append', 'provider', 'none']).optional(),
}).strict();

function imapSettings(imap: z.infer<typeof imapInput>): Sender['channelConfig'] {
  const port = imap.port ?? 993;
  return {
    imapHost: imap.host, imapPort: port, imapSecure: imap.secure ?? port === 993,
    ...(imap.user ? { imapUser: imap.user } : {}), ...(imap.sentCopy ? { imapSentCopy: imap.sentCopy } : {}),
  };
}

const emailConfig = z.object({
  host: z.string().trim().min(1).max(253),
  port: z.number().int().min(1).max(65535),
  secure: z.boolean(),
  user: z.string().max(320),
  from: z.string().trim().min(3).max(320),
  /** Never in the document: kept by the credentials port where the sender runs (see the handler). */
  password: z.string().optional(),
  /** Where the channel runs: its owner's desktop (default) or the sync server's runner (`--runner`). */
  hostedBy: z.enum(['desktop', 'server']).optional(),
  imap: imapInput.optional(),
}).strict();
const httpConfig = z.object({
  baseUrl: z.string().url().refine((u) => /^https?:\/\//.test(u), { message: 'must be an http(s) URL' }),
  hostedBy: z.enum(['desktop', 'server']).optional(),
}).strict();
const sandboxConfig = z.object({ seed: z.union([z.string().min(1).max(200), z.number().int()]).optional() }).strict();

const createBase = {
  name: z.string().trim().min(1).max(200),
  timeZone: timeZone.optional(),
  premium: z.boolean().optional(),
  /** true: the account is already warmed up (established, in regular use) and sends at its limits
   * from the start; default false: a new account ramps up from 20% over 14 days. */
  warmedUp: z.boolean().optional(),
};
const createInput = z.discriminatedUnion('channel', [
  z.object({ ...createBase, channel: z.literal('email'), channelConfig: emailConfig }),
  z.object({ ...createBase, channel: z.literal('http'), channelConfig: httpConfig }),
  z.object({ ...createBase, channel: z.literal('sandbox'), channelConfig: sandboxConfig.optional() }),
]);

const SOCIAL_CAPABILITIES: readonly SenderCapability[] = ['message', 'connection_request', 'profile_visit', 'reaction', 'voice_note', 'post_reading'];

/** What a sender of this channel can do: email senders only email; social senders everything else,
 * InMail only with a premium account. */
export function capabilitiesFor(channel: ChannelKind, premium: boolean): SenderCapability[] {
  if (channel === 'email') return ['email'];
  return premium ? [...SOCIAL_CAPABILITIES, 'inmail'] : [...SOCIAL_CAPABILITIES];
}

async function senderOrNotFound(ctx: Ctx, id: string): Promise<Sender> {
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

/**
 * A sender the sync server's runner hosts connects from the server, which refuses addresses of its
 * own network (sync-server/sender-hosts.ts). Where that can be checked (ctx.senderHosts: the server
 * itself, or a desktop asking it), a refused host makes the new sender disconnected with the
 * guard's sentence as its reason, and that sentence is the warning. Where it cannot (no sync server,
 * or offline), the warning says so. A desktop-hosted sender connects from its owner's computer: no
 * such rule applies to it.
 */
async function serverHostProblem(ctx: Ctx, sender: Sender): Promise<string | null> {
  if (sender.channel === 'sandbox' || hostedByOf(sender) !== 'server') return null;
  const hosts = senderHostsOf(sender);
  const check = ctx.senderHosts ?? null;
  const unchecked = (why: string) =>
    `Whether the sync server will connect to ${hosts.join(' and ')} could not be checked (${why}): it refuses private, loopback and link-local addresses unless its operator allows them. If it refuses, this sender shows as disconnected with the reason once the server's runner tries it.`;
  if (!check) return unchecked('no sync server answers here');
  let refusal: string | null;
  try {
    refusal = await check.refusal(hosts);
  } catch (e) {
    return unchecked(e instanceof Error ? e.message.replace(/\.$/, '') : String(e));
  }
  if (!refusal) return null;
  // The guard's sentence names the host, why it is refused and what to do.
  sender.status = 'disconnected';
  sender.statusReason = refusal;
  return `${refusal} The sender is disconnected until then.`;
}

const hostName = z.string().trim().min(1).max(253);

export const sendersOps = opsByName(
  query({
    name: 'sdrProfiles.list',
    summary: 'Lists the sender profiles of the workspace with their limits, plan maximums and status.',
    input: z.object({}),
    output: z.object({ sdrProfiles: z.array(senderOut) }),
    async handler(_input, ctx) {
      const { docs } = await ctx.db.query('senders', { orderBy: [{ field: 'name', dir: 'asc' }] });
      return { sdrProfiles: docs.map(summary) };
    },
  }),

  mutation({
    name: 'sdrProfiles.create',
    summary: 'Connects a sender: the sandbox network, an SMTP mailbox or an HTTP connector.',
    input: createInput,
    output: senderOut.extend({ warnings: z.array(z.string()) }),
    async handler(input, ctx) {
      const id = ctx.ids.uuid();
      const premium = input.premium ?? false;
      const warnings: string[] = [];
      let channelConfig: Sender['channelConfig'];
      let password: string | undefined;
      let imapPassword: string | undefined;
      if (input.channel === 'email') {
        // The sender document replicates to every member's desktop: the SMTP password must not be
        // in it. The host that runs this sender keeps it (ctx.credentials), stored after the sender.
        const { password: given, imap, ...rest } = input.channelConfig;
        channelConfig = imap ? { ...rest, ...imapSettings(imap) } : rest;
        password = given;
        imapPassword = imap?.password;
      } else if (input.channel === 'http') {
        channelConfig = { baseUrl: input.channelConfig.baseUrl, ...(input.channelConfig.hostedBy ? { hostedBy: input.channelConfig.hostedBy } : {}) };
      } else {
        channelConfig = { seed: input.channelConfig?.seed ?? id };
      }
      const sender = newSender(
        { id, workspaceId: ctx.actor.workspaceId, now: nowIso(ctx) },
        {
          name: input.name,
          ownerMemberId: ctx.actor.memberId,
          channel: input.channel,
          channelConfig,
          premium,
          capabilities: capabilitiesFor(input.channel, premium),
          timeZone: input.timeZone ?? 'UTC',
        },
      );
      // A new account starts slowly: 20% of its limits, growing to 100% over 14 days. An account
      // its user says is warmed up starts at its limits (the weekly cap still holds).
      sender.warmedUp = input.warmedUp ?? false;
      sender.rampUpStartedAt = sender.warmedUp ? null : sender.createdAt;
      // Signs the List-Unsubscribe tokens of this sender's emails (shared/replies/unsubscribe-token.ts).
      if (sender.channel === 'email') sender.unsubscribeKey = newUnsubscribeKey(ctx.ids);
      const hostWarning = await serverHostProblem(ctx, sender);
      if (hostWarning) warnings.push(hostWarning);
      await ctx.db.put('senders', sender);
      if (password !== undefined) {
        const port = ctx.credentials ?? null;
        if (port && port.hostedBy === hostedByOf(sender)) await storeSenderSecret(ctx, sender, password);
        else if (hostedByOf(sender) === 'server') warnings.push('The SMTP password was not stored: this sender runs on the sync server, so set it there with sdrProfiles.setCredentials.');
        else warnings.push('The SMTP password was not stored in the workspace; enter it on the desktop that hosts this sender, which keeps it locally.');
      }
      if (imapPassword !== undefined) {
        const port = ctx.credentials ?? null;
        if (port && port.hostedBy === hostedByOf(sender)) await storeSenderSecret(ctx, sender, imapPassword, 'imap');
        else warnings.push(`The IMAP password was not stored: set it where this sender runs (${hostedByOf(sender) === 'server' ? 'the sync server' : 'its owner\'s desktop'}) with sdrProfiles.setCredentials and imap: true.`);
      }
      return { ...summary(sender), warnings };
    },
  }),

  mutation({
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
  }),

  mutation({
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
  }),

  mutation({
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
  }),

  query({
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
  }),

  query({
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
  }),
);
