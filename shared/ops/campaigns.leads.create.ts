/** campaigns.leads.create: up to 1000 leads into a lead group, each person once (an existing lead
 * is linked, not copied), variables by column display name (a missing custom column is created). */
import { z } from 'zod';
import { nowIso } from '../context.ts';
import { notFound } from '../errors.ts';
import { cleanRow, withCanonicalProfile } from '../intake/clean.ts';
import type { CleanRow } from '../intake/clean.ts';
import { findLeads, keysOf, LeadIndex, linkedTo } from '../intake/find.ts';
import type { IdentityKeys } from '../intake/find.ts';
import { columnKey, ensureCustomColumns } from '../lead-columns.ts';
import { newLead } from '../model/factories.ts';
import type { Lead, LeadGroupColumn } from '../model/index.ts';
import { MAX_LEADS_PER_REQUEST, stamp } from './campaigns.leads.ts';
import { mutation, opsByName } from './define.ts';
import { uuid } from './params.ts';

/** Text fields of an imported row; the content of each row is checked per row, in the handler. */
const importText = z.string().nullish();
const importRow = z.object({
  firstName: importText,
  lastName: importText,
  email: importText,
  company: importText,
  jobTitle: importText,
  location: importText,
  phone: importText,
  socialUrl: importText,
  seniority: importText,
  variables: z.record(z.string(), importText).nullish(),
});

/** Puts the named variables of a row on the lead's fields (built-in columns, unless the row set the
 * field directly) or its custom values (by column id). */
function applyVariables(row: CleanRow, columns: ReadonlyMap<string, LeadGroupColumn>): { fields: Partial<Lead>; custom: Record<string, string> } {
  const fields: Partial<Lead> = { ...row.fields };
  const custom: Record<string, string> = {};
  for (const [name, v] of row.variables) {
    const col = columns.get(columnKey(name));
    if (!col || v === '') continue;
    if (col.builtInType !== null) {
      const field = col.builtInType as keyof Lead;
      if (fields[field] === undefined) (fields as Record<string, unknown>)[field] = v;
    } else custom[col.id] = v;
  }
  return { fields, custom };
}

const create = mutation({
  name: 'campaigns.leads.create',
  summary:
    'Imports up to 1000 leads into a lead group; duplicates (same social URL, else email) are linked, bad rows reported. variables {name: value} fill the column of that display name (case-insensitive; built-in columns fill the lead field), creating a custom column when the group has none.',
  input: z.object({ leadGroupId: uuid, leads: z.array(importRow).min(1).max(MAX_LEADS_PER_REQUEST) }),
  output: z.object({
    created: z.number().int(),
    duplicates: z.number().int(),
    leadIds: z.array(z.string().nullable()),
    errors: z.array(z.object({ index: z.number().int(), message: z.string() })),
  }),
  async handler(input, ctx) {
    const group = await ctx.db.get('leadGroups', input.leadGroupId);
    if (!group) throw notFound('Lead group', input.leadGroupId);

    // Names of variables no column has yet become custom columns of the group (once, for the batch).
    const cleaned = input.leads.map(cleanRow);
    const names = cleaned.flatMap((c) => (typeof c === 'string' ? [] : c.variables.map(([name]) => name)));
    const columns = names.length > 0 ? await ensureCustomColumns(ctx, group.id, names) : new Map<string, LeadGroupColumn>();
    const rows = cleaned.map((c) => {
      if (typeof c === 'string') return c;
      const { fields, custom } = applyVariables(c, columns);
      return { fields: withCanonicalProfile(fields), custom };
    });

    // The leads the rows are (same profile URL, else email), looked up by those keys only; the
    // batch then adds the leads it creates, so a person given twice is one lead.
    const arrivals = rows.map((r) => (typeof r === 'string' ? {} : r.fields));
    const keys = arrivals.map((a) => keysOf(a));
    const index = new LeadIndex();
    await findLeads(ctx.db, arrivals, keys, index, { nameAndCompany: false });

    const touched = new Map<string, Lead>();
    const leadIds: (string | null)[] = [];
    const errors: { index: number; message: string }[] = [];
    let created = 0;
    let duplicates = 0;
    const now = nowIso(ctx);

    rows.forEach((row, i) => {
      if (typeof row === 'string') {
        errors.push({ index: i, message: row });
        leadIds.push(null);
        return;
      }
      const { fields, custom } = row;
      const found = index.person(keys[i] as IdentityKeys);
      if (found) {
        const current = touched.get(found.id) ?? found;
        const variables = { ...current.variables };
        let changed = false;
        // Fill this group's custom columns the lead has no value for; never overwrite.
        for (const [k, v] of Object.entries(custom)) {
          if (!variables[k]) {
            variables[k] = v;
            changed = true;
          }
        }
        const linked = linkedTo(current, group.id);
        if (linked !== current || changed) touched.set(found.id, { ...linked, variables, updatedAt: now });
        duplicates++;
        leadIds.push(found.id);
        return;
      }
      const lead = newLead(stamp(ctx), group.id, { ...fields, variables: custom });
      touched.set(lead.id, lead);
      index.add(lead);
      created++;
      leadIds.push(lead.id);
    });
    for (const lead of touched.values()) await ctx.db.put('leads', lead);
    return { created, duplicates, leadIds, errors };
  },
});

export const ops = opsByName(create);
