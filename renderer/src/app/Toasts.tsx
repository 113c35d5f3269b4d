/** Toasts: a bounded stack at the bottom right, newest on top. The screen above leaves room for it
 * (the --toast-room strip), so a toast never covers a table's last rows or columns, however many
 * bulk actions report at once: past three, the older ones fold into "N earlier". Each is a status
 * (an error an alert) with a close button; Escape dismisses the newest one when nothing else (a
 * dialog, the palette, the lead panel) takes Escape, or the one that has focus. */
import { useEffect, useLayoutEffect, useRef, useState } from 'react';
import { inTextField, useWindowKeydown } from '../lib/window-keys.ts';
import { useApp } from '../state/app-store.ts';

/** Toasts shown at once before the older ones fold. */
export const VISIBLE_TOASTS = 3;
/** Space between the stack and the window's bottom edge (as in the CSS). */
const EDGE = 16;

export function Toasts() {
  const toasts = useApp((s) => s.toasts);
  const dismiss = useApp((s) => s.dismissToast);
  const [unfolded, setExpanded] = useState(false);
  const box = useRef<HTMLDivElement>(null);
  const newestFirst = [...toasts].reverse();
  const expanded = unfolded && toasts.length > VISIBLE_TOASTS;
  const shown = expanded ? newestFirst : newestFirst.slice(0, VISIBLE_TOASTS);
  const folded = newestFirst.length - shown.length;

  // The screen's bottom strip is as tall as the stack: content scrolls above it, never under it.
  useLayoutEffect(() => {
    const el = box.current;
    const root = document.documentElement;
    const update = () => root.style.setProperty('--toast-room', el && el.childElementCount > 0 ? `${el.offsetHeight + EDGE}px` : '0px');
    update();
    const observer = typeof ResizeObserver === 'undefined' ? null : new ResizeObserver(update);
    if (el) observer?.observe(el);
    return () => observer?.disconnect();
  }, [toasts.length, expanded]);
  useEffect(() => () => document.documentElement.style.setProperty('--toast-room', '0px'), []);

  // Capture phase: this runs before the lead panel's Escape, so one key closes one thing.
  useWindowKeydown((e) => {
    if (e.key !== 'Escape') return;
    const app = useApp.getState();
    const newest = app.toasts[app.toasts.length - 1];
    if (!newest) return;
    const inside = box.current?.contains(document.activeElement) ?? false;
    if (inside) {
      const id = Number((document.activeElement?.closest('[data-toast-id]') as HTMLElement | null)?.dataset.toastId ?? newest.id);
      e.stopPropagation();
      app.dismissToast(id);
      return;
    }
    if (inTextField(e.target) || app.paletteOpen || app.helpOpen || app.leadId || document.querySelector('[role="dialog"], .menu')) return;
    app.dismissToast(newest.id);
  }, true);

  return (
    <div className={`toasts${expanded ? ' expanded' : ''}`} ref={box} aria-live="polite" data-testid="toasts">
      {shown.map((t) => (
        <div key={t.id} className={`toast ${t.kind}`} role={t.kind === 'error' ? 'alert' : 'status'} data-toast-id={t.id}>
          <span className="grow">{t.text}</span>
          {t.action && (
            <button className="btn small" onClick={() => { dismiss(t.id); t.action?.run(); }}>{t.action.label}</button>
          )}
          <button className="toast-close" onClick={() => dismiss(t.id)} aria-label="Dismiss" title="Dismiss (Escape)">✕</button>
        </div>
      ))}
      {folded > 0 && (
        <button className="toast-more" onClick={() => setExpanded(true)} aria-label={`Show ${folded} earlier notification${folded === 1 ? '' : 's'}`}>
          {folded} earlier
        </button>
      )}
      {expanded && (
        <button className="toast-more" onClick={() => setExpanded(false)}>Show fewer</button>
      )}
    </div>
  );
}
