/** Creates a paused campaign, on a new lead list or an existing one (whose columns become its merge
 * fields). */
import { useState } from 'react';
import { Dialog } from '../../components/Dialog.tsx';
import { ErrorText } from '../../components/ErrorText.tsx';
import { run, useAction, useOp } from '../../lib/ops.ts';

export function NewCampaignDialog({ onClose, onCreated }: { onClose: () => void; onCreated: (id: string) => void }) {
  const [name, setName] = useState('');
  const [group, setGroup] = useState('');
  const groups = useOp('leadGroups.getAll', {});
  const action = useAction();

  async function create() {
    const c = await action.act(() => run('campaigns.create', { name, ...(group ? { leadGroupId: group } : {}) }));
    if (c) onCreated(c.id);
  }

  return (
    <Dialog
      title="New campaign"
      onClose={onClose}
      footer={
        <>
          <button className="btn" onClick={onClose}>Cancel</button>
          <button className="btn primary" disabled={action.busy || !name.trim()} onClick={() => void create()}>{action.busy ? 'Creating…' : 'Create campaign'}</button>
        </>
      }
    >
      <form className="stack" onSubmit={(e) => { e.preventDefault(); void create(); }}>
        <label className="field">
          <span>Name</span>
          <input className="input" value={name} onChange={(e) => setName(e.target.value)} placeholder="Q1 founders in Berlin" aria-label="Campaign name" />
        </label>
        <label className="field">
          <span>Lead list</span>
          <select value={group} onChange={(e) => setGroup(e.target.value)} aria-label="Lead list">
            <option value="">A new list with the built-in columns</option>
            {(groups.data?.leadGroups ?? []).map((g) => (
              <option key={g.id} value={g.id}>{g.name} ({g.columns.length} columns)</option>
            ))}
          </select>
          <span className="faint">The list's columns are the merge fields the campaign's messages can use.</span>
        </label>
        <ErrorText error={groups.error?.message} />
        <ErrorText error={action.error} />
        <div className="notice">A new campaign starts paused, without senders or steps. Nothing is sent until you start it.</div>
      </form>
    </Dialog>
  );
}
