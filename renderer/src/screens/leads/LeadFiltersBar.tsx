/** The search of the specification as controls: campaign, tag (incl. uncategorized), pipeline stage. */
import { useCampaigns, useStages, useTags } from '../../lib/workspace-data.ts';
import { DEFAULT_FILTERS, useApp } from '../../state/app-store.ts';

export function LeadFiltersBar() {
  const filters = useApp((s) => s.filters);
  const setFilters = useApp((s) => s.setFilters);
  const { campaigns } = useCampaigns();
  const { tags } = useTags();
  const { stages } = useStages();
  const active = filters.query || filters.campaignId || filters.tagId !== 'all' || filters.pipelineStage;
  return (
    <div className="toolbar" role="search" aria-label="Lead filters">
      <select aria-label="Campaign" value={filters.campaignId} onChange={(e) => setFilters({ campaignId: e.target.value })}>
        <option value="">All campaigns</option>
        {campaigns.map((c) => (
          <option key={c.id} value={c.id}>{c.name}</option>
        ))}
      </select>
      <select aria-label="Tag" value={filters.tagId} onChange={(e) => setFilters({ tagId: e.target.value })}>
        <option value="all">Any tag</option>
        <option value="uncategorized">Uncategorized (no tag)</option>
        {tags.map((t) => (
          <option key={t.id} value={t.id}>{t.name}</option>
        ))}
      </select>
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
