/** campaigns.updateSchedule: a campaign's time zone and per-day sending windows. */
import { z } from 'zod';
import { DomainError } from '../errors.ts';
import { DAYS } from '../model/index.ts';
import type { Schedule } from '../model/index.ts';
import { scheduleProblems } from '../rules/readiness.ts';
import { loadCampaign, scheduleOut, scheduleWithOffset, settingChangeOut, touched } from './campaign-views.ts';
import { mutation, opsByName } from './define.ts';
import { dryRun, uuid } from './params.ts';

const HH_MM = /^([01][0-9]|2[0-3]):[0-5][0-9]$/;
const HH_MM_END = /^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$/;

const dayPatch = z.strictObject({
  enabled: z.boolean().optional(),
  start: z.string().regex(HH_MM, 'must be HH:MM (24-hour)').optional(),
  end: z.string().regex(HH_MM_END, 'must be HH:MM (24-hour; 24:00 for midnight)').optional(),
});

const updateSchedule = mutation({
  name: 'campaigns.updateSchedule',
  summary:
    "Changes a campaign's sending schedule: time zone and per-day windows (only passed values change). Each enabled day's start must be before its end and at least one day stays on. Allowed while running; applies from the next send.",
  input: z.object({
    campaignId: uuid,
    dryRun,
    timeZone: z.string().trim().min(1).max(64).optional(),
    days: z.strictObject(Object.fromEntries(DAYS.map((d) => [d, dayPatch.optional()])) as Record<(typeof DAYS)[number], z.ZodOptional<typeof dayPatch>>).optional(),
  }),
  output: settingChangeOut(scheduleOut),
  dryRun: true,
  async handler(input, ctx) {
    const c = await loadCampaign(ctx, input.campaignId);
    const after: Schedule = structuredClone(c.schedule);
    if (input.timeZone !== undefined) after.timeZone = input.timeZone;
    for (const day of DAYS) {
      const patch = input.days?.[day];
      const cur = after.days[day];
      if (patch) after.days[day] = { enabled: patch.enabled ?? cur.enabled, start: patch.start ?? cur.start, end: patch.end ?? cur.end };
    }
    const changed = JSON.stringify(after) !== JSON.stringify(c.schedule);
    if (changed) {
      const problems = scheduleProblems(after);
      const first = problems[0];
      if (first) {
        throw new DomainError('INVALID_SCHEDULE', `The sending schedule is not valid: ${first.message}.`, {
          campaignId: c.id,
          day: first.day,
          problems,
        });
      }
      await ctx.db.put('campaigns', touched({ ...c, schedule: after }, ctx));
    }
    const at = ctx.clock.now();
    return {
      dryRun: ctx.dryRun,
      campaignId: c.id,
      campaignName: c.name,
      running: c.running,
      changed,
      before: scheduleWithOffset(c.schedule, at),
      after: scheduleWithOffset(after, at),
    };
  },
});

export const ops = opsByName(updateSchedule);
