import { useState } from 'react';
import { ErrorText } from '../../components/ErrorText.tsx';
import { run, useAction } from '../../lib/ops.ts';
import { useMembers } from '../../lib/workspace-data.ts';
import { useApp } from '../../state/app-store.ts';

export function MembersSection() {
  const { members, error } = useMembers();
  const role = useApp((s) => (s.session?.state === 'open' ? s.session.member.role : 'member'));
  const demo = useApp((s) => s.session?.state === 'open' && s.session.kind === 'demo');
  const add = useAction();
  const [form, setForm] = useState({ name: '', email: '', role: 'member' as 'member' | 'admin' | 'owner' });
  const [issued, setIssued] = useState<{ name: string; key: string } | null>(null);
  return (
    <section className="card-box" aria-labelledby="members-title">
      <h2 id="members-title">Members</h2>
      <ErrorText error={error?.message} />
      <table className="plain">
        <thead><tr><th>Name</th><th>Email</th><th>Role</th></tr></thead>
        <tbody>
          {members.map((m) => (
            <tr key={m.id}><td>{m.name}</td><td>{m.email}</td><td>{m.role}</td></tr>
          ))}
        </tbody>
      </table>
      {demo && <span className="muted">Members join through the team's sync server: this demo workspace is local to this machine.</span>}
      {role !== 'member' && !demo && (
        <form
          className="row wrap"
          onSubmit={(e) => {
            e.preventDefault();
            void add.act(async () => {
              const r = await run('members.create', form);
              setIssued({ name: form.name, key: r.apiKey });
              setForm({ name: '', email: '', role: 'member' });
            });
          }}
        >
          <input className="input" placeholder="Name" value={form.name} onChange={(e) => setForm({ ...form, name: e.target.value })} required aria-label="New member name" />
          <input className="input" placeholder="Email" type="email" value={form.email} onChange={(e) => setForm({ ...form, email: e.target.value })} required aria-label="New member email" />
          <select value={form.role} onChange={(e) => setForm({ ...form, role: e.target.value as typeof form.role })} aria-label="New member role">
            <option value="member">Member</option>
            <option value="admin">Admin</option>
            <option value="owner">Owner</option>
          </select>
          <button className="btn" type="submit" disabled={add.busy}>Add member</button>
        </form>
      )}
      <ErrorText error={add.error} />
      {issued && (
        <div className="notice ok">
          {issued.name}'s first API key (shown once, send it to them safely): <span className="mono">{issued.key}</span>
        </div>
      )}
    </section>
  );
}
