/** The screens the Shell shows. The leads table is in the app's first chunk (the window opens on
 * it); every other screen, the lead panel and the overlays are chunks of their own (lazyChunk). */
import type { ComponentType } from 'react';
import { lazyChunk } from '../lib/lazy-chunk.ts';
import { LeadsScreen } from '../screens/leads/LeadsScreen.tsx';
import type { Screen } from '../state/app-store.ts';

export const SCREEN_VIEWS: Record<Screen, ComponentType> = {
  leads: LeadsScreen,
  duplicates: lazyChunk(() => import('../screens/duplicates/DuplicatesScreen.tsx').then((m) => m.DuplicatesScreen)),
  pipeline: lazyChunk(() => import('../screens/pipeline/PipelineBoard.tsx').then((m) => m.PipelineBoard)),
  inbox: lazyChunk(() => import('../screens/inbox/InboxScreen.tsx').then((m) => m.InboxScreen)),
  tasks: lazyChunk(() => import('../screens/tasks/TasksScreen.tsx').then((m) => m.TasksScreen)),
  triage: lazyChunk(() => import('../screens/triage/TriageScreen.tsx').then((m) => m.TriageScreen)),
  campaigns: lazyChunk(() => import('../screens/campaigns/CampaignsScreen.tsx').then((m) => m.CampaignsScreen)),
  senders: lazyChunk(() => import('../screens/senders/SendersScreen.tsx').then((m) => m.SendersScreen)),
  social: lazyChunk(() => import('../screens/social/SocialScreen.tsx').then((m) => m.SocialScreen)),
  settings: lazyChunk(() => import('../screens/settings/SettingsScreen.tsx').then((m) => m.SettingsScreen)),
};
export const LeadPanel = lazyChunk(() => import('../screens/lead/LeadPanel.tsx').then((m) => m.LeadPanel));
export const CommandPalette = lazyChunk(() => import('./CommandPalette.tsx').then((m) => m.CommandPalette));
export const ShortcutsHelp = lazyChunk(() => import('./ShortcutsHelp.tsx').then((m) => m.ShortcutsHelp));
