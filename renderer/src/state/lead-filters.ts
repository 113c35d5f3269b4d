/** The leads table's filters and their defaults, apart from the app's store (app-store.ts, which
 * reads the window's URL when loaded) so that the web host can read the first page the window will
 * show in the same default order (electron/first-screen-html.ts). */

export type SortBy = 'createdAt' | 'lastActivityAt' | 'fullName' | 'company' | 'rankingScore' | 'leadFitScore' | 'followUpAt';

export type LeadFilters = {
  query: string;
  campaignId: string;
  /** all, uncategorized, or a tag id. */
  tagId: string;
  /** '' for any stage, else a stage name or category. */
  pipelineStage: string;
  sortBy: SortBy;
  sortOrder: 'asc' | 'desc';
};

export const DEFAULT_FILTERS: LeadFilters = { query: '', campaignId: '', tagId: 'all', pipelineStage: '', sortBy: 'createdAt', sortOrder: 'desc' };
