/** The inputs of the workspace-wide read operations the first screen shows (workspace-data.ts), in
 * one place: the page's entry asks for the same ones before React loads (first-rows.ts), and a live
 * subscription is shared only by equal inputs. */
import type { OpInput } from '../../../shared/ops/index.ts';
import type { LeadFilters } from '../state/app-store.ts';
import { searchInput } from '../screens/leads/selection.ts';

export const STAGES_INPUT: OpInput<'pipelineStages.getAll'> = {};
export const TAGS_INPUT: OpInput<'tags.getAll'> = {};
/** The leads table's page size (lead-pager.ts): its first page is what the first paint shows. */
export const LEAD_PAGE_SIZE = 100;
export const CAMPAIGNS_INPUT: OpInput<'campaigns.getBasic'> = { pageSize: 200, sortBy: 'name', sortOrder: 'asc' };

/** The leads screen's count of the leads its filters match. */
export function leadCountInput(filters: LeadFilters): OpInput<'campaigns.leads.count'> {
  const { query, campaignId, tagId, pipelineStage } = searchInput(filters);
  return { query, campaignId, tagId, pipelineStage };
}
