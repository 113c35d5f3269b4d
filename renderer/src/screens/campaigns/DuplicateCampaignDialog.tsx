/** Duplicates a campaign (campaigns.duplicate): the copy is paused, with the same sequence, schedule,
 * lead-picking settings and senders; it shares the lead list unless a new empty list is asked for. */
import { useState } from 'react';
import { Dialog } from '../../components/Dialog.tsx';
import { ErrorText } from '../../components/ErrorText.tsx';
import { run, useAction } from '../../lib/ops.ts';
import { useApp } from '../../state/app-store.ts';

export function DuplicateCampaignDialog({ campaignId, name, onClose }: { campaignId: string; name: string; onClose: () => void }) {
  const openCampaign = useApp((s) => s.openCampaign);
  const toast = useApp((s) => s.toast);
  const [copyName, setCopyName] = useState(`${name.slice(0, 193).trimEnd()} (copy)`);
  const [newList, setNewList] = useState(false);
  const action = useAction();

  async function duplicate() {
    const c = await action.act(() => run('campaigns.duplicate', { campaignId, name: copyName, newLeadGroup: newList }));
    if (!c) return;
    toast(`Created ${c.name}, paused. Nothing is sent until you start it.`);
    onClose();
    openCampaign(c.id);
  }

  return (
    <Dialog
      title="Duplicate campaign"
      onClose={onClose}
      footer={
        <>
          <button className="btn" onClick={onClose}>Cancel</button>
          <button className="btn primary" disabled={action.busy || !copyName.trim()} onClick={() => void duplicate()} data-testid="duplicate-confirm">
            {action.busy ? 'Duplicating…' : 'Duplicate'}
          </button>
        </>
      }
    >
      <form className="stack" onSubmit={(e) => { e.preventDefault(); void duplicate(); }}>
        <label className="field">
          <span>Name of the copy</span>
          <input className="input" value={copyName} maxLength={200} onChange={(e) => setCopyName(e.target.value)} aria-label="Name of the copy" />
        </label>
        <fieldset className="stack">
          <legend>Leads</legend>
          <label className="row">
            <input type="radio" name="dup-leads" checked={!newList} onChange={() => setNewList(false)} />
            <span>Same lead list: the copy reaches the list's leads that no other campaign is running for.</span>
          </label>
          <label className="row">
            <input type="radio" name="dup-leads" checked={newList} onChange={() => setNewList(true)} />
            <span>A new, empty lead list with the same columns (merge fields).</span>
          </label>
        </fieldset>
        <div className="notice">The copy gets the same steps and message variants, schedule, lead picking and senders. It starts paused; results and enrollments are not copied.</div>
        <ErrorText error={action.error} />
      </form>
    </Dialog>
  );
}
