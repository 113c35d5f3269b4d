import { dateTime, relative } from '../../lib/format.ts';
import { useApp } from '../../state/app-store.ts';
import { syncSummary } from '../../app/SyncIndicator.tsx';

export function SyncSection() {
  const sync = useApp((s) => s.sync);
  const { text } = syncSummary(sync);
  return (
    <section className="card-box" aria-labelledby="sync-title" data-testid="sync-section">
      <h2 id="sync-title">Sync</h2>
      <dl className="kv">
        <dt>Status</dt><dd>{text}</dd>
        <dt>Waiting to sync</dt><dd>{sync?.pending ?? 0} change{sync?.pending === 1 ? '' : 's'}</dd>
        <dt>Last synced</dt><dd>{sync?.lastSyncedAt ? `${dateTime(sync.lastSyncedAt)} (${relative(sync.lastSyncedAt)})` : sync?.mode === 'local' ? 'Never: this demo is not connected to a server' : 'Not yet'}</dd>
        {sync?.error && (<><dt>Problem</dt><dd className="error-text">{sync.error}</dd></>)}
      </dl>
      <h3>Refused changes</h3>
      {(sync?.refusals.length ?? 0) === 0 ? (
        <span className="muted">None. When the server refuses one of your changes (for example an edit of someone else's note), it is put back and listed here with the reason.</span>
      ) : (
        <table className="plain">
          <thead><tr><th>When</th><th>What</th><th>Why</th></tr></thead>
          <tbody>
            {sync?.refusals.map((r, i) => (
              <tr key={`${r.documentId}-${i}`}><td>{dateTime(r.at)}</td><td>{r.collection}</td><td>{r.message}</td></tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
