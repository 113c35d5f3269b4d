/** campaigns.leads.export: one page of the leads of a search as the CSV campaigns.leads.import reads
 * back (the lead id first, every field, the custom columns, then stage, tag, sequence and dates). */
import { z } from 'zod';
import { DELIMITERS } from '../import/csv.ts';
import { exportHeaders, leadsToCsv } from '../import/export.ts';
import type { ExportLead } from '../import/export.ts';
import { columnKey } from '../lead-columns.ts';
import { opsByName, query } from './define.ts';
import { LEAD_SORT_FIELDS, leadPage } from './lead-search.ts';
import { currentEnrollment, loadLeadRelations } from './lead-views.ts';
import { cursor, qInt, uuid } from './params.ts';

/** Leads one export page holds. */
export const MAX_EXPORT_PAGE = 5000;

const exportOp = query({
  name: 'campaigns.leads.export',
  summary:
    `One page of the leads of a search (same filters and order as campaigns.leads.search) as CSV: the lead id first, every field, the custom columns, then stage, tag, sequence, scores, dates and when and how the lead unsubscribed (Unsubscribed at, Unsubscribe source; read-only on re-import). Cells starting with =, +, -, @, a tab or a carriage return are prefixed with ' against formula injection. The header is on the first page only (no cursor); pages hold up to ${MAX_EXPORT_PAGE} leads (limit, default 1000). Importing the file with onExisting update updates those leads and creates none.`,
  input: z.object({
    campaignId: uuid.optional(),
    tagId: z.string().trim().min(1).max(100).optional(),
    query: z.string().max(500).optional(),
    pipelineStage: z.string().max(100).optional(),
    sortBy: z.enum(LEAD_SORT_FIELDS).optional(),
    sortOrder: z.enum(['asc', 'desc']).optional(),
    cursor,
    limit: qInt(1, MAX_EXPORT_PAGE).optional(),
    delimiter: z.enum(DELIMITERS).optional(),
  }),
  output: z.object({ csv: z.string(), headers: z.array(z.string()), count: z.number().int(), nextCursor: z.string().nullable() }),
  async handler(input, ctx) {
    const page = await leadPage(ctx.db, input, input.limit ?? 1000);

    // The columns: the campaign's list, or every list of the workspace (one column per name).
    const campaign = input.campaignId ? await ctx.db.get('campaigns', input.campaignId) : null;
    const groups = campaign ? await ctx.db.getMany('leadGroups', [campaign.leadGroupId]) : (await ctx.db.query('leadGroups', { orderBy: [{ field: 'createdAt', dir: 'asc' }] })).docs;
    const idsByName = new Map<string, { name: string; ids: string[] }>();
    for (const g of groups) {
      for (const c of g.columns) {
        if (c.builtInType !== null) continue;
        const entry = idsByName.get(columnKey(c.name)) ?? { name: c.name, ids: [] };
        entry.ids.push(c.id);
        idsByName.set(columnKey(c.name), entry);
      }
    }
    const custom = [...idsByName.values()];
    const customNames = custom.map((c) => c.name);

    const rel = await loadLeadRelations(ctx.db, page.docs, { groups: false });
    const tags = new Map((await ctx.db.query('tags', {})).docs.map((t) => [t.id, t.name]));
    const leads: ExportLead[] = page.docs.map((l) => {
      const enrollments = rel.enrollmentsByLead.get(l.id) ?? [];
      const current = campaign ? enrollments.find((e) => e.campaignId === campaign.id) : currentEnrollment(enrollments);
      return {
        id: l.id, firstName: l.firstName, lastName: l.lastName, fullName: l.fullName, email: l.email, company: l.company, jobTitle: l.jobTitle,
        location: l.location, phone: l.phone, socialUrl: l.socialUrl, seniority: l.seniority, websiteUrl: l.websiteUrl, companySocialUrl: l.companySocialUrl,
        doNotContact: l.doNotContact, blocklisted: l.blocklisted,
        custom: Object.fromEntries(custom.map((c) => [c.name, c.ids.map((id) => l.variables[id] ?? '').find((v) => v !== '') ?? ''])),
        stage: l.pipelineStageId === null ? '' : (rel.stages.get(l.pipelineStageId)?.name ?? ''),
        tag: l.tagId === null ? '' : (tags.get(l.tagId) ?? ''),
        sequenceStatus: current?.status ?? '',
        campaigns: [...new Set(enrollments.map((e) => rel.campaigns.get(e.campaignId)?.name ?? ''))].filter(Boolean),
        rankingScore: l.rankingScore, leadFitScore: l.leadFitScore, followUpAt: l.followUpAt, lastActivityAt: l.lastActivityAt, createdAt: l.createdAt,
        unsubscribedAt: l.unsubscribedAt ?? null, unsubscribeSource: l.unsubscribeSource ?? null,
      };
    });
    return {
      csv: leadsToCsv(leads, customNames, { delimiter: input.delimiter, header: !input.cursor }),
      headers: exportHeaders(customNames),
      count: leads.length,
      nextCursor: page.nextCursor,
    };
  },
});

export const ops = opsByName(exportOp);
