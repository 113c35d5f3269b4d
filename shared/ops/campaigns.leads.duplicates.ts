/** campaigns.leads.duplicates: leads that are one person, for the Duplicates view and a merge. Same
 * profile URL or same email (the identity keys of shared/intake/identity.ts) are the same person;
 * the same name at the same company is a possible duplicate for a person to judge. Read from each
 * store's key index (StoreReader.duplicateGroups), so a page costs a few probes at any size. */
import { z } from 'zod';
import { DomainError } from '../errors.ts';
import { IDENTITY_KINDS } from '../intake/identity.ts';
import type { IdentityKind } from '../intake/identity.ts';
import type { Lead } from '../model/index.ts';
import { opsByName, query } from './define.ts';
import { cursor, pageLimit } from './params.ts';

const DEFAULT_GROUPS = 25;

const duplicateLead = z.object({
  id: z.string(),
  fullName: z.string(),
  firstName: z.string(),
  lastName: z.string(),
  email: z.string(),
  company: z.string(),
  jobTitle: z.string(),
  socialUrl: z.string(),
  pipelineStageId: z.string().nullable(),
  tagId: z.string().nullable(),
  doNotContact: z.boolean(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

const toDuplicateLead = (l: Lead): z.output<typeof duplicateLead> => ({
  id: l.id, fullName: l.fullName, firstName: l.firstName, lastName: l.lastName, email: l.email, company: l.company, jobTitle: l.jobTitle,
  socialUrl: l.socialUrl, pipelineStageId: l.pipelineStageId, tagId: l.tagId, doNotContact: l.doNotContact, createdAt: l.createdAt, updatedAt: l.updatedAt,
});

/** The cursor: the kind being listed and the store's cursor within it. */
function parseCursor(c: string | null | undefined, only: IdentityKind | undefined): { kind: IdentityKind; inner: string | null } {
  if (!c) return { kind: only ?? IDENTITY_KINDS[0], inner: null };
  const at = c.indexOf(':');
  const kind = IDENTITY_KINDS.find((k) => k === c.slice(0, at));
  if (at < 0 || !kind || (only && kind !== only)) throw new DomainError('INVALID_INPUT', 'The cursor is not one this list gave; start again without it.', { field: 'cursor' });
  const inner = c.slice(at + 1);
  return { kind, inner: inner === '' ? null : inner };
}

const duplicates = query({
  name: 'campaigns.leads.duplicates',
  summary:
    "Leads that are one person, in groups, a page at a time: kind profile (same profile URL in any spelling) and email (same address in any case) are the same person; nameCompany (same name at the same company) is a possible duplicate. Without kind, profile groups come first, then email, then nameCompany; a pair with the same profile and email shows under both. certain says whether the key identifies the person. Merged leads never appear; merge with campaigns.leads.merge.",
  input: z.object({ kind: z.enum(IDENTITY_KINDS).optional(), limit: pageLimit, cursor }),
  output: z.object({
    groups: z.array(z.object({
      kind: z.enum(IDENTITY_KINDS),
      certain: z.boolean(),
      key: z.string(),
      leads: z.array(duplicateLead),
    })),
    nextCursor: z.string().nullable(),
  }),
  async handler(input, ctx) {
    const limit = input.limit ?? DEFAULT_GROUPS;
    let { kind, inner } = parseCursor(input.cursor, input.kind);
    const groups: { kind: IdentityKind; certain: boolean; key: string; leads: z.output<typeof duplicateLead>[] }[] = [];
    for (;;) {
      const page = await ctx.db.duplicateGroups(kind, { limit: limit - groups.length, cursor: inner });
      const leads = new Map((await ctx.db.getMany('leads', page.groups.flatMap((g) => g.leadIds))).map((l) => [l.id, l]));
      for (const g of page.groups) {
        // Oldest first: the lead that has been in the workspace longest is the likely survivor.
        const members = g.leadIds.flatMap((id) => {
          const l = leads.get(id);
          return l && !l.mergedIntoId ? [l] : [];
        }).sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : 1));
        if (members.length >= 2) groups.push({ kind, certain: kind !== 'nameCompany', key: g.key, leads: members.map(toDuplicateLead) });
      }
      inner = page.nextCursor;
      if (inner !== null) {
        if (groups.length >= limit) return { groups, nextCursor: `${kind}:${inner}` };
        continue;
      }
      const next = IDENTITY_KINDS[IDENTITY_KINDS.indexOf(kind) + 1];
      if (input.kind || !next) return { groups, nextCursor: null };
      kind = next;
      if (groups.length >= limit) return { groups, nextCursor: `${kind}:` };
    }
  },
});

export const ops = opsByName(duplicates);
