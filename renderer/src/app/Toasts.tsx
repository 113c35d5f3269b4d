import { useApp } from '../state/app-store.ts';

export function Toasts() {
  const toasts = useApp((s) => s.toasts);
  const dismiss = useApp((s) => s.dismissToast);
  return (
    <div className="toasts" aria-live="polite">
      {toasts.map((t) => (
        <div key={t.id} className={`toast ${t.kind}`} role={t.kind === 'error' ? 'alert' : 'status'}>
          <span className="grow">{t.text}</span>
          {t.action && (
            <button className="btn small" onClick={() => { dismiss(t.id); t.action?.run(); }}>{t.action.label}</button>
          )}
          <button onClick={() => dismiss(t.id)} aria-label="Dismiss">✕</button>
        </div>
      ))}
    </div>
  );
}
