/** API keys: each acts as the member who created it; the secret is shown once and only its hash is
 * kept. Served by the sync server only (the desktop has no keys of its own). */
import { z } from 'zod';
import { nowIso } from '../context.ts';
import type { Ctx } from '../context.ts';
import { notFound } from '../errors.ts';
import type { ApiKey } from '../model/index.ts';
import { mutation, opsByName, query } from './define.ts';
import { uuid } from './params.ts';

const keyOut = z.object({ id: z.string(), name: z.string(), prefix: z.string(), createdAt: z.string(), lastUsedAt: z.string().nullable() });

/** Creates an API key document for a member; the secret is returned once and only its hash kept. */
export async function issueKey(ctx: Ctx, memberId: string, name: string): Promise<{ doc: ApiKey; key: string }> {
  const key = ctx.secrets.newApiKey();
  const now = nowIso(ctx);
  const doc: ApiKey = {
    id: ctx.ids.uuid(), workspaceId: ctx.actor.workspaceId, createdAt: now, updatedAt: now, memberId, name,
    prefix: key.slice(0, 12), hash: ctx.secrets.hash(key), lastUsedAt: null, revokedAt: null,
  };
  await ctx.db.put('apiKeys', doc);
  return { doc, key };
}

const create = mutation({
  name: 'apiKeys.create',
  summary: 'Issues a new API key acting as the caller (the secret is shown once).',
  input: z.object({ name: z.string().trim().min(1).max(200) }),
  output: z.object({ id: z.string(), key: z.string(), prefix: z.string() }),
  serverOnly: true,
  async handler(input, ctx) {
    const { doc, key } = await issueKey(ctx, ctx.actor.memberId, input.name);
    return { id: doc.id, key, prefix: doc.prefix };
  },
});

const list = query({
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
});

const revoke = mutation({
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
});

export const ops = opsByName(create, list, revoke);
