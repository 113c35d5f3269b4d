/** campaigns.leads.unmerge: the undo of campaigns.leads.merge, given the `undo` part of its answer
 * (the app's Undo while its toast shows). Both leads come back as they were: the merged lead is a
 * lead again, the survivor's fields, lists, tag, stage and flags are put back, and the notes, tasks,
 * events, messages and enrollments that moved go back to the merged lead, enrollments with the
 * status they had (unless they changed since the merge). What was sent meanwhile stays sent. Webhook
 * endpoints that chose it get `lead.unmerged`, raised by the merged lead's write like every event
 * (shared/webhooks/events.ts), in the outbox of the same transaction: a refused undo raises none. */
import { z } from 'zod';
import { nowIso } from '../context.ts';
import { sameJson } from '../json-equal.ts';
import { DomainError, notFound } from '../errors.ts';
import { newActivity } from '../model/factories.ts';
import type { Lead } from '../model/index.ts';
import { liveLead, stamp } from './campaigns.leads.ts';
import { mutation, opsByName } from './define.ts';
import { mergeUndoSchema, OPTIONAL_LEAD_FIELDS } from './lead-merge.ts';
import { leadName } from './lead-views.ts';
import { dryRun, uuid } from './params.ts';

const unmerge = mutation({
  name: 'campaigns.leads.unmerge',
  summary:
    "Undoes campaigns.leads.merge with the undo object its answer gave: the merged lead is a lead again, the survivor's fields, lead lists, tag, stage and flags are put back, and the notes, tasks, events, messages and enrollments that moved return to the merged lead (an enrollment's status too, unless it changed since). Raises lead.unmerged (a webhook receiver that applied lead.merged puts both leads back). Refused with 409 CONFLICT when mergedId is not merged into survivorId, raising nothing. dryRun previews the counts.",
  input: z.object({ survivorId: uuid, mergedId: uuid, undo: mergeUndoSchema, dryRun }),
  output: z.object({
    dryRun: z.boolean(),
    survivorId: z.string(),
    mergedId: z.string(),
    movedBack: z.object({ activities: z.number().int(), messages: z.number().int(), enrollments: z.number().int() }),
    /** Documents that were no longer on the survivor (deleted, or changed since) and stay where they are. */
    leftAlone: z.number().int(),
    /** Fields of the survivor the merge had changed and someone changed again since: they keep the newer value. */
    keptChanges: z.number().int(),
  }),
  dryRun: true,
  async handler(input, ctx) {
    const s = await liveLead(ctx, input.survivorId);
    const m = await ctx.db.get('leads', input.mergedId);
    if (!m) throw notFound('Lead', input.mergedId);
    if (m.mergedIntoId !== s.id) {
      throw new DomainError('CONFLICT', `${leadName(m) || 'That lead'} is not merged into ${leadName(s) || 'this lead'}, so there is no merge to undo.`, { mergedId: m.id, survivorId: s.id, mergedIntoId: m.mergedIntoId ?? null });
    }
    const now = nowIso(ctx);
    const { mergedIntoId: _gone, ...own } = m;
    await ctx.db.put('leads', { ...own, updatedAt: now } satisfies Lead);
    // Each field the merge set is put back, unless it changed since (an edit made after the merge stays).
    const { survivorBefore, survivorAfter } = input.undo;
    const restored: Lead = { ...s, variables: { ...s.variables }, groupIds: [...s.groupIds], updatedAt: now };
    const fields = restored as unknown as Record<string, unknown>;
    const current = s as unknown as Record<string, unknown>;
    const was = survivorBefore as Record<string, unknown>;
    const left = survivorAfter as Record<string, unknown>;
    let keptChanges = 0;
    for (const f of new Set([...Object.keys(survivorBefore), ...Object.keys(survivorAfter), ...OPTIONAL_LEAD_FIELDS])) {
      if (f === 'variables') continue;
      if (!sameJson(current[f] ?? null, left[f] ?? null)) {
        if (!sameJson(was[f] ?? null, left[f] ?? null)) keptChanges++;
        continue;
      }
      if (was[f] === undefined) delete fields[f];
      else fields[f] = was[f];
    }
    for (const k of new Set([...Object.keys(survivorBefore.variables), ...Object.keys(survivorAfter.variables)])) {
      const before = survivorBefore.variables[k];
      if (s.variables[k] !== survivorAfter.variables[k]) continue;
      if (before === undefined) delete restored.variables[k];
      else restored.variables[k] = before;
    }
    await ctx.db.put('leads', restored);

    let leftAlone = 0;
    const movedBack = { activities: 0, messages: 0, enrollments: 0 };
    for (const a of await ctx.db.getMany('activities', input.undo.movedActivityIds)) {
      if (a.leadId !== s.id) {
        leftAlone++;
        continue;
      }
      await ctx.db.put('activities', { ...a, leadId: m.id, updatedAt: now });
      movedBack.activities++;
    }
    for (const msg of await ctx.db.getMany('messages', input.undo.movedMessageIds)) {
      if (msg.leadId !== s.id) {
        leftAlone++;
        continue;
      }
      await ctx.db.put('messages', { ...msg, leadId: m.id, updatedAt: now });
      movedBack.messages++;
    }
    const befores = new Map(input.undo.enrollmentsBefore.map((e) => [e.id, e]));
    for (const e of await ctx.db.getMany('enrollments', [...befores.keys()])) {
      const was = befores.get(e.id);
      if (!was || (e.leadId !== s.id && e.leadId !== m.id)) {
        leftAlone++;
        continue;
      }
      // The status the merge set is put back only if nothing changed it since.
      const untouched = e.status === was.statusAfter;
      await ctx.db.put('enrollments', {
        ...e,
        leadId: was.leadId,
        ...(untouched ? { status: was.status, stoppedReason: was.stoppedReason, nextActionAt: was.nextActionAt } : {}),
        updatedAt: now,
      });
      if (was.leadId === m.id) movedBack.enrollments++;
    }
    await ctx.db.put('activities', newActivity(stamp(ctx), s.id, ctx.actor.memberId, 'EVENT', `The merge with ${leadName(m) || 'a duplicate lead'} was undone.`, { metadata: { eventKind: 'lead_unmerged' } }));
    return { dryRun: ctx.dryRun, survivorId: s.id, mergedId: m.id, movedBack, leftAlone, keptChanges };
  },
});

export const ops = opsByName(unmerge);
