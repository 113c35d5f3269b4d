/** The search of the specification as controls: campaign, tag (incl. uncategorized), pipeline stage. */
import { CampaignFilter, TagFilter } from '../../components/FilterSelects.tsx';
import { useStages } from '../../lib/workspace-data.ts';
import { DEFAULT_FILTERS, useApp } from '../../state/app-store.ts';

export function LeadFiltersBar() {
  const filters = useApp((s) => s.filters);
  const setFilters = useApp((s) => s.setFilters);
  const { stages } = useStages();
  const active = filters.query || filters.campaignId || filters.tagId !== 'all' || filters.pipelineStage;
  return (
    <div className="toolbar" role="search" aria-label="Lead filters">
      <CampaignFilter value={filters.campaignId} onChange={(campaignId) => setFilters({ campaignId })} />
      <TagFilter value={filters.tagId} onChange={(tagId) => setFilters({ tagId })} />
      <select aria-label="Pipeline stage" value={filters.pipelineStage} onChange={(e) => setFilters({ pipelineStage: e.target.value })}>
        <option value="">Any stage</option>
        {stages.map((s) => (
          <option key={s.id} value={s.name}>{s.name}</option>
        ))}
      </select>
      {filters.query && (
        <span className="pill">
          “{filters.query}”
          <button className="btn ghost small" aria-label="Clear search" onClick={() => setFilters({ query: '' })}>✕</button>
        </span>
      )}
      {active && (
        <button className="btn ghost small" onClick={() => setFilters({ ...DEFAULT_FILTERS, sortBy: filters.sortBy, sortOrder: filters.sortOrder })}>
          Clear filters
        </button>
      )}
    </div>
  );
}
