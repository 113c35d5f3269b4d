/**
 * Social operations: remaining daily allowances per sender, and reading a post's engagement
 * (commenters, then reactors) through the sender's channel, within the sender's daily search
 * budget. Every read is counted in the sender's usage of the day (in the sender's time zone) in the
 * same commit as the answer; a budget that runs out is reported (stoppedEarly flags,
 * reactionsSkippedDueToDailyLimit), never an error.
 */
import { z } from 'zod';
import { nowIso } from '../context.ts';
import type { Ctx } from '../context.ts';
import { ChannelFailure } from '../engine/channel.ts';
import type { Channel, PostReadResult, SocialPostItem } from '../engine/channel.ts';
import { RAMP_UP_DAYS, WEEK_MS, effectiveLimit, rampUpOf, searchesRemaining, senderDay, usageId, usageOrEmpty, weeklyConnectionCap } from '../engine/limits.ts';
import { DomainError, notFound } from '../errors.ts';
import { withCanonicalProfile } from '../intake/clean.ts';
import { findLeads, keysOf, LeadIndex, linkedTo } from '../intake/find.ts';
import type { IdentityKeys } from '../intake/find.ts';
import { profileKey } from '../intake/identity.ts';
import { newLead } from '../model/factories.ts';
import type { LimitKey, Sender, Usage } from '../model/index.ts';
import { mutation, opsByName, query } from './define.ts';
import { uuid } from './params.ts';
import { senderOrNotFound } from './sdrProfiles.ts';

const postUrl = z.string().trim().url('must be a URL').regex(/^https:\/\//, 'must be an https:// post address').max(2000);
const allowance = z.object({ used: z.number().int(), remaining: z.number().int(), limit: z.number().int() });
const dailyUsageOut = z.object({ todayUsage: z.number().int(), remainingSearches: z.number().int(), limit: z.number().int(), day: z.string() });
const postItemOut = z.object({
  author: z.string(),
  text: z.string(),
  date: z.string(),
  authorDetails: z.object({ headline: z.string(), profileUrl: z.string() }),
});
/** A person found on a post: the spec's Social post item plus what the importer needs to know. */
const personOut = postItemOut.extend({ engagement: z.enum(['comment', 'reaction']), existingLeadId: z.string().nullable() });

const accountOut = z.object({
  senderProfileId: z.string(),
  name: z.string(),
  canSendMessage: z.boolean(),
  status: z.string(),
  statusReason: z.string().nullable(),
  day: z.string(),
  sending: z.object({
    messages: allowance, connectionRequests: allowance, connectionRequestsWithNote: allowance, premiumMessages: allowance,
    comments: allowance, reactions: allowance, profileVisits: allowance, emails: allowance.optional(),
  }),
  search: allowance,
  /** Connection requests of the last 7 days against the weekly cap (default 100, raisable within
   * the plan), counted from the recorded actions. */
  weekly: z.object({ connectionRequests: allowance }),
  /** A new sender's ramp-up: limits grow from 20% to 100% over 14 days (sending shows today's);
   * warmedUp: its user said the account is warmed up, so it sends at its limits without one. */
  rampUp: z.object({ active: z.boolean(), day: z.number().int(), of: z.number().int(), percent: z.number().int(), endsAt: z.string().nullable(), warmedUp: z.boolean() }),
});

const of = (used: number, limit: number) => ({ used, remaining: Math.max(0, limit - used), limit });

async function todayUsage(ctx: Ctx, sender: Sender): Promise<Usage> {
  const day = senderDay(sender, ctx.clock.now());
  return usageOrEmpty(await ctx.db.get('usage', usageId(sender.id, day)), sender, day, nowIso(ctx));
}

function dailyUsage(sender: Sender, usage: Usage): z.input<typeof dailyUsageOut> {
  return { todayUsage: usage.counts.searches, remainingSearches: searchesRemaining(sender, usage), limit: sender.searchLimit, day: usage.day };
}

/** Whether the account can send now: connected, not backing off, and its channel agrees. */
function canSend(ctx: Ctx, sender: Sender): boolean {
  if (sender.status === 'disconnected') return false;
  if (sender.status === 'limited' && sender.backoffUntil !== null && sender.backoffUntil > nowIso(ctx)) return false;
  const channel = ctx.channels?.channelFor(sender) ?? null;
  return channel ? channel.canSendMessage(sender) : true;
}

/** The channel that reads posts for this sender here, or a clear refusal. */
function readerFor(ctx: Ctx, sender: Sender): Channel {
  if (!sender.capabilities.includes('post_reading')) {
    throw new DomainError('INVALID_INPUT', `${sender.name}'s account (${sender.channel}) cannot read social posts; use a social sender profile.`, { field: 'senderProfileId' });
  }
  if (sender.status === 'disconnected') throw new DomainError('CHANNEL_ERROR', `${sender.name}'s account is disconnected; reconnect it to read posts.`, { sdrProfileId: sender.id });
  const channel = ctx.channels?.channelFor(sender) ?? null;
  if (!channel) throw new DomainError('CHANNEL_ERROR', `${sender.name}'s account is not connected on this machine.`, { sdrProfileId: sender.id });
  return channel;
}

async function read(channel: Channel, sender: Sender, url: string, part: 'comments' | 'reactions', budget: number): Promise<PostReadResult> {
  try {
    return await channel.readPost(sender, url, part, budget);
  } catch (e) {
    if (e instanceof ChannelFailure) {
      if (e.kind === 'rejected') throw new DomainError('INVALID_INPUT', `The network refused the post address: ${e.message}`, { field: 'postUrl' });
      throw new DomainError('CHANNEL_ERROR', `Reading the post failed (${e.kind}): ${e.message}`, {
        sdrProfileId: sender.id, kind: e.kind, ...(e.retryAfterSeconds === null ? {} : { retryAfterSeconds: e.retryAfterSeconds }),
      });
    }
    throw e;
  }
}

type Engagement = {
  sender: Sender;
  comments: PostReadResult;
  reactions: PostReadResult;
  reactionsSkipped: boolean;
  afterComments: Usage;
  after: Usage;
};

/** Comments first, then reactions with what is left of the day's search budget; stages the usage. */
async function readEngagement(ctx: Ctx, senderProfileId: string, url: string): Promise<Engagement> {
  const sender = await senderOrNotFound(ctx, senderProfileId);
  const channel = readerFor(ctx, sender);
  const before = await todayUsage(ctx, sender);
  const now = nowIso(ctx);
  const notRead = (): PostReadResult => ({ items: [], total: 0, searchesUsed: 0, stoppedEarly: true });
  const spend = (u: Usage, n: number): Usage => (n === 0 ? u : { ...u, counts: { ...u.counts, searches: u.counts.searches + n }, updatedAt: now });

  const budget = searchesRemaining(sender, before);
  const comments = budget > 0 ? await read(channel, sender, url, 'comments', budget) : notRead();
  const used1 = Math.min(comments.searchesUsed, budget);
  const afterComments = spend(before, used1);
  const left = searchesRemaining(sender, afterComments);
  const reactionsSkipped = left <= 0;
  const reactions = reactionsSkipped ? notRead() : await read(channel, sender, url, 'reactions', left);
  const after = spend(afterComments, Math.min(reactions.searchesUsed, left));
  if (after.counts.searches !== before.counts.searches) await ctx.db.put('usage', after);
  return { sender, comments, reactions, reactionsSkipped, afterComments, after };
}

type PostPerson = SocialPostItem & { engagement: 'comment' | 'reaction'; existingLeadId: string | null };

/** Everyone found, commenters first, each person once (one profile URL key: shared/intake), with
 * the lead they already are, if any; `index` holds those leads, looked up by their profile URLs. */
async function peopleOf(ctx: Ctx, r: Engagement, index: LeadIndex): Promise<PostPerson[]> {
  const seen = new Set<string>();
  const people: (SocialPostItem & { engagement: 'comment' | 'reaction' })[] = [];
  for (const [items, engagement] of [[r.comments.items, 'comment'], [r.reactions.items, 'reaction']] as const) {
    for (const item of items) {
      const key = item.authorDetails.profileUrl ? profileKey(item.authorDetails.profileUrl) : `${item.author}|${engagement}`;
      if (seen.has(key)) continue;
      seen.add(key);
      people.push({ ...item, engagement });
    }
  }
  const arrivals = people.map((p) => ({ socialUrl: p.authorDetails.profileUrl }));
  const keys = arrivals.map((a) => keysOf(a));
  await findLeads(ctx.db, arrivals, keys, index, { nameAndCompany: false });
  return people.map((p, i) => ({ ...p, existingLeadId: index.person(keys[i] as IdentityKeys)?.id ?? null }));
}

/** "Title at Company" headlines become job title and company. */
function splitHeadline(headline: string): { jobTitle: string; company: string } {
  const m = /^(.*?)\s+at\s+(.+)$/i.exec(headline.trim());
  return m ? { jobTitle: (m[1] ?? '').trim(), company: (m[2] ?? '').trim() } : { jobTitle: headline.trim(), company: '' };
}

const getAccountLimits = query({
  name: 'social.getAccountLimits',
  summary: "Remaining daily allowances of each connected sender profile (or one), counted in the sender's time zone, with the weekly connection-request cap and a new sender's ramp-up.",
  input: z.object({ senderProfileId: uuid.optional() }),
  output: z.object({ accounts: z.array(accountOut) }),
  async handler(input, ctx) {
    let senders: Sender[];
    if (input.senderProfileId !== undefined) senders = [await senderOrNotFound(ctx, input.senderProfileId)];
    else {
      const { docs } = await ctx.db.query('senders', { where: { op: 'neq', field: 'status', value: 'disconnected' }, orderBy: [{ field: 'name', dir: 'asc' }] });
      senders = docs;
    }
    const accounts = [];
    for (const s of senders) {
      const u = await todayUsage(ctx, s);
      const at = ctx.clock.now();
      const allow = (key: LimitKey) => of(u.counts[key], effectiveLimit(s, key, at));
      const ramp = rampUpOf(s, at);
      const weekCount = await ctx.db.count('messages', {
        op: 'and',
        conds: [
          { op: 'gt', field: 'createdAt', value: new Date(at.getTime() - WEEK_MS).toISOString() },
          { op: 'eq', field: 'sdrProfileId', value: s.id },
          { op: 'eq', field: 'kind', value: 'connection_request' },
          { op: 'eq', field: 'direction', value: 'out' },
          { op: 'in', field: 'status', values: ['sent', 'sending', 'unknown'] },
        ],
      });
      accounts.push({
        senderProfileId: s.id, name: s.name, canSendMessage: canSend(ctx, s), status: s.status, statusReason: s.statusReason, day: u.day,
        sending: {
          messages: allow('messages'), connectionRequests: allow('connectionRequests'), connectionRequestsWithNote: allow('connectionRequestsWithNote'),
          premiumMessages: allow('inmails'), comments: allow('comments'), reactions: allow('reactions'), profileVisits: allow('profileVisits'),
          // Emails are bounded by the messages limit (see shared/engine/limits.ts).
          ...(s.capabilities.includes('email') ? { emails: of(u.counts.emails, effectiveLimit(s, 'messages', at)) } : {}),
        },
        search: of(u.counts.searches, s.searchLimit),
        weekly: { connectionRequests: of(weekCount, weeklyConnectionCap(s, at)) },
        rampUp: { active: ramp.active, day: ramp.day, of: RAMP_UP_DAYS, percent: Math.round(ramp.factor * 100), endsAt: ramp.endsAt, warmedUp: ramp.warmedUp },
      });
    }
    return { accounts };
  },
});

const getPostEngagement = mutation({
  name: 'social.getPostEngagement',
  summary: "Reads a post's comments, then its reactions, within the sender's daily search budget.",
  input: z.object({ senderProfileId: uuid, postUrl }),
  output: z.object({
    comments: z.array(postItemOut),
    reactions: z.array(postItemOut),
    totalComments: z.number().int(),
    totalReactions: z.number().int(),
    stoppedEarlyComments: z.boolean(),
    stoppedEarlyReactions: z.boolean(),
    reactionsSkippedDueToDailyLimit: z.boolean(),
    dailyUsageAfterComments: dailyUsageOut,
    dailyUsage: dailyUsageOut,
  }),
  needsChannel: true,
  async handler(input, ctx) {
    const r = await readEngagement(ctx, input.senderProfileId, input.postUrl);
    return {
      comments: r.comments.items,
      reactions: r.reactions.items,
      totalComments: r.comments.total,
      totalReactions: r.reactions.total,
      stoppedEarlyComments: r.comments.stoppedEarly,
      stoppedEarlyReactions: r.reactions.stoppedEarly,
      reactionsSkippedDueToDailyLimit: r.reactionsSkipped,
      dailyUsageAfterComments: dailyUsage(r.sender, r.afterComments),
      dailyUsage: dailyUsage(r.sender, r.after),
    };
  },
});

const getPostLeads = mutation({
  name: 'social.getPostLeads',
  summary: 'Finds the people who commented on or reacted to a post, to import them as leads (counts against the daily search budget).',
  input: z.object({ senderProfileId: uuid, postUrl }),
  output: z.object({ comments: z.array(personOut), total: z.number().int(), stoppedEarly: z.boolean(), dailyUsage: dailyUsageOut }),
  needsChannel: true,
  async handler(input, ctx) {
    const r = await readEngagement(ctx, input.senderProfileId, input.postUrl);
    const people = await peopleOf(ctx, r, new LeadIndex());
    return {
      comments: people,
      total: r.comments.total + r.reactions.total,
      stoppedEarly: r.comments.stoppedEarly || r.reactions.stoppedEarly,
      dailyUsage: dailyUsage(r.sender, r.after),
    };
  },
});

const importPostLeads = mutation({
  name: 'social.importPostLeads',
  summary: "Imports the people found on a post (all, or the selected profile URLs) as leads of a lead group; people already in the CRM are linked, not duplicated. Reads the post again, within the daily search budget.",
  input: z.object({
    senderProfileId: uuid,
    postUrl,
    leadGroupId: uuid,
    profileUrls: z.array(z.string().trim().min(1).max(2000)).min(1).max(1000).optional(),
  }),
  output: z.object({
    created: z.number().int(),
    duplicates: z.number().int(),
    leadIds: z.array(z.string()),
    notFound: z.array(z.string()),
    stoppedEarly: z.boolean(),
    dailyUsage: dailyUsageOut,
  }),
  needsChannel: true,
  async handler(input, ctx) {
    const group = await ctx.db.get('leadGroups', input.leadGroupId);
    if (!group) throw notFound('Lead group', input.leadGroupId);
    const r = await readEngagement(ctx, input.senderProfileId, input.postUrl);
    const index = new LeadIndex();
    const people = (await peopleOf(ctx, r, index)).filter((p) => p.authorDetails.profileUrl !== '');
    // The profile URLs asked for, by key: any spelling of a person's URL picks that person.
    const wanted = input.profileUrls ? new Set(input.profileUrls.map(profileKey)) : null;
    const chosen = wanted ? people.filter((p) => wanted.has(profileKey(p.authorDetails.profileUrl))) : people;
    const found = new Set(chosen.map((p) => profileKey(p.authorDetails.profileUrl)));
    const now = nowIso(ctx);
    let created = 0;
    let duplicates = 0;
    const leadIds: string[] = [];
    for (const p of chosen) {
      const existing = p.existingLeadId === null ? undefined : index.byId.get(p.existingLeadId);
      if (existing) {
        duplicates++;
        leadIds.push(existing.id);
        const linked = linkedTo(existing, group.id);
        if (linked !== existing) await ctx.db.put('leads', { ...linked, updatedAt: now });
        continue;
      }
      const [firstName = '', ...rest] = p.author.trim().split(/\s+/);
      const { jobTitle, company } = splitHeadline(p.authorDetails.headline);
      const lead = newLead({ id: ctx.ids.uuid(), workspaceId: ctx.actor.workspaceId, now }, group.id, withCanonicalProfile({
        firstName, lastName: rest.join(' '), jobTitle, company, socialUrl: p.authorDetails.profileUrl, lastActivityAt: null,
      }));
      await ctx.db.put('leads', lead);
      created++;
      leadIds.push(lead.id);
    }
    return {
      created, duplicates, leadIds,
      notFound: input.profileUrls ? [...new Set(input.profileUrls)].filter((u) => !found.has(profileKey(u))) : [],
      stoppedEarly: r.comments.stoppedEarly || r.reactions.stoppedEarly,
      dailyUsage: dailyUsage(r.sender, r.after),
    };
  },
});

export const ops = opsByName(getAccountLimits, getPostEngagement, getPostLeads, importPostLeads);
