/** Bulk enroll: pick the destination and policies, see the dry run's counts, then confirm. */
import { useState } from 'react';
import type { OpInput, OpOutput } from '../../../../shared/ops/index.ts';
import { Dialog } from '../../components/Dialog.tsx';
import { usePreviewedAction } from '../../lib/preview.ts';
import { ErrorText } from '../../components/ErrorText.tsx';
import { offerUndo, undoEnroll } from '../../lib/undo.ts';
import { useCampaigns } from '../../lib/workspace-data.ts';
import { useApp } from '../../state/app-store.ts';
import type { LeadFilters } from '../../state/app-store.ts';
import { bulkTarget } from './selection.ts';
import type { Selection } from './selection.ts';

type EnrollInput = OpInput<'campaigns.leads.bulkEnrollInCampaign'>;
type EnrollOutput = OpOutput<'campaigns.leads.bulkEnrollInCampaign'>;

const COUNT_LABELS: [keyof EnrollOutput, string][] = [
  ['enrolled', 'Will be enrolled'],
  ['alreadyEnrolled', 'Already in this campaign'],
  ['stoppedActive', 'Running elsewhere, stopped there'],
  ['completedActive', 'Running elsewhere, completed there'],
  ['skippedActive', 'Running elsewhere, skipped'],
  ['skippedDoNotContact', 'Skipped: do not contact'],
  ['skippedBlocklisted', 'Skipped: blocklisted'],
  ['skippedClosed', 'Skipped: Won or Lost'],
  ['skippedMissing', 'Skipped: no longer exist'],
  ['keptOwnerCount', 'Keep their sender'],
  ['reassignedCount', "Go to the campaign's senders"],
  ['linkedLeads', "Newly linked to the campaign's list"],
];

export function Counts({ result, labels }: { result: Record<string, unknown>; labels: [string, string][] }) {
  return (
    <div className="counts" data-testid="preview-counts">
      {labels.map(([k, label]) => (
        <div key={k} data-count={k}>
          <span>{label}</span>
          <strong>{Number(result[k] ?? 0).toLocaleString()}</strong>
        </div>
      ))}
    </div>
  );
}

export function EnrollDialog({ selection, filters, onClose, onDone }: { selection: Selection; filters: LeadFilters; onClose: () => void; onDone: () => void }) {
  const { campaigns } = useCampaigns();
  const toast = useApp((s) => s.toast);
  const [dest, setDest] = useState<string>('');
  const [newName, setNewName] = useState('');
  const [sender, setSender] = useState<'keep_where_possible' | 'keep' | 'unassign'>('keep_where_possible');
  const [policy, setPolicy] = useState<'stop' | 'skip' | 'complete'>('stop');
  // Won and Lost leads are closed deals: left out unless the user asks for them.
  const [includeClosed, setIncludeClosed] = useState(false);

  const destination: EnrollInput['destination'] | null =
    dest === '__new__' ? (newName.trim() ? { kind: 'new', name: newName.trim() } : null) : dest ? { kind: 'existing', campaignId: dest } : null;
  const input: EnrollInput | null = destination
    ? { ...bulkTarget(selection, filters), destination, sender, activeConflictPolicy: policy, excludeClosed: !includeClosed }
    : null;
  // Debounced: typing a new campaign's name should not preview on every keystroke.
  const { preview, previewError, busy, error, confirm: runForReal } = usePreviewedAction('campaigns.leads.bulkEnrollInCampaign', input, 150);

  async function confirm() {
    const r = await runForReal();
    if (!r) return;
    const name = campaigns.find((c) => c.id === r.campaignId)?.name ?? (newName.trim() || 'the campaign');
    const text = `Enrolled ${r.enrolled.toLocaleString()} lead${r.enrolled === 1 ? '' : 's'} in ${name}. The campaign was not started.`;
    if (r.enrolled > 0) offerUndo(text, () => undoEnroll(r, name));
    else toast(text);
    onDone();
    onClose();
  }

  return (
    <Dialog
      title="Enroll in a campaign"
      onClose={onClose}
      wide
      footer={
        <>
          <button className="btn" onClick={onClose}>Cancel</button>
          <button className="btn primary" disabled={!preview || busy || preview.enrolled === 0} onClick={() => void confirm()}>
            {busy ? 'Enrolling…' : preview ? `Enroll ${preview.enrolled.toLocaleString()} lead${preview.enrolled === 1 ? '' : 's'}` : 'Enroll'}
          </button>
        </>
      }
    >
      <div className="controls">
        <label className="field">
          <span>Campaign</span>
          <select value={dest} onChange={(e) => setDest(e.target.value)} aria-label="Destination campaign">
            <option value="">Choose a campaign…</option>
            {campaigns.map((c) => (
              <option key={c.id} value={c.id}>{c.name}</option>
            ))}
            <option value="__new__">New campaign…</option>
          </select>
        </label>
        {dest === '__new__' && (
          <label className="field">
            <span>New campaign name</span>
            <input className="input" value={newName} onChange={(e) => setNewName(e.target.value)} placeholder="Q3 founders" />
          </label>
        )}
        <label className="field">
          <span>Sender</span>
          <select value={sender} onChange={(e) => setSender(e.target.value as typeof sender)} aria-label="Sender policy">
            <option value="keep_where_possible">Keep each person's sender where it sends in this campaign</option>
            <option value="keep">Keep each person's sender (adds it to the campaign)</option>
            <option value="unassign">Let the campaign's senders pick them up</option>
          </select>
        </label>
        <label className="field">
          <span>Already running in another campaign</span>
          <select value={policy} onChange={(e) => setPolicy(e.target.value as typeof policy)} aria-label="Running elsewhere">
            <option value="stop">Stop it there</option>
            <option value="complete">Mark it completed there</option>
            <option value="skip">Skip these people</option>
          </select>
        </label>
      </div>
      <div className="notice">Enrolling never starts the campaign; people are messaged only once it runs.</div>
      <h3>Preview</h3>
      {!input && <p className="muted">Choose a campaign to see what would happen.</p>}
      {input && !preview && !previewError && <p className="muted">Counting…</p>}
      <ErrorText error={previewError} />
      {preview && preview.closedSelected > 0 && (
        <div className="notice" data-testid="closed-warning">
          {preview.closedSelected.toLocaleString()} selected lead{preview.closedSelected === 1 ? ' is' : 's are'} in a Won or Lost stage
          {includeClosed ? ' and will be enrolled.' : ' and will be left out.'}
          <label style={{ display: 'flex', gap: 6, alignItems: 'center', marginTop: 6 }}>
            <input type="checkbox" className="check" checked={includeClosed} onChange={(e) => setIncludeClosed(e.target.checked)} aria-label="Include Won/Lost leads" />
            <span>Include Won/Lost leads</span>
          </label>
        </div>
      )}
      {preview && <Counts result={preview} labels={COUNT_LABELS} />}
      {preview && preview.addedSenders.length > 0 && <p className="muted">{preview.addedSenders.length} sender(s) would join the campaign to keep their leads.</p>}
      <ErrorText error={error} />
    </Dialog>
  );
}
