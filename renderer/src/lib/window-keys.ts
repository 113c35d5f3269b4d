/** A screen's keyboard shortcuts on the window, acting on what the screen shows when the key is pressed.
 *
 * A handler registered in `useEffect` (re-registered when what it reads changes) lags the screen:
 * React draws a render started by data (a live answer, not a key) first and runs its effects in a
 * later task, and a key pressed in between reached the previous render's handler, which acted on the
 * previous list or on none (the inbox's `r` opened nothing when the list arrived just before it).
 * Here the handler is a `useEffectEvent`, which React points at the newest render while it changes
 * the page, and the listener is added in a layout effect, so it is there from the screen's first
 * frame. */
import { useEffectEvent, useLayoutEffect } from 'react';

/** Whether a key went to a field the user types in (the app's letters are then the field's). */
export function inTextField(target: EventTarget | null): boolean {
  return target instanceof HTMLElement && (target.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(target.tagName));
}

/** Calls `handler` with every keydown on the window while the calling component is mounted.
 * `capture`: before the listeners of the bubbling phase (one Escape closes one thing). */
export function useWindowKeydown(handler: (e: KeyboardEvent) => void, capture = false): void {
  const onKey = useEffectEvent(handler);
  useLayoutEffect(() => {
    const listener = (e: KeyboardEvent) => onKey(e);
    window.addEventListener('keydown', listener, capture);
    return () => window.removeEventListener('keydown', listener, capture);
  }, [capture]);
}
