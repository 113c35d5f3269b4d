/** One glance: is this copy in step with the team's server, what is waiting, was anything refused. */
import { useApp } from '../state/app-store.ts';
import { syncSummary } from './sync-summary.ts';

export { syncSummary };

export function SyncIndicator() {
  const sync = useApp((s) => s.sync);
  const go = useApp((s) => s.go);
  const { cls, text, progress } = syncSummary(sync);
  return (
    <button className={`sync ${cls}`} onClick={() => go('settings')} title={sync?.error ?? 'Sync status: open Settings for details'} data-testid="sync-indicator">
      <span className="dot" aria-hidden="true" />
      {text}
      {progress && (
        <span className="progress" role="progressbar" aria-label="Sync progress" aria-valuenow={progress.done} aria-valuemin={0} aria-valuemax={progress.total}>
          <span style={{ width: `${progress.total > 0 ? Math.min(100, (100 * progress.done) / progress.total) : 100}%` }} />
        </span>
      )}
    </button>
  );
}
