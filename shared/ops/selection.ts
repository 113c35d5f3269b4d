/** The `scope` and `selection` of the bulk lead operations, and resolving them to the leads they
 * name. A filter selection uses the same condition as lead search, so "select all results" acts on
 * exactly the people the user saw. */
import { z } from 'zod';
import { notFound } from '../errors.ts';
import type { Lead } from '../model/index.ts';
import type { Cond, StoreReader } from '../store.ts';
import { leadFilterCond } from './lead-search.ts';
import { uuid } from './params.ts';

/** Explicit id lists are bounded; a larger set is selected with a filter. */
export const MAX_SELECTED_IDS = 10_000;
/** Leads read per query when a filter selection is resolved. */
export const SELECTION_PAGE = 1_000;

export const campaignScope = z.object({ kind: z.literal('campaign'), campaignId: uuid });
export const scopeSchema = z.discriminatedUnion('kind', [campaignScope, z.object({ kind: z.literal('workspace') })]);
export type Scope = z.output<typeof scopeSchema>;

export const selectionSchema = z.discriminatedUnion('mode', [
  z.object({ mode: z.literal('ids'), leadIds: z.array(uuid).max(MAX_SELECTED_IDS) }),
  z.object({
    mode: z.literal('filter'),
    tagId: z.string().trim().min(1).max(100).optional(),
    query: z.string().max(500).optional(),
    pipelineStage: z.string().max(100).optional(),
    excludeLeadIds: z.array(uuid).max(MAX_SELECTED_IDS).optional(),
  }),
]);
export type Selection = z.output<typeof selectionSchema>;

export type Resolved = {
  /** The live leads selected, in selection order (ids order, or search order for a filter), once each. */
  leads: Lead[];
  /** Ids that were asked for explicitly but are not leads of this workspace (deleted, foreign or unknown). */
  missingIds: string[];
};

/** Resolves a selection within a scope. Explicit ids are taken as given (the scope is where the
 * user picked them); a filter is applied within the scope: a campaign scope means that campaign's
 * leads. Throws NOT_FOUND for an unknown scope campaign or tag, INVALID_INPUT for an unknown stage. */
export async function resolveSelection(db: StoreReader, scope: Scope, selection: Selection): Promise<Resolved> {
  if (selection.mode === 'ids') {
    if (scope.kind === 'campaign' && !(await db.get('campaigns', scope.campaignId))) throw notFound('Campaign', scope.campaignId);
    const ids = [...new Set(selection.leadIds)];
    // A lead merged into another counts as missing: the survivor is the one to act on.
    const found = (await db.getMany('leads', ids)).filter((l) => l.mergedIntoId == null);
    const byId = new Map(found.map((l) => [l.id, l]));
    const leads: Lead[] = [];
    const missingIds: string[] = [];
    for (const id of ids) {
      const lead = byId.get(id);
      if (lead) leads.push(lead);
      else missingIds.push(id);
    }
    return { leads, missingIds };
  }
  const cond: Cond = await leadFilterCond(db, {
    campaignId: scope.kind === 'campaign' ? scope.campaignId : undefined,
    tagId: selection.tagId,
    query: selection.query,
    pipelineStage: selection.pipelineStage,
  });
  const excluded = new Set(selection.excludeLeadIds ?? []);
  // Read in pages: no single query loads every matching lead of a large workspace at once.
  const leads: Lead[] = [];
  let cursor: string | null = null;
  do {
    const page: { docs: Lead[]; nextCursor: string | null } = await db.query('leads', { where: cond, orderBy: [{ field: 'createdAt', dir: 'desc' }], limit: SELECTION_PAGE, cursor });
    for (const l of page.docs) if (!excluded.has(l.id)) leads.push(l);
    cursor = page.nextCursor;
  } while (cursor !== null);
  return { leads, missingIds: [] };
}
