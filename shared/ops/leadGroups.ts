/** Lead groups: the lead lists campaigns work on, with their columns (campaigns.addColumn and
 * campaigns.leads.import change them). */
import { z } from 'zod';
import { opsByName, query } from './define.ts';

const leadGroupOut = z.object({
  id: z.string(),
  name: z.string(),
  createdAt: z.string(),
  columns: z.array(z.object({ id: z.string(), name: z.string(), builtInType: z.string().nullable() })),
});

const getAll = query({
  name: 'leadGroups.getAll',
  summary: 'Lists the lead groups (lead lists) with their columns, the merge fields and import targets.',
  input: z.object({}),
  output: z.object({ leadGroups: z.array(leadGroupOut) }),
  async handler(_input, ctx) {
    const { docs } = await ctx.db.query('leadGroups', { orderBy: [{ field: 'createdAt', dir: 'asc' }] });
    return { leadGroups: docs.map((g) => ({ id: g.id, name: g.name, createdAt: g.createdAt, columns: g.columns.map((c) => ({ id: c.id, name: c.name, builtInType: c.builtInType })) })) };
  },
});

export const ops = opsByName(getAll);
