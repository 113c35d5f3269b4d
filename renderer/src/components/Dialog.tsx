/** A modal dialog: Escape or a click outside closes it, focus starts on its first field. */
import { useEffect, useRef } from 'react';
import type { ReactNode } from 'react';
import { useWindowKeydown } from '../lib/window-keys.ts';

export function Dialog(props: { title: string; onClose: () => void; children: ReactNode; footer?: ReactNode; wide?: boolean; label?: string }) {
  const ref = useRef<HTMLDivElement>(null);
  const { onClose } = props;
  // Focus starts inside once, when the dialog opens (not again when its owner draws a new onClose):
  // on its first field, else its primary button, else its first button (the header's close).
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    const first =
      dialog.querySelector<HTMLElement>('.dialog-body :is(input:not([type="hidden"]), select, textarea):not(:disabled)') ??
      dialog.querySelector<HTMLElement>('button.primary:not(:disabled)') ??
      dialog.querySelector<HTMLElement>('button');
    first?.focus();
  }, []);
  // Capture phase: the dialog's Escape comes before any screen's.
  useWindowKeydown((e) => {
    if (e.key === 'Escape') {
      e.stopPropagation();
      onClose();
    }
  }, true);
  return (
    <div className="backdrop" onMouseDown={(e) => e.target === e.currentTarget && onClose()}>
      <div className={`dialog${props.wide ? ' wide' : ''}`} role="dialog" aria-modal="true" aria-label={props.label ?? props.title} ref={ref}>
        <div className="dialog-head">
          <h2 className="grow">{props.title}</h2>
          <button className="btn ghost small" onClick={onClose} aria-label="Close">✕</button>
        </div>
        <div className="dialog-body">{props.children}</div>
        {props.footer && <div className="dialog-foot">{props.footer}</div>}
      </div>
    </div>
  );
}
