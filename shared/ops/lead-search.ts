/** The lead filter of "Search leads", as a Store condition, shared by search and by the bulk
 * operations that act on a filter selection (so both select exactly the same people). */
import { DomainError, notFound } from '../errors.ts';
import { STAGE_CATEGORIES } from '../model/index.ts';
import type { StageCategory } from '../model/index.ts';
import type { Lead } from '../model/index.ts';
import type { Cond, Sort, StoreReader } from '../store.ts';
import { identityOfSearch, KEY_FIELDS } from '../intake/identity.ts';
import { sortedCursor, storeCursor } from './params.ts';

export type LeadFilter = { campaignId?: string; tagId?: string; query?: string; pipelineStage?: string };

/** The lead fields the free-text query matches (spec: names, email, company, phone, profile URLs). */
export const LEAD_QUERY_FIELDS: readonly string[] = [
  'firstName',
  'lastName',
  'fullName',
  'email',
  'company',
  'phone',
  'socialUrl',
  'personalSocialUrl',
];

/** Columns the lead table can sort by (search and export). */
export const LEAD_SORT_FIELDS = ['createdAt', 'lastActivityAt', 'fullName', 'company', 'rankingScore', 'leadFitScore', 'followUpAt'] as const;

const isCategory = (s: string): s is StageCategory => (STAGE_CATEGORIES as readonly string[]).includes(s);

/** Matches no document: an empty `in` list. */
const NOTHING: Cond = { op: 'in', field: 'id', values: [] };

/** The stages a pipelineStage filter names, and whether unstaged leads count as matching. */
async function stageCond(db: StoreReader, raw: string): Promise<Cond> {
  const wanted = raw.trim();
  const { docs: stages } = await db.query('stages', {});
  const upper = wanted.toUpperCase();
  let matched = isCategory(upper) ? stages.filter((s) => s.category === upper) : null;
  let includeUnstaged = upper === 'NEW';
  if (matched === null || (matched.length === 0 && !includeUnstaged)) {
    const lower = wanted.toLowerCase();
    const byName = stages.filter((s) => s.name.toLowerCase() === lower);
    if (byName.length > 0) {
      matched = byName;
      // Unstaged leads sit in the first column of the board, so naming a NEW-category stage finds them too.
      includeUnstaged = byName.some((s) => s.category === 'NEW');
    } else if (matched === null) {
      const names = stages.map((s) => s.name).join(', ');
      throw new DomainError(
        'INVALID_INPUT',
        `pipelineStage: "${wanted}" is neither a stage category (${STAGE_CATEGORIES.join(', ')}) nor a stage name of this workspace (${names}).`,
        { field: 'pipelineStage', value: wanted },
      );
    }
  }
  const ids = matched.map((s) => s.id);
  const inStages: Cond = ids.length > 0 ? { op: 'in', field: 'pipelineStageId', values: ids } : NOTHING;
  return includeUnstaged ? { op: 'or', conds: [{ op: 'eq', field: 'pipelineStageId', value: null }, inStages] } : inStages;
}

/** Leads of their own, not merged into another (a missing mergedIntoId counts as null in every store). */
export const NOT_MERGED: Cond = { op: 'eq', field: 'mergedIntoId', value: null };

/** The Cond selecting the workspace's live leads that match the filter. Throws NOT_FOUND for an
 * unknown campaign or tag id, INVALID_INPUT for an unknown pipelineStage. */
export async function leadFilterCond(db: StoreReader, filter: LeadFilter): Promise<Cond> {
  // A lead merged into another is a tombstone: never listed, counted or exported.
  const conds: Cond[] = [NOT_MERGED];

  if (filter.campaignId !== undefined) {
    // A campaign's leads are the leads linked to its lead group, enrolled or not (API contract,
    // "Campaign leads and the runner"): created or imported there, or linked by bulk enrollment.
    const campaign = await db.get('campaigns', filter.campaignId);
    if (!campaign) throw notFound('Campaign', filter.campaignId);
    conds.push({ op: 'has', field: 'groupIds', value: campaign.leadGroupId });
  }

  const tagId = filter.tagId?.trim();
  if (tagId && tagId !== 'all') {
    if (tagId === 'uncategorized') conds.push({ op: 'eq', field: 'tagId', value: null });
    else {
      const tag = await db.get('tags', tagId);
      if (!tag) throw notFound('Tag', tagId);
      conds.push({ op: 'eq', field: 'tagId', value: tag.id });
    }
  }

  const query = filter.query?.trim();
  if (query) {
    const text: Cond = { op: 'contains', fields: LEAD_QUERY_FIELDS, value: query };
    // An email or a profile URL in any spelling also finds its person through the key, so a search
    // (and a bulk change of its selection) finds the lead however it was stored.
    const person = identityCond(query);
    conds.push(person ? { op: 'or', conds: [text, person] } : text);
  }

  if (filter.pipelineStage !== undefined && filter.pipelineStage.trim() !== '') {
    conds.push(await stageCond(db, filter.pipelineStage));
  }

  return { op: 'and', conds };
}

/** The condition selecting the lead a search text names by identity (an email or a profile URL in
 * any spelling: one probe of that key's index), or null for any other text. */
export function identityCond(query: string): Cond | null {
  const person = identityOfSearch(query);
  return person ? { op: 'eq', field: KEY_FIELDS[person.kind], value: person.key } : null;
}

/** Names and companies sort the way people read them (Adam, Émile, eric, Ève, Zed) on every store. */
const TEXT_SORTS: ReadonlySet<string> = new Set(['fullName', 'company']);

/** One page of the filtered leads in the asked order (newest first by default), the same for the
 * leads table (campaigns.leads.search) and its export, so an export lists the rows as shown. */
export async function leadPage(
  db: StoreReader,
  input: LeadFilter & { sortBy?: string; sortOrder?: 'asc' | 'desc'; cursor?: string | null },
  limit: number,
): Promise<{ docs: Lead[]; nextCursor: string | null }> {
  const where = await leadFilterCond(db, input);
  const sortBy = input.sortBy ?? 'createdAt';
  const dir = input.sortOrder ?? 'desc';
  const orderBy: Sort[] = [{ field: sortBy, dir, ...(TEXT_SORTS.has(sortBy) ? { collate: 'text' as const } : {}) }];
  const cursor = storeCursor(input.cursor, sortBy, dir);
  const person = input.query ? identityCond(input.query) : null;
  if (!person) {
    const page = await db.query('leads', { where, orderBy, limit, cursor });
    return { docs: page.docs, nextCursor: sortedCursor(sortBy, dir, page.nextCursor) };
  }
  // The person the text names comes first on the first page (one probe of its key, within the
  // other filters), then the other matches in the asked order, on every page without that person.
  const others: Cond = { op: 'and', conds: [where, { op: 'not', cond: person }] };
  const found = cursor ? [] : (await db.query('leads', { where: { op: 'and', conds: [where, person] }, orderBy, limit: Math.max(limit - 1, 0) })).docs;
  const page = limit - found.length > 0 ? await db.query('leads', { where: others, orderBy, limit: limit - found.length, cursor }) : { docs: [], nextCursor: null };
  return { docs: [...found, ...page.docs], nextCursor: sortedCursor(sortBy, dir, page.nextCursor) };
}
