/** The campaign and tag pickers that filter leads, shared by the Leads screen and the board. */
import { useCampaigns, useTags } from '../lib/workspace-data.ts';

export function CampaignFilter({ value, onChange }: { value: string; onChange: (campaignId: string) => void }) {
  const { campaigns } = useCampaigns();
  return (
    <select aria-label="Campaign" value={value} onChange={(e) => onChange(e.target.value)}>
      <option value="">All campaigns</option>
      {campaigns.map((c) => (
        <option key={c.id} value={c.id}>{c.name}</option>
      ))}
    </select>
  );
}

export function TagFilter({ value, onChange }: { value: string; onChange: (tagId: string) => void }) {
  const { tags } = useTags();
  return (
    <select aria-label="Tag" value={value} onChange={(e) => onChange(e.target.value)}>
      <option value="all">Any tag</option>
      <option value="uncategorized">Uncategorized (no tag)</option>
      {tags.map((t) => (
        <option key={t.id} value={t.id}>{t.name}</option>
      ))}
    </select>
  );
}
