/** Bulk change of sender within one campaign, with a dry-run preview of what changes. */
import { useState } from 'react';
import type { OpInput } from '../../../../shared/ops/index.ts';
import { Dialog } from '../../components/Dialog.tsx';
import { usePreviewedAction } from '../../lib/preview.ts';
import { ErrorText } from '../../components/ErrorText.tsx';
import { useOp } from '../../lib/ops.ts';
import { offerUndo, undoSenderChange } from '../../lib/undo.ts';
import { useCampaigns } from '../../lib/workspace-data.ts';
import { useApp } from '../../state/app-store.ts';
import type { LeadFilters } from '../../state/app-store.ts';
import { Counts } from './EnrollDialog.tsx';
import { bulkTarget } from './selection.ts';
import type { Selection } from './selection.ts';

type ChangeInput = OpInput<'campaigns.leads.bulkChangeSender'>;

export function ChangeSenderDialog({ selection, filters, onClose, onDone }: { selection: Selection; filters: LeadFilters; onClose: () => void; onDone: () => void }) {
  const { campaigns } = useCampaigns();
  const toast = useApp((s) => s.toast);
  const [campaignId, setCampaignId] = useState(filters.campaignId);
  const [target, setTarget] = useState('');
  const [mode, setMode] = useState<'keep_position' | 'restart'>('keep_position');
  const senders = useOp('campaigns.listSenders', campaignId ? { campaignId } : null);

  // A filter selection means "these filters within the campaign"; without a campaign filter on
  // screen that would act on people the user did not see, so ask them to filter first.
  const filterWithoutCampaign = selection.mode === 'all' && !filters.campaignId;
  const { selection: sel } = bulkTarget(selection, { ...filters, campaignId });
  const input: ChangeInput | null = campaignId && target && !filterWithoutCampaign ? { scope: { kind: 'campaign', campaignId }, selection: sel, targetSdrProfileId: target, mode } : null;
  const { preview, previewError, busy, error, confirm: runForReal } = usePreviewedAction('campaigns.leads.bulkChangeSender', input);

  async function confirm() {
    const r = await runForReal();
    if (!r) return;
    if (r.changedCount > 0) offerUndo(movedText(r.changedCount), () => undoSenderChange(r.campaignId, r.moved, mode === 'restart'));
    else toast(movedText(r.changedCount));
    onDone();
    onClose();
  }

  return (
    <Dialog
      title="Change sender"
      onClose={onClose}
      footer={<MoveFooter preview={preview} busy={busy} onCancel={onClose} onConfirm={() => void confirm()} />}
    >
      {filterWithoutCampaign && <div className="notice warn">Filter the list by a campaign first: a sender change acts on one campaign's leads.</div>}
      <div className="controls">
        <label className="field">
          <span>In campaign</span>
          <select value={campaignId} onChange={(e) => { setCampaignId(e.target.value); setTarget(''); }} disabled={Boolean(filters.campaignId)} aria-label="Campaign">
            <option value="">Choose a campaign…</option>
            {campaigns.map((c) => (
              <option key={c.id} value={c.id}>{c.name}</option>
            ))}
          </select>
        </label>
        <label className="field">
          <span>New sender</span>
          <select value={target} onChange={(e) => setTarget(e.target.value)} disabled={!campaignId} aria-label="New sender">
            <option value="">Choose a sender…</option>
            {(senders.data?.senders ?? []).map((s) => (
              <option key={s.sdrProfileId} value={s.sdrProfileId}>{s.name}{s.paused ? ' (paused here)' : ''}</option>
            ))}
          </select>
        </label>
        <label className="field">
          <span>Sequence position</span>
          <select value={mode} onChange={(e) => setMode(e.target.value as typeof mode)} aria-label="Sequence position">
            <option value="keep_position">Keep their place in the sequence</option>
            <option value="restart">Start again from the first step</option>
          </select>
        </label>
      </div>
      <ErrorText error={senders.error?.message} />
      <ErrorText error={previewError} />
      {preview && (
        <Counts
          result={{ changedCount: preview.changedCount, ...preview.skipped }}
          labels={[['changedCount', 'Will move'], ['notEnrolled', 'Not in this campaign'], ['completed', 'Finished the sequence'], ['paused', 'Paused'], ['alreadyAssigned', 'Already with this sender']]}
        />
      )}
      <ErrorText error={error} />
    </Dialog>
  );
}

const leads = (n: number): string => `${n.toLocaleString()} lead${n === 1 ? '' : 's'}`;

/** The toast after a bulk sender change. */
export const movedText = (changed: number): string => `Moved ${leads(changed)} to the new sender.`;

/** Cancel, and a Move button that names how many leads the previewed change moves. */
export function MoveFooter({ preview, busy, onCancel, onConfirm }: { preview: { changedCount: number } | null; busy: boolean; onCancel: () => void; onConfirm: () => void }) {
  return (
    <>
      <button className="btn" onClick={onCancel}>Cancel</button>
      <button className="btn primary" disabled={!preview || busy || preview.changedCount === 0} onClick={onConfirm}>
        {busy ? 'Moving…' : preview ? `Move ${leads(preview.changedCount)}` : 'Move'}
      </button>
    </>
  );
}
