import { useState } from 'react';
import { bridge } from '../../bridge/index.ts';
import { ErrorText } from '../../components/ErrorText.tsx';
import { unwrap, useAction } from '../../lib/ops.ts';
import { useApp } from '../../state/app-store.ts';

export function ConnectionSection() {
  const session = useApp((s) => s.session);
  const connect = useAction();
  const close = useAction();
  const [url, setUrl] = useState(session?.state === 'open' ? (session.serverUrl ?? '') : '');
  const [apiKey, setApiKey] = useState('');
  if (session?.state !== 'open') return null;
  return (
    <section className="card-box" aria-labelledby="conn-title">
      <h2 id="conn-title">Workspace and connection</h2>
      <dl className="kv">
        <dt>Workspace</dt><dd>{session.workspaceName}</dd>
        <dt>Signed in as</dt><dd>{session.member.name} ({session.member.role})</dd>
        <dt>Kind</dt><dd>{session.kind === 'demo' ? 'Local demo workspace with the sandbox network (simulated people)' : 'Connected to a sync server'}</dd>
        {session.serverUrl && (<><dt>Sync server</dt><dd className="mono">{session.serverUrl}</dd></>)}
        <dt>Outreach runner</dt><dd>{session.runner === 'running' ? 'Sending for the senders hosted on this machine' : session.runner === 'stopped' ? 'Stopped' : 'Not available in this build'}</dd>
        <dt>Data folder</dt><dd className="mono">{session.dataDir}</dd>
      </dl>
      <form
        className="stack"
        onSubmit={(e) => {
          e.preventDefault();
          void connect.act(async () => {
            unwrap(await bridge.session.connect({ url, apiKey }));
            setApiKey('');
          });
        }}
      >
        <h3>{session.kind === 'connected' ? 'Connect with another key or server' : 'Connect to your team’s sync server'}</h3>
        <div className="controls">
          <label className="field">
            <span>Server address</span>
            <input className="input" value={url} onChange={(e) => setUrl(e.target.value)} placeholder="https://sync.example.com" required aria-label="Server address" />
          </label>
          <label className="field">
            <span>API key</span>
            <input className="input mono" type="password" value={apiKey} onChange={(e) => setApiKey(e.target.value)} placeholder="live_…" required autoComplete="off" aria-label="API key" />
          </label>
        </div>
        <div className="row">
          <button className="btn primary" type="submit" disabled={connect.busy}>{connect.busy ? 'Connecting…' : 'Connect'}</button>
          <span className="muted">The key is kept in your system's keychain (or a private file in the web version).</span>
        </div>
        <ErrorText error={connect.error} />
      </form>
      <div className="row">
        <button className="btn danger" disabled={close.busy} onClick={() => void close.act(async () => unwrap(await bridge.session.close()))}>Close this workspace</button>
        <span className="muted">Its data stays on this machine{session.kind === 'connected' ? '; the key is forgotten' : ''}.</span>
      </div>
      <ErrorText error={close.error} />
    </section>
  );
}
