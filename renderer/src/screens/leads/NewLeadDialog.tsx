/** A lead entered by hand: name, email, company, title, phone and profile URL, into a list. The
 * person is looked for first (same profile URL or email): an existing lead is opened, not doubled. */
import { useState } from 'react';
import { Dialog } from '../../components/Dialog.tsx';
import { ErrorText } from '../../components/ErrorText.tsx';
import { run, useAction, useOp } from '../../lib/ops.ts';
import { useApp } from '../../state/app-store.ts';

const FIELDS = [
  ['firstName', 'First name'], ['lastName', 'Last name'], ['email', 'Email'], ['company', 'Company'],
  ['jobTitle', 'Job title'], ['phone', 'Phone'], ['socialUrl', 'Profile URL'], ['location', 'Location'],
] as const;
type Field = (typeof FIELDS)[number][0];

export function NewLeadDialog({ onClose, defaultGroupId }: { onClose: () => void; defaultGroupId?: string }) {
  const groups = useOp('leadGroups.getAll', {});
  const toast = useApp((s) => s.toast);
  const openLead = useApp((s) => s.openLead);
  const [values, setValues] = useState<Record<Field, string>>({ firstName: '', lastName: '', email: '', company: '', jobTitle: '', phone: '', socialUrl: '', location: '' });
  const [groupId, setGroupId] = useState(defaultGroupId ?? '');
  const [existing, setExisting] = useState<string | null>(null);
  const action = useAction();
  const lists = groups.data?.leadGroups ?? [];
  const group = lists.find((g) => g.id === groupId) ?? lists[0];
  const name = [values.firstName, values.lastName].map((s) => s.trim()).filter(Boolean).join(' ') || values.email.trim();

  async function create() {
    if (!group) return;
    setExisting(null);
    const lead = Object.fromEntries(FIELDS.flatMap(([f]) => (values[f].trim() ? [[f, values[f].trim()]] : [])));
    await action.act(async () => {
      const out = await run('campaigns.leads.create', { leadGroupId: group.id, leads: [lead] });
      const problem = out.errors[0];
      if (problem) throw new Error(`${problem.message.charAt(0).toUpperCase()}${problem.message.slice(1)}.`);
      const id = out.leadIds[0];
      if (!id) throw new Error('The lead was not created.');
      if (out.duplicates > 0) {
        setExisting(id);
        return;
      }
      toast(`Created ${name}.`);
      onClose();
      openLead(id);
    });
  }

  return (
    <Dialog
      title="New lead"
      onClose={onClose}
      footer={
        <>
          <button className="btn" onClick={onClose}>Cancel</button>
          <button className="btn primary" type="submit" form="new-lead" disabled={action.busy || !group}>Create lead</button>
        </>
      }
    >
      <form id="new-lead" className="stack" onSubmit={(e) => { e.preventDefault(); void create(); }}>
        <div className="controls" style={{ display: 'grid', gridTemplateColumns: '1fr 1fr', gap: 8 }}>
          {FIELDS.map(([f, label]) => (
            <label key={f} className="field">
              <span>{label}</span>
              <input className="input" aria-label={label} value={values[f]} type={f === 'email' ? 'email' : 'text'} onChange={(e) => setValues({ ...values, [f]: e.target.value })} />
            </label>
          ))}
        </div>
        <label className="field">
          <span>Into list</span>
          <select aria-label="Lead list" value={group?.id ?? ''} onChange={(e) => setGroupId(e.target.value)}>
            {lists.map((g) => (
              <option key={g.id} value={g.id}>{g.name}</option>
            ))}
          </select>
        </label>
        <span className="muted">A lead needs a name, an email or a profile URL.</span>
        <ErrorText error={action.error ?? groups.error?.message} />
        {existing && (
          <div className="notice warn row">
            <span className="grow">This person is already in the CRM (same email or profile URL); nothing was created. It is now in "{group?.name}" too.</span>
            <button type="button" className="btn small" onClick={() => { onClose(); openLead(existing); }}>Open the lead</button>
          </div>
        )}
      </form>
    </Dialog>
  );
}
