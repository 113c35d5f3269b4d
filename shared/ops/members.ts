/** Members of the workspace and their roles (owner, admin, member). */
import { z } from 'zod';
import { nowIso } from '../context.ts';
import { DomainError } from '../errors.ts';
import { ROLES } from '../model/index.ts';
import { issueKey } from './apiKeys.ts';
import { mutation, opsByName, query } from './define.ts';

const memberOut = z.object({ id: z.string(), name: z.string(), email: z.string(), role: z.enum(ROLES) });

const list = query({
  name: 'members.list',
  summary: 'Lists the workspace members.',
  input: z.object({}),
  output: z.object({ members: z.array(memberOut) }),
  async handler(_input, ctx) {
    const { docs } = await ctx.db.query('members', { orderBy: [{ field: 'name', dir: 'asc' }] });
    return { members: docs.map((m) => ({ id: m.id, name: m.name, email: m.email, role: m.role })) };
  },
});

const create = mutation({
  name: 'members.create',
  summary: 'Adds a member and issues their first API key (shown once).',
  input: z.object({ name: z.string().trim().min(1).max(200), email: z.string().trim().email(), role: z.enum(ROLES) }),
  output: z.object({ memberId: z.string(), apiKey: z.string() }),
  permission: 'admin',
  serverOnly: true,
  async handler(input, ctx) {
    const dup = await ctx.db.query('members', { where: { op: 'eq', field: 'email', value: input.email }, limit: 1 });
    if (dup.docs.length > 0) throw new DomainError('INVALID_INPUT', `A member with the email ${input.email} already exists.`, { field: 'email' });
    const now = nowIso(ctx);
    const memberId = ctx.ids.uuid();
    await ctx.db.put('members', { id: memberId, workspaceId: ctx.actor.workspaceId, createdAt: now, updatedAt: now, name: input.name, email: input.email, role: input.role });
    const { key } = await issueKey(ctx, memberId, 'First key');
    return { memberId, apiKey: key };
  },
});

export const ops = opsByName(list, create);
