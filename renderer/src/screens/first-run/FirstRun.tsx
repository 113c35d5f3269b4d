/** First run: open a local demo workspace, or connect to the team's sync server. */
import { useState } from 'react';
import { bridge } from '../../bridge/index.ts';
import { ErrorText } from '../../components/ErrorText.tsx';
import { unwrap, useAction } from '../../lib/ops.ts';

export function FirstRun({ dataDir }: { dataDir: string }) {
  const demo = useAction();
  const connect = useAction();
  const [url, setUrl] = useState('');
  const [apiKey, setApiKey] = useState('');
  return (
    <div className="first-run">
      <div className="box">
        <div>
          <h1 style={{ fontSize: 24 }}>Welcome to Outreach CRM</h1>
          <p className="muted">Your leads, pipeline and outreach, on your machine and working offline. Choose how to start.</p>
        </div>
        <div className="choices">
          <section className="choice" aria-labelledby="demo-title">
            <h2 id="demo-title">Explore a demo workspace</h2>
            <p>500 sample leads and ten days of history: two campaigns that already sent, were answered and booked meetings, a pipeline and tasks. The campaigns are paused and open at any hour: press Start and the simulated people accept and reply within a minute or two. Nothing reaches real people.</p>
            <div className="grow" />
            <button className="btn primary" disabled={demo.busy} onClick={() => void demo.act(async () => unwrap(await bridge.session.openDemo()))}>
              {demo.busy ? 'Creating the demo workspace…' : 'Open the demo workspace'}
            </button>
            <ErrorText error={demo.error} />
          </section>
          <section className="choice" aria-labelledby="connect-title">
            <h2 id="connect-title">Connect to your team's sync server</h2>
            <p>Work on your team's shared CRM. Your copy stays on this machine, works offline and syncs when the server is reachable.</p>
            <form
              className="stack"
              onSubmit={(e) => {
                e.preventDefault();
                void connect.act(async () => unwrap(await bridge.session.connect({ url, apiKey })));
              }}
            >
              <label className="field">
                <span>Server address</span>
                <input className="input" placeholder="https://sync.example.com" value={url} onChange={(e) => setUrl(e.target.value)} required />
              </label>
              <label className="field">
                <span>API key</span>
                <input className="input mono" type="password" placeholder="live_…" value={apiKey} onChange={(e) => setApiKey(e.target.value)} required autoComplete="off" />
              </label>
              <button className="btn primary" type="submit" disabled={connect.busy}>{connect.busy ? 'Connecting…' : 'Connect'}</button>
              <ErrorText error={connect.error} />
            </form>
          </section>
        </div>
        <p className="faint">Data folder: <span className="mono">{dataDir}</span> (set DATA_DIR to use another).</p>
      </div>
    </div>
  );
}
