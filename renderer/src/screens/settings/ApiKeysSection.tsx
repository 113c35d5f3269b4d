import { useEffect, useState } from 'react';
import type { OpOutput } from '../../../../shared/ops/index.ts';
import { ErrorText } from '../../components/ErrorText.tsx';
import { shortDate } from '../../lib/format.ts';
import { errorText, run, useAction } from '../../lib/ops.ts';
import { useMembers } from '../../lib/workspace-data.ts';
import { useApp } from '../../state/app-store.ts';

export function ApiKeysSection() {
  const { byId: members } = useMembers();
  const ownPrefix = useApp((s) => (s.session?.state === 'open' ? s.session.apiKeyPrefix : null));
  const create = useAction();
  const revoke = useAction();
  const [name, setName] = useState('');
  const [issued, setIssued] = useState<string | null>(null);
  const [revision, setRevision] = useState(0);
  const [data, setData] = useState<OpOutput<'apiKeys.list'>['keys']>([]);
  const [error, setError] = useState<string | null>(null);
  // Keys live on the server, not in the local database: they are fetched, not subscribed to.
  useEffect(() => {
    let stale = false;
    run('apiKeys.list', {}).then(
      (r) => {
        if (stale) return;
        setData(r.keys);
        setError(null);
      },
      (e: unknown) => !stale && setError(errorText(e)),
    );
    return () => {
      stale = true;
    };
  }, [revision]);
  return (
    <section className="card-box" aria-labelledby="keys-title">
      <h2 id="keys-title">API keys</h2>
      <p className="muted" style={{ margin: 0 }}>Keys let scripts and integrations call the same operations over HTTP, acting as you. They are issued by the sync server.</p>
      <ErrorText error={error} />
      {data.length > 0 && (
        <table className="plain">
          <thead><tr><th>Name</th><th>Key</th><th>Member</th><th>Created</th><th>Last used</th><th /></tr></thead>
          <tbody>
            {data.map((k) => (
              <tr key={k.id}>
                <td>{k.name}</td>
                <td className="mono">{k.prefix}…{k.prefix === ownPrefix && <span className="pill" style={{ marginLeft: 6 }}>this desktop</span>}</td>
                <td>{members.get(k.memberId)?.name ?? ''}</td>
                <td>{shortDate(k.createdAt)}</td>
                <td>{k.lastUsedAt ? shortDate(k.lastUsedAt) : 'never'}</td>
                <td><button className="btn small danger" disabled={revoke.busy} onClick={() => {
                  if (k.prefix === ownPrefix && !confirm('This desktop syncs with this key. Revoking it disconnects this desktop from the server until you connect with another key. Revoke it?')) return;
                  void revoke.act(async () => {
                    await run('apiKeys.revoke', { id: k.id });
                    setRevision(revision + 1);
                  });
                }}>Revoke</button></td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <ErrorText error={revoke.error} />
      <form
        className="row"
        onSubmit={(e) => {
          e.preventDefault();
          void create.act(async () => {
            const r = await run('apiKeys.create', { name });
            setIssued(r.key);
            setName('');
            setRevision(revision + 1);
          });
        }}
      >
        <input className="input" placeholder="What the key is for, e.g. Zapier" value={name} onChange={(e) => setName(e.target.value)} required aria-label="New key name" />
        <button className="btn" type="submit" disabled={create.busy}>Create key</button>
      </form>
      <ErrorText error={create.error} />
      {issued && <div className="notice ok">New key (shown once, copy it now): <span className="mono">{issued}</span></div>}
    </section>
  );
}
