/** One campaign: its running state and readiness, results and the runner's activity, the sequence,
 * the sending schedule, its senders and how it picks leads. */
import { useState } from 'react';
import { ErrorText } from '../../components/ErrorText.tsx';
import { useOp } from '../../lib/ops.ts';
import { useApp } from '../../state/app-store.ts';
import { CampaignSenders } from './CampaignSenders.tsx';
import { DuplicateCampaignDialog } from './DuplicateCampaignDialog.tsx';
import { MessagePreview } from './MessagePreview.tsx';
import { RunPill } from './CampaignList.tsx';
import { LeadPicking } from './LeadPicking.tsx';
import { Overview } from './Overview.tsx';
import { RunControls } from './RunControls.tsx';
import { ScheduleEditor } from './ScheduleEditor.tsx';
import { SequenceEditor } from './SequenceEditor.tsx';

type Tab = 'overview' | 'sequence' | 'preview' | 'schedule' | 'senders' | 'picking';
const TABS: { id: Tab; label: string }[] = [
  { id: 'overview', label: 'Results & activity' },
  { id: 'sequence', label: 'Sequence' },
  { id: 'preview', label: 'Preview' },
  { id: 'schedule', label: 'Schedule' },
  { id: 'senders', label: 'Senders' },
  { id: 'picking', label: 'Lead picking' },
];

export function CampaignPage({ campaignId }: { campaignId: string }) {
  const openCampaign = useApp((s) => s.openCampaign);
  const [tab, setTab] = useState<Tab>('overview');
  const [duplicating, setDuplicating] = useState(false);
  const campaign = useOp('campaigns.get', { campaignId });
  const c = campaign.data;
  return (
    <>
      <div className="screen-header campaign-header">
        <button className="btn ghost small" onClick={() => openCampaign(null)} aria-label="Back to all campaigns">← Campaigns</button>
        <h1 data-testid="campaign-name" title={c?.name}>{c?.name ?? (campaign.loading ? 'Loading…' : 'Campaign')}</h1>
        {c && <RunPill running={c.running} />}
        <div className="grow" />
        {c && <button className="btn" onClick={() => setDuplicating(true)} data-testid="duplicate-campaign" title="A paused copy with the same sequence, schedule and senders">Duplicate…</button>}
        {c && <RunControls campaignId={campaignId} running={c.running} name={c.name} />}
        {c && duplicating && <DuplicateCampaignDialog campaignId={campaignId} name={c.name} onClose={() => setDuplicating(false)} />}
      </div>
      <div className="tabs" role="tablist" aria-label="Campaign sections">
        {TABS.map((t) => (
          <button key={t.id} role="tab" aria-selected={tab === t.id} onClick={() => setTab(t.id)}>{t.label}</button>
        ))}
      </div>
      <div className="screen-body">
        <ErrorText error={campaign.error?.message} />
        {c && tab === 'overview' && <Overview campaignId={campaignId} />}
        {c && tab === 'sequence' && <SequenceEditor campaignId={campaignId} />}
        {c && tab === 'preview' && <MessagePreview campaignId={campaignId} />}
        {c && tab === 'schedule' && <ScheduleEditor campaignId={campaignId} schedule={c.schedule} running={c.running} />}
        {c && tab === 'senders' && <CampaignSenders campaignId={campaignId} />}
        {c && tab === 'picking' && <LeadPicking campaignId={campaignId} settings={c.settings} />}
      </div>
    </>
  );
}
