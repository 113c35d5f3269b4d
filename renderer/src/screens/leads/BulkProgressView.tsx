import type { BulkProgress } from './bulk-targets.ts';

export function BulkProgressView({ progress }: { progress: BulkProgress | null }) {
  if (!progress) return null;
  const pct = progress.total === 0 ? 100 : Math.round((progress.done / progress.total) * 100);
  return (
    <div className="stack">
      <div className="progress" role="progressbar" aria-valuenow={pct} aria-valuemin={0} aria-valuemax={100}><div style={{ width: `${pct}%` }} /></div>
      <span className="muted">{progress.done.toLocaleString()} of {progress.total.toLocaleString()} done{progress.failures.length > 0 ? `, ${progress.failures.length} refused` : ''}</span>
      {progress.failures.length > 0 && (
        <div className="error-text" role="alert">
          {progress.failures.slice(0, 20).map((f, i) => (
            <div key={i}><strong>{f.name}</strong>: {f.message}</div>
          ))}
          {progress.failures.length > 20 && <div>…and {progress.failures.length - 20} more.</div>}
        </div>
      )}
    </div>
  );
}
