/** Tags: the workspace's labels for leads (a lead has at most one; campaigns.leads.updateTag sets it). */
import { z } from 'zod';
import { nowIso } from '../context.ts';
import { mutation, opsByName, query } from './define.ts';

const hexColor = z.string().regex(/^#[0-9a-fA-F]{6}$/, 'must be a color like #1a2b3c');
const tagOut = z.object({ id: z.string(), name: z.string(), color: z.string() });

const getAll = query({
  name: 'tags.getAll',
  summary: 'Lists the workspace tags.',
  input: z.object({}),
  output: z.object({ tags: z.array(tagOut) }),
  async handler(_input, ctx) {
    const { docs } = await ctx.db.query('tags', { orderBy: [{ field: 'name', dir: 'asc' }] });
    return { tags: docs.map((t) => ({ id: t.id, name: t.name, color: t.color })) };
  },
});

const create = mutation({
  name: 'tags.create',
  summary: 'Creates a tag.',
  input: z.object({ name: z.string().trim().min(1).max(100), color: hexColor.optional() }),
  output: tagOut,
  async handler(input, ctx) {
    const existing = await ctx.db.query('tags', { where: { op: 'eq', field: 'name', value: input.name }, limit: 1 });
    const found = existing.docs[0];
    if (found) return { id: found.id, name: found.name, color: found.color };
    const now = nowIso(ctx);
    const tag = { id: ctx.ids.uuid(), workspaceId: ctx.actor.workspaceId, createdAt: now, updatedAt: now, name: input.name, color: input.color ?? '#64748b' };
    await ctx.db.put('tags', tag);
    return { id: tag.id, name: tag.name, color: tag.color };
  },
});

export const ops = opsByName(getAll, create);
