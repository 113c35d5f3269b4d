/** The UI's own state (not the CRM's data, which comes from operations): the open workspace, where
 * the user is, the lead filters, and which overlays are open. The screen and open lead live in the
 * URL hash so reload and back/forward work. */
import { create } from 'zustand';
import type { SessionInfo, SyncStatus } from '../../../electron/bridge.ts';
import { DEFAULT_FILTERS } from './lead-filters.ts';
import type { LeadFilters, SortBy } from './lead-filters.ts';

export const SCREENS = ['leads', 'duplicates', 'pipeline', 'inbox', 'tasks', 'triage', 'campaigns', 'senders', 'social', 'settings'] as const;
export type Screen = (typeof SCREENS)[number];

export { DEFAULT_FILTERS };
export type { LeadFilters, SortBy };

/** A toast may offer one action (e.g. Undo) while it shows. */
export type ToastAction = { label: string; run: () => void };
export type Toast = { id: number; text: string; kind: 'info' | 'error'; action?: ToastAction };

type AppState = {
  session: SessionInfo | null;
  sync: SyncStatus | null;
  screen: Screen;
  leadId: string | null;
  /** The campaign page open on the campaigns screen (null: the list). */
  campaignId: string | null;
  filters: LeadFilters;
  paletteOpen: boolean;
  helpOpen: boolean;
  toasts: Toast[];
  /** Something the command palette asked a screen to do once it is shown. */
  intent: 'import-csv' | 'export-csv' | null;
  setIntent(intent: AppState['intent']): void;
  setSession(s: SessionInfo): void;
  setSync(s: SyncStatus): void;
  go(screen: Screen, leadId?: string | null): void;
  openLead(leadId: string | null): void;
  openCampaign(campaignId: string | null): void;
  setFilters(patch: Partial<LeadFilters>): void;
  setPalette(open: boolean): void;
  setHelp(open: boolean): void;
  /** Shows a toast; returns its id. */
  toast(text: string, kind?: Toast['kind'], action?: ToastAction): number;
  dismissToast(id: number): void;
};

function parseHash(hash: string): { screen: Screen; leadId: string | null; campaignId: string | null } {
  const [path = '', query = ''] = hash.replace(/^#\/?/, '').split('?');
  const screen = (SCREENS as readonly string[]).includes(path) ? (path as Screen) : 'leads';
  const params = new URLSearchParams(query);
  return { screen, leadId: params.get('lead'), campaignId: screen === 'campaigns' ? params.get('campaign') : null };
}

function toHash(screen: Screen, leadId: string | null, campaignId: string | null): string {
  const params = new URLSearchParams();
  if (screen === 'campaigns' && campaignId) params.set('campaign', campaignId);
  if (leadId) params.set('lead', leadId);
  const q = params.toString();
  return `#/${screen}${q ? `?${q}` : ''}`;
}

let toastId = 0;

export const useApp = create<AppState>((set, get) => ({
  session: null,
  sync: null,
  ...parseHash(location.hash),
  filters: DEFAULT_FILTERS,
  paletteOpen: false,
  helpOpen: false,
  toasts: [],
  intent: null,
  setIntent: (intent) => set({ intent }),
  setSession: (session) => set({ session }),
  setSync: (sync) => set({ sync }),
  go(screen, leadId = null) {
    // Leaving the campaigns screen closes the campaign page; opening a lead on it keeps it.
    const campaignId = screen === 'campaigns' && get().screen === 'campaigns' ? get().campaignId : null;
    set({ screen, leadId, campaignId });
    const h = toHash(screen, leadId, campaignId);
    if (location.hash !== h) history.pushState(null, '', h);
  },
  openLead(leadId) {
    get().go(get().screen, leadId);
  },
  openCampaign(campaignId) {
    set({ screen: 'campaigns', campaignId, leadId: null });
    const h = toHash('campaigns', null, campaignId);
    if (location.hash !== h) history.pushState(null, '', h);
  },
  setFilters: (patch) => set((s) => ({ filters: { ...s.filters, ...patch } })),
  setPalette: (paletteOpen) => set({ paletteOpen }),
  setHelp: (helpOpen) => set({ helpOpen }),
  toast(text, kind = 'info', action) {
    const id = ++toastId;
    set((s) => ({ toasts: [...s.toasts, { id, text, kind, ...(action ? { action } : {}) }] }));
    // An action needs time to be read and clicked.
    if (kind === 'info') setTimeout(() => get().dismissToast(id), action ? 10_000 : 4000);
    return id;
  },
  dismissToast: (id) => set((s) => ({ toasts: s.toasts.filter((t) => t.id !== id) })),
}));

window.addEventListener('popstate', () => useApp.setState(parseHash(location.hash)));
