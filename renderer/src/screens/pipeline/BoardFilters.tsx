/** The filters the board applies, named and clearable: the board shares the Leads screen's campaign,
 * tag and search filters, so it must never narrow its columns without saying so. */
import { CampaignFilter, TagFilter } from '../../components/FilterSelects.tsx';
import { useCampaigns, useTags } from '../../lib/workspace-data.ts';
import { useApp } from '../../state/app-store.ts';

export function BoardFilters() {
  const filters = useApp((s) => s.filters);
  const setFilters = useApp((s) => s.setFilters);
  const { campaigns, loaded } = useCampaigns();
  const { byId: tagsById } = useTags();
  const campaign = campaigns.find((c) => c.id === filters.campaignId);
  const tagName = filters.tagId === 'uncategorized' ? 'No tag' : tagsById.get(filters.tagId)?.name;
  const applied = [
    filters.campaignId && { key: 'campaign', label: `Campaign: ${campaign?.name ?? (loaded ? 'a campaign that no longer exists' : '…')}`, clear: () => setFilters({ campaignId: '' }) },
    filters.tagId !== 'all' && { key: 'tag', label: `Tag: ${tagName ?? 'unknown tag'}`, clear: () => setFilters({ tagId: 'all' }) },
    filters.query && { key: 'query', label: `Search: “${filters.query}”`, clear: () => setFilters({ query: '' }) },
  ].filter((f): f is { key: string; label: string; clear: () => void } => Boolean(f));
  return (
    <div className="toolbar board-filters" role="search" aria-label="Board filters">
      <CampaignFilter value={filters.campaignId} onChange={(campaignId) => setFilters({ campaignId })} />
      <TagFilter value={filters.tagId} onChange={(tagId) => setFilters({ tagId })} />
      {applied.length === 0 ? (
        <span className="faint" data-testid="board-filter-summary">Showing every lead</span>
      ) : (
        <span className="applied-filters" data-testid="board-filter-summary">
          Filtered by
          {applied.map((f) => (
            <span key={f.key} className="pill" data-testid={`board-filter-${f.key}`}>
              {f.label}
              <button className="btn ghost small" aria-label={`Remove filter ${f.label}`} onClick={f.clear}>✕</button>
            </span>
          ))}
          <button className="btn ghost small" onClick={() => setFilters({ campaignId: '', tagId: 'all', query: '' })}>Clear filters</button>
        </span>
      )}
    </div>
  );
}
