/** How a campaign looks in responses (the Basic campaign of the specification, its schedule,
 * settings and senders) and loading one: shared by the campaigns.* operations, as lead-views.ts is by
 * the lead operations. */
import { DateTime } from 'luxon';
import { z } from 'zod';
import { nowIso } from '../context.ts';
import type { Ctx } from '../context.ts';
import { notFound } from '../errors.ts';
import { DAYS } from '../model/index.ts';
import type { Campaign, LeadGroup, Schedule, Sender } from '../model/index.ts';

/** The campaign, or NOT_FOUND (ids of other workspaces included). */
export async function loadCampaign(ctx: Ctx, campaignId: string): Promise<Campaign> {
  const c = await ctx.db.get('campaigns', campaignId);
  if (!c) throw notFound('Campaign', campaignId);
  return c;
}

export async function loadGroup(ctx: Ctx, leadGroupId: string): Promise<LeadGroup> {
  const g = await ctx.db.get('leadGroups', leadGroupId);
  if (!g) throw notFound('Lead group', leadGroupId);
  return g;
}

export const basicCampaignOut = z.object({
  id: z.string(),
  name: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
  sequenceId: z.string(),
  leadGroupId: z.string(),
  workspaceId: z.string(),
  config: z.record(z.string(), z.unknown()).nullable(),
  webcamVideoName: z.string(),
  backgroundVideoName: z.string(),
  hasActiveSequence: z.boolean(),
});

export const basicCampaign = (c: Campaign): z.input<typeof basicCampaignOut> => ({
  id: c.id, name: c.name, createdAt: c.createdAt, updatedAt: c.updatedAt, sequenceId: c.sequenceId, leadGroupId: c.leadGroupId,
  workspaceId: c.workspaceId, config: c.config, webcamVideoName: c.webcamVideoName, backgroundVideoName: c.backgroundVideoName,
  hasActiveSequence: c.running,
});

const dayWindowOut = z.object({ enabled: z.boolean(), start: z.string(), end: z.string() });
export const scheduleOut = z.object({
  timeZone: z.string(),
  utcOffsetMinutes: z.number(),
  days: z.object(Object.fromEntries(DAYS.map((d) => [d, dayWindowOut])) as Record<(typeof DAYS)[number], typeof dayWindowOut>),
});
export const settingsOut = z.object({
  preferNewLeads: z.boolean(),
  companyRelay: z.object({ enabled: z.boolean(), maxPersonsPerCompany: z.number(), seniorities: z.array(z.string()) }),
});
/** The answer of a campaign setting's change (schedule, lead picking): the setting before and after. */
export const settingChangeOut = <T extends z.ZodType>(setting: T) =>
  z.object({ dryRun: z.boolean(), campaignId: z.string(), campaignName: z.string(), running: z.boolean(), changed: z.boolean(), before: setting, after: setting });

export const senderSummaryOut = z.object({ sdrProfileId: z.string(), name: z.string(), status: z.string() });
export const campaignSenderOut = senderSummaryOut.extend({ paused: z.boolean() });

/** The schedule as the API shows it: with the zone's current offset from UTC. */
export function scheduleWithOffset(schedule: Schedule, at: Date): z.input<typeof scheduleOut> {
  const zoned = DateTime.fromJSDate(at).setZone(schedule.timeZone);
  return { timeZone: schedule.timeZone, utcOffsetMinutes: zoned.isValid ? zoned.offset : 0, days: structuredClone(schedule.days) };
}

export const senderSummary = (id: string, sender: Sender | undefined): z.input<typeof senderSummaryOut> =>
  sender ? { sdrProfileId: id, name: sender.name, status: sender.status } : { sdrProfileId: id, name: 'Removed sender', status: 'disconnected' };

export async function sendersById(ctx: Ctx, ids: readonly string[]): Promise<Map<string, Sender>> {
  return new Map((await ctx.db.getMany('senders', ids)).map((s) => [s.id, s]));
}

export async function campaignSenders(ctx: Ctx, c: Campaign): Promise<z.input<typeof campaignSenderOut>[]> {
  const docs = await sendersById(ctx, c.senders.map((s) => s.sdrProfileId));
  return c.senders.map((s) => ({ ...senderSummary(s.sdrProfileId, docs.get(s.sdrProfileId)), paused: s.paused }));
}

export const touched = <T extends { updatedAt: string }>(doc: T, ctx: Ctx): T => ({ ...doc, updatedAt: nowIso(ctx) });
