/** Keyboard shortcuts: g l / g d / g p / g t / g r / g s to move, / to search, ? for help, Ctrl/Cmd+K for
 * the command palette, Escape to close the lead panel. Letters are ignored while typing in a field. */
import { useRef } from 'react';
import { inTextField, useWindowKeydown } from '../lib/window-keys.ts';
import { useApp } from '../state/app-store.ts';
import type { Screen } from '../state/app-store.ts';

const GO: Record<string, Screen> = { l: 'leads', d: 'duplicates', p: 'pipeline', i: 'inbox', t: 'tasks', r: 'triage', c: 'campaigns', e: 'senders', o: 'social', s: 'settings' };

export function useShortcuts(): void {
  const pendingG = useRef(0);
  useWindowKeydown((e) => {
    const app = useApp.getState();
    if ((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === 'k') {
      e.preventDefault();
      app.setPalette(!app.paletteOpen);
      return;
    }
    if (e.ctrlKey || e.metaKey || e.altKey || inTextField(e.target)) return;
    if (app.paletteOpen || document.querySelector('[role="dialog"]')) return;
    if (e.key === 'Escape' && app.leadId) {
      app.openLead(null);
      return;
    }
    if (e.key === '/') {
      e.preventDefault();
      document.getElementById('global-search')?.focus();
      return;
    }
    if (e.key === '?') {
      app.setHelp(true);
      return;
    }
    if (e.key === 'g') {
      pendingG.current = Date.now();
      return;
    }
    const target = GO[e.key];
    if (target && Date.now() - pendingG.current < 1500) {
      pendingG.current = 0;
      app.go(target);
    }
  });
}

export const SHORTCUTS: { keys: string; what: string }[] = [
  { keys: 'Ctrl K / ⌘ K', what: 'Command palette' },
  { keys: '/', what: 'Search leads' },
  { keys: 'g l', what: 'Go to leads' },
  { keys: 'g d', what: 'Go to duplicates (merge leads of one person)' },
  { keys: 'g p', what: 'Go to the pipeline board' },
  { keys: 'g i', what: 'Go to the reply inbox' },
  { keys: 'g t', what: 'Go to tasks' },
  { keys: 'g r', what: 'Go to triage (catch-ups due)' },
  { keys: 'g c', what: 'Go to campaigns' },
  { keys: 'g e', what: 'Go to senders' },
  { keys: 'g o', what: 'Go to people from a post' },
  { keys: 'g s', what: 'Go to settings' },
  { keys: '↑ ↓ / j k', what: 'Move through leads in the table' },
  { keys: 'x', what: 'Select the current lead' },
  { keys: 'Enter', what: 'Open the current lead' },
  { keys: 'n', what: 'New lead (on the leads screen)' },
  { keys: 'j k / s / m', what: 'Duplicates: move, swap which lead is kept, merge' },
  { keys: 'j k / r / e / Enter', what: 'Inbox: move, reply, mark done (or back), open the lead' },
  { keys: '1 2 3 4 5 6 / 0', what: 'Inbox: label the reply interested, not interested, out of office, wrong person, unsubscribe, other / clear the label' },
  { keys: 'Esc', what: 'Close the lead panel or a dialog' },
  { keys: '?', what: 'This help' },
];
