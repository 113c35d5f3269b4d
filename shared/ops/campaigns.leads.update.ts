/** campaigns.leads.update: edits a lead's fields, scores, variables and flags; an email or profile URL
 * another lead has is refused (one person is one lead). */
import { z } from 'zod';
import { nowIso } from '../context.ts';
import { DomainError } from '../errors.ts';
import { hasIdentity, isEmailAddress, MAX_FIELD } from '../intake/clean.ts';
import { otherHolder } from '../intake/find.ts';
import { canonicalProfileUrl, emailKey, profileKey } from '../intake/identity.ts';
import { columnKey, columnNameProblem, ensureCustomColumns, findColumn } from '../lead-columns.ts';
import type { Lead, LeadGroupColumn } from '../model/index.ts';
import { liveLead, stopRunningEnrollments } from './campaigns.leads.ts';
import { mutation, opsByName } from './define.ts';
import { leadRecordSchema, leadVariables, leadVariableSchema, toLeadRecord } from './lead-views.ts';
import { dryRun, uuid } from './params.ts';

/** Lead fields `campaigns.leads.update` edits (stage, tag and catch-up date have operations of
 * their own, with their rules). */
const EDITABLE_TEXT = [
  'firstName', 'lastName', 'fullName', 'email', 'company', 'jobTitle', 'location', 'phone', 'seniority',
  'socialUrl', 'personalSocialUrl', 'companySocialUrl', 'websiteUrl', 'profilePictureUrl',
] as const;
type EditableText = (typeof EDITABLE_TEXT)[number];
const editText = z.string().trim().max(MAX_FIELD, `must be at most ${MAX_FIELD} characters`).optional();
const updateInput = z.object({
  leadId: uuid,
  ...(Object.fromEntries(EDITABLE_TEXT.map((f) => [f, editText])) as Record<EditableText, typeof editText>),
  leadFitScore: z.number().optional(),
  rankingScore: z.number().optional(),
  /** By column display name (case-insensitive); '' or null clears the value. */
  variables: z.record(z.string(), z.string().max(MAX_FIELD).nullable()).optional(),
  doNotContact: z.boolean().optional(),
  blocklisted: z.boolean().optional(),
  dryRun,
});

const update = mutation({
  name: 'campaigns.leads.update',
  summary:
    "Edits a lead: any of its profile fields, scores, variables {name: value} (by column display name, case-insensitive; a name none of the lead's groups has becomes a custom column of its own group; '' or null clears), doNotContact and blocklisted (setting either stops its running sequence). Only passed fields change; nothing passed is refused with 422 NO_FIELDS_TO_UPDATE; an email or social URL another lead has is refused with 409 DUPLICATE_LEAD (one person is one lead). dryRun previews.",
  input: updateInput,
  output: leadRecordSchema.extend({
    dryRun: z.boolean(),
    /** The fields whose value changed (variables by column display name). */
    changed: z.array(z.string()),
    ...(Object.fromEntries(EDITABLE_TEXT.map((f) => [f, z.string()])) as Record<EditableText, z.ZodString>),
    leadFitScore: z.number(),
    rankingScore: z.number(),
    doNotContact: z.boolean(),
    blocklisted: z.boolean(),
    variables: z.array(leadVariableSchema),
  }),
  dryRun: true,
  async handler(input, ctx) {
    const { leadId, variables: named, dryRun: _dryRun, ...fields } = input;
    const passed = Object.entries(fields).filter(([, v]) => v !== undefined);
    if (passed.length === 0 && Object.keys(named ?? {}).length === 0) {
      throw new DomainError('NO_FIELDS_TO_UPDATE', 'Pass at least one field to change (a lead field, variables, doNotContact or blocklisted).', { leadId });
    }
    const lead = await liveLead(ctx, leadId);
    const next: Lead = { ...lead, variables: { ...lead.variables } };
    for (const [k, v] of passed) (next as Record<string, unknown>)[k] = v;
    if ((fields.firstName !== undefined || fields.lastName !== undefined) && fields.fullName === undefined) {
      next.fullName = [next.firstName, next.lastName].filter(Boolean).join(' ');
    }

    // Variables: every column of the lead's groups with that name (its own group first); a name
    // none of them has becomes a custom column of the lead's own group.
    const changedVariables: string[] = [];
    if (named && Object.keys(named).length > 0) {
      const groups = await ctx.db.getMany('leadGroups', [...new Set([lead.leadGroupId, ...lead.groupIds])]);
      const missing: string[] = [];
      const targets: { name: string; value: string; columns: LeadGroupColumn[] }[] = [];
      for (const [name, value] of Object.entries(named)) {
        const problem = columnNameProblem(name);
        if (problem) throw new DomainError('INVALID_INPUT', `variables: ${problem}.`, { field: `variables.${name}` });
        const columns = groups.flatMap((g) => {
          const c = findColumn(g, name);
          return c ? [c] : [];
        });
        const v = (value ?? '').trim();
        // Clearing a value no column holds creates nothing.
        if (columns.length === 0 && v !== '') missing.push(name);
        targets.push({ name, value: v, columns });
      }
      const created = missing.length > 0 ? await ensureCustomColumns(ctx, lead.leadGroupId, missing) : new Map<string, LeadGroupColumn>();
      for (const t of targets) {
        const columns = t.columns.length > 0 ? t.columns : [created.get(columnKey(t.name))].flatMap((c) => (c ? [c] : []));
        for (const col of columns) {
          if (col.builtInType !== null) {
            // A field passed directly wins over the same field given as a variable (and is
            // reported under its own name).
            if ((fields as Record<string, unknown>)[col.builtInType] === undefined) (next as Record<string, unknown>)[col.builtInType] = t.value;
            continue;
          }
          if (t.value === '') delete next.variables[col.id];
          else next.variables[col.id] = t.value;
          if ((lead.variables[col.id] ?? '') !== t.value) changedVariables.push(t.name);
        }
      }
    }

    // The profile URL in the spelling every entry stores (the lead's own, when it is the same).
    if (next.socialUrl !== lead.socialUrl && next.socialUrl !== '') next.socialUrl = canonicalProfileUrl(next.socialUrl);
    if (next.email !== '' && !isEmailAddress(next.email)) {
      throw new DomainError('INVALID_INPUT', `email: "${next.email}" is not a valid email address.`, { field: 'email' });
    }
    if (!hasIdentity(next)) {
      throw new DomainError('INVALID_INPUT', 'A lead keeps a name, an email or a social profile URL; this change would leave it with none.', { leadId });
    }
    for (const field of ['email', 'socialUrl'] as const) {
      const key = field === 'email' ? emailKey : profileKey;
      if (next[field] === '' || key(next[field]) === key(lead[field])) continue;
      const other = await otherHolder(ctx.db, field, next[field], lead.id);
      if (other) {
        throw new DomainError('DUPLICATE_LEAD', `${other.fullName || 'Another lead'} already has the ${field === 'email' ? 'email' : 'social URL'} ${next[field]}: one person is one lead in a workspace. Update or delete that lead instead.`, {
          field,
          leadId: lead.id,
          existingLeadId: other.id,
        });
      }
    }

    const changed = [
      ...[...EDITABLE_TEXT, 'leadFitScore', 'rankingScore', 'doNotContact', 'blocklisted'].filter((f) => (lead as Record<string, unknown>)[f] !== (next as Record<string, unknown>)[f]),
      ...new Set(changedVariables),
    ];
    const saved: Lead = changed.length === 0 ? lead : { ...next, updatedAt: nowIso(ctx) };
    if (changed.length > 0) await ctx.db.put('leads', saved);
    if (fields.doNotContact === true) await stopRunningEnrollments(ctx, [lead.id], 'do_not_contact');
    if (fields.blocklisted === true) await stopRunningEnrollments(ctx, [lead.id], 'blocklisted');

    const groups = new Map((await ctx.db.getMany('leadGroups', [...new Set([saved.leadGroupId, ...saved.groupIds])])).map((g) => [g.id, g]));
    return {
      ...toLeadRecord(saved),
      dryRun: ctx.dryRun,
      changed,
      ...(Object.fromEntries(EDITABLE_TEXT.map((f) => [f, saved[f]])) as Record<EditableText, string>),
      leadFitScore: saved.leadFitScore,
      rankingScore: saved.rankingScore,
      doNotContact: saved.doNotContact,
      blocklisted: saved.blocklisted,
      variables: leadVariables(saved, groups),
    };
  },
});

export const ops = opsByName(update);
