/** Bulk sender change inside a campaign: the leads one sender holds (or every running lead) move to
 * another of the campaign's senders. A dry run previews the counts before anything changes. */
import { useState } from 'react';
import { Dialog } from '../../components/Dialog.tsx';
import { usePreviewedAction } from '../../lib/preview.ts';
import { ErrorText } from '../../components/ErrorText.tsx';
import { useOp } from '../../lib/ops.ts';
import { useApp } from '../../state/app-store.ts';
import { MoveFooter, movedText } from '../leads/ChangeSenderDialog.tsx';
import { Counts } from '../leads/EnrollDialog.tsx';


export function MoveLeadsDialog({ campaignId, from: initialFrom, onClose }: { campaignId: string; from: string | null; onClose: () => void }) {
  const toast = useApp((s) => s.toast);
  const [from, setFrom] = useState<string>(initialFrom ?? '');
  const [target, setTarget] = useState('');
  const [mode, setMode] = useState<'keep_position' | 'restart'>('keep_position');
  const senders = useOp('campaigns.listSenders', { campaignId });
  const held = useOp('campaigns.getEnrollments', { campaignId, ...(from ? { sdrProfileId: from } : {}), limit: 200 });
  const holders = held.data?.senders ?? [];
  const leadIds = [...new Set((held.data?.enrollments ?? []).filter((e) => e.status === 'IN_PROGRESS').map((e) => e.leadId))];
  const input = target && held.data ? { scope: { kind: 'campaign' as const, campaignId }, selection: { mode: 'ids' as const, leadIds }, targetSdrProfileId: target, mode } : null;
  const { preview, previewError, busy, error, confirm: runForReal } = usePreviewedAction('campaigns.leads.bulkChangeSender', input);

  async function confirm() {
    const r = await runForReal();
    if (!r) return;
    toast(movedText(r.changedCount));
    onClose();
  }

  return (
    <Dialog
      title="Move leads to another sender"
      onClose={onClose}
      footer={<MoveFooter preview={preview} busy={busy} onCancel={onClose} onConfirm={() => void confirm()} />}
    >
      <div className="controls">
        <label className="field">
          <span>Leads held by</span>
          <select value={from} onChange={(e) => setFrom(e.target.value)} aria-label="Move leads from">
            <option value="">Any sender (every running lead)</option>
            {holders.map((s) => (
              <option key={s.sdrProfileId} value={s.sdrProfileId}>{s.name}{s.onCampaign ? '' : ' (removed)'} — {s.active} lead{s.active === 1 ? '' : 's'}</option>
            ))}
            <option value="unassigned">Unassigned leads</option>
          </select>
        </label>
        <label className="field">
          <span>Move to</span>
          <select value={target} onChange={(e) => setTarget(e.target.value)} aria-label="Move leads to">
            <option value="">Choose a sender…</option>
            {(senders.data?.senders ?? []).filter((s) => s.sdrProfileId !== from).map((s) => (
              <option key={s.sdrProfileId} value={s.sdrProfileId}>{s.name}{s.paused ? ' (paused here)' : ''}</option>
            ))}
          </select>
        </label>
        <label className="field">
          <span>Place in the sequence</span>
          <select value={mode} onChange={(e) => setMode(e.target.value as typeof mode)} aria-label="Sequence position">
            <option value="keep_position">Keep their place (only the account changes)</option>
            <option value="restart">Start again from the first step</option>
          </select>
        </label>
      </div>
      <p className="faint">A conversation stays with the account it started on: the new sender starts without one, so steps that need a connection are judged afresh.</p>
      <ErrorText error={held.error?.message} />
      {held.data && <p className="muted">{leadIds.length.toLocaleString()} running lead{leadIds.length === 1 ? '' : 's'} selected.</p>}
      {held.data && held.data.total > held.data.enrollments.length && (
        <div className="notice warn">
          {held.data.total.toLocaleString()} leads match; one change moves at most {held.data.enrollments.length.toLocaleString()}. Run it again for the rest.
        </div>
      )}
      <h3>Preview</h3>
      {!input && <p className="muted">Choose the sender to move them to.</p>}
      {input && !preview && !previewError && <p className="muted">Counting…</p>}
      <ErrorText error={previewError} />
      {preview && (
        <Counts
          result={{ changedCount: preview.changedCount, ...preview.skipped }}
          labels={[['changedCount', 'Will move'], ['alreadyAssigned', 'Already with this sender'], ['paused', 'Paused'], ['completed', 'Finished'], ['notEnrolled', 'Not in this campaign']]}
        />
      )}
      <ErrorText error={error} />
    </Dialog>
  );
}
