/** Workspace configuration: tags, pipeline stages, members and API keys. */
import { z } from 'zod';
import { nowIso } from '../context.ts';
import type { Ctx } from '../context.ts';
import { DomainError, notFound } from '../errors.ts';
import { ROLES } from '../model/index.ts';
import type { ApiKey } from '../model/index.ts';
import { mutation, opsByName, query } from './define.ts';
import { uuid } from './params.ts';

const hexColor = z.string().regex(/^#[0-9a-fA-F]{6}$/, 'must be a color like #1a2b3c');
const tagOut = z.object({ id: z.string(), name: z.string(), color: z.string() });
const stageOut = z.object({ id: z.string(), name: z.string(), colorHex: z.string(), category: z.string(), position: z.number() });
const memberOut = z.object({ id: z.string(), name: z.string(), email: z.string(), role: z.enum(ROLES) });
const leadGroupOut = z.object({
  id: z.string(),
  name: z.string(),
  createdAt: z.string(),
  columns: z.array(z.object({ id: z.string(), name: z.string(), builtInType: z.string().nullable() })),
});
const keyOut = z.object({ id: z.string(), name: z.string(), prefix: z.string(), createdAt: z.string(), lastUsedAt: z.string().nullable() });

/** Creates an API key document for a member; the secret is returned once and only its hash kept. */
async function issueKey(ctx: Ctx, memberId: string, name: string): Promise<{ doc: ApiKey; key: string }> {
  const key = ctx.secrets.newApiKey();
  const now = nowIso(ctx);
  const doc: ApiKey = {
    id: ctx.ids.uuid(), workspaceId: ctx.actor.workspaceId, createdAt: now, updatedAt: now, memberId, name,
    prefix: key.slice(0, 12), hash: ctx.secrets.hash(key), lastUsedAt: null, revokedAt: null,
  };
  await ctx.db.put('apiKeys', doc);
  return { doc, key };
}

export const workspaceOps = opsByName(
  query({
    name: 'tags.getAll',
    summary: 'Lists the workspace tags.',
    input: z.object({}),
    output: z.object({ tags: z.array(tagOut) }),
    async handler(_input, ctx) {
      const { docs } = await ctx.db.query('tags', { orderBy: [{ field: 'name', dir: 'asc' }] });
      return { tags: docs.map((t) => ({ id: t.id, name: t.name, color: t.color })) };
    },
  }),
  mutation({
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
  }),
  query({
    name: 'pipelineStages.getAll',
    summary: 'Lists the pipeline stages in board order.',
    input: z.object({}),
    output: z.object({ stages: z.array(stageOut) }),
    async handler(_input, ctx) {
      const { docs } = await ctx.db.query('stages', { orderBy: [{ field: 'position', dir: 'asc' }] });
      return { stages: docs.map((s) => ({ id: s.id, name: s.name, colorHex: s.colorHex, category: s.category, position: s.position })) };
    },
  }),
  query({
    name: 'leadGroups.getAll',
    summary: 'Lists the lead groups (lead lists) with their columns, the merge fields and import targets.',
    input: z.object({}),
    output: z.object({ leadGroups: z.array(leadGroupOut) }),
    async handler(_input, ctx) {
      const { docs } = await ctx.db.query('leadGroups', { orderBy: [{ field: 'createdAt', dir: 'asc' }] });
      return { leadGroups: docs.map((g) => ({ id: g.id, name: g.name, createdAt: g.createdAt, columns: g.columns.map((c) => ({ id: c.id, name: c.name, builtInType: c.builtInType })) })) };
    },
  }),
  query({
    name: 'members.list',
    summary: 'Lists the workspace members.',
    input: z.object({}),
    output: z.object({ members: z.array(memberOut) }),
    async handler(_input, ctx) {
      const { docs } = await ctx.db.query('members', { orderBy: [{ field: 'name', dir: 'asc' }] });
      return { members: docs.map((m) => ({ id: m.id, name: m.name, email: m.email, role: m.role })) };
    },
  }),
  mutation({
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
  }),
  mutation({
    name: 'apiKeys.create',
    summary: 'Issues a new API key acting as the caller (the secret is shown once).',
    input: z.object({ name: z.string().trim().min(1).max(200) }),
    output: z.object({ id: z.string(), key: z.string(), prefix: z.string() }),
    serverOnly: true,
    async handler(input, ctx) {
      const { doc, key } = await issueKey(ctx, ctx.actor.memberId, input.name);
      return { id: doc.id, key, prefix: doc.prefix };
    },
  }),
  query({
    name: 'apiKeys.list',
    summary: "Lists the caller's API keys that are not revoked (owners and admins see every member's).",
    input: z.object({}),
    output: z.object({ keys: z.array(keyOut.extend({ memberId: z.string() })) }),
    serverOnly: true,
    async handler(_input, ctx) {
      const admin = ctx.actor.role !== 'member';
      const { docs } = await ctx.db.query('apiKeys', {
        where: admin ? { op: 'eq', field: 'revokedAt', value: null } : { op: 'and', conds: [{ op: 'eq', field: 'revokedAt', value: null }, { op: 'eq', field: 'memberId', value: ctx.actor.memberId }] },
        orderBy: [{ field: 'createdAt', dir: 'desc' }],
      });
      return { keys: docs.map((k) => ({ id: k.id, name: k.name, prefix: k.prefix, createdAt: k.createdAt, lastUsedAt: k.lastUsedAt, memberId: k.memberId })) };
    },
  }),
  mutation({
    name: 'apiKeys.revoke',
    summary: 'Revokes an API key; requests with it are refused from then on.',
    input: z.object({ id: uuid }),
    output: z.object({ id: z.string(), revokedAt: z.string() }),
    serverOnly: true,
    async handler(input, ctx) {
      const key = await ctx.db.get('apiKeys', input.id);
      if (!key || (key.memberId !== ctx.actor.memberId && ctx.actor.role === 'member')) throw notFound('API key', input.id);
      if (key.revokedAt) return { id: key.id, revokedAt: key.revokedAt };
      const now = nowIso(ctx);
      await ctx.db.put('apiKeys', { ...key, revokedAt: now, updatedAt: now });
      return { id: key.id, revokedAt: now };
    },
  }),
);
