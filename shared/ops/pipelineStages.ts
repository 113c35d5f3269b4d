/** Pipeline stages: the board's columns, each with a category (API contract, "Workspace defaults"). */
import { z } from 'zod';
import { opsByName, query } from './define.ts';

const stageOut = z.object({ id: z.string(), name: z.string(), colorHex: z.string(), category: z.string(), position: z.number() });

const getAll = query({
  name: 'pipelineStages.getAll',
  summary: 'Lists the pipeline stages in board order.',
  input: z.object({}),
  output: z.object({ stages: z.array(stageOut) }),
  async handler(_input, ctx) {
    const { docs } = await ctx.db.query('stages', { orderBy: [{ field: 'position', dir: 'asc' }] });
    return { stages: docs.map((s) => ({ id: s.id, name: s.name, colorHex: s.colorHex, category: s.category, position: s.position })) };
  },
});

export const ops = opsByName(getAll);
