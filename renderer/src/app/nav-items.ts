/** The main navigation's entries (Nav.tsx; also drawn by the page's first paint, first-rows.ts). */
import type { Screen } from '../state/app-store.ts';

export const NAV_ITEMS: { screen: Screen; label: string; keys: string }[] = [
  { screen: 'leads', label: 'Leads', keys: 'g l' },
  { screen: 'duplicates', label: 'Duplicates', keys: 'g d' },
  { screen: 'pipeline', label: 'Pipeline', keys: 'g p' },
  { screen: 'inbox', label: 'Inbox', keys: 'g i' },
  { screen: 'tasks', label: 'Tasks', keys: 'g t' },
  { screen: 'triage', label: 'Triage', keys: 'g r' },
  { screen: 'campaigns', label: 'Campaigns', keys: 'g c' },
  { screen: 'senders', label: 'Senders', keys: 'g e' },
  { screen: 'social', label: 'From a post', keys: 'g o' },
  { screen: 'settings', label: 'Settings', keys: 'g s' },
];
