/** campaigns.getBasic: the campaign list, sorted by any of its columns (reply rate and meetings
 * booked included), one page at a time. */
import { z } from 'zod';
import { responseMetrics } from '../metrics.ts';
import type { Campaign } from '../model/index.ts';
import { basicCampaign, basicCampaignOut } from './campaign-views.ts';
import { opsByName, query } from './define.ts';
import { DEFAULT_PAGE_SIZE, qInt } from './params.ts';

const SORT_COLUMNS = ['createdAt', 'updatedAt', 'name', 'hasSequence', 'replyRate', 'meetingsBooked'] as const;
type SortColumn = (typeof SORT_COLUMNS)[number];

const getBasic = query({
  name: 'campaigns.getBasic',
  summary: 'Lists campaigns, newest first by default, one page at a time (pageNumber from 1).',
  input: z.object({
    pageSize: qInt(1, 200).optional(),
    pageNumber: qInt(1, 1_000_000).optional(),
    sortBy: z.enum(SORT_COLUMNS).optional(),
    sortOrder: z.enum(['asc', 'desc']).optional(),
    search: z.string().trim().max(200).optional(),
  }),
  output: z.object({
    totalCount: z.number(),
    basicCampaigns: z.array(basicCampaignOut),
    nextCursor: z.object({ id: z.string(), sortColumnValue: z.string() }).nullable(),
  }),
  async handler(input, ctx) {
    const pageSize = input.pageSize ?? DEFAULT_PAGE_SIZE;
    const pageNumber = input.pageNumber ?? 1;
    const sortBy: SortColumn = input.sortBy ?? 'createdAt';
    const dir = input.sortOrder ?? (sortBy === 'name' ? 'asc' : 'desc');
    const { docs } = await ctx.db.query('campaigns', input.search ? { where: { op: 'contains', fields: ['name'], value: input.search } } : {});
    const metrics = sortBy === 'replyRate' || sortBy === 'meetingsBooked' ? await responseMetrics(ctx.db, docs.map((c) => c.id)) : null;
    const value = (c: Campaign): string | number => {
      switch (sortBy) {
        case 'createdAt':
          return c.createdAt;
        case 'updatedAt':
          return c.updatedAt;
        case 'name':
          return c.name.toLocaleLowerCase();
        case 'hasSequence':
          return c.steps.length > 0 ? 1 : 0;
        case 'replyRate':
          return metrics?.get(c.id)?.replyRate ?? 0;
        case 'meetingsBooked':
          return metrics?.get(c.id)?.meetingsBooked ?? 0;
      }
    };
    const cmp = (a: string | number, b: string | number): number => (a < b ? -1 : a > b ? 1 : 0);
    const sorted = docs
      .map((c) => ({ c, v: value(c) }))
      .sort((a, b) => {
        const primary = cmp(a.v, b.v);
        if (primary !== 0) return dir === 'asc' ? primary : -primary;
        // Ties: newest first, then by id, so pages are stable.
        return -cmp(a.c.createdAt, b.c.createdAt) || cmp(a.c.id, b.c.id);
      });
    const start = (pageNumber - 1) * pageSize;
    const page = sorted.slice(start, start + pageSize);
    const last = page[page.length - 1];
    return {
      totalCount: sorted.length,
      basicCampaigns: page.map(({ c }) => basicCampaign(c)),
      nextCursor: last && start + pageSize < sorted.length ? { id: last.c.id, sortColumnValue: String(last.v) } : null,
    };
  },
});

export const ops = opsByName(getBasic);
