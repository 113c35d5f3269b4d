/** The sync indicator's words (SyncIndicator.tsx; also drawn by the page's first paint, first-rows.ts). */
import type { SyncStatus } from '../../../electron/bridge.ts';

export function syncSummary(s: SyncStatus | null): { cls: string; text: string; progress?: { done: number; total: number } } {
  if (!s) return { cls: 'connecting', text: 'Starting…' };
  // Pulled data cannot be stored (a full disk): the table would otherwise say "Syncing" and wait.
  if (s.stalled) return { cls: 'offline', text: s.pending > 0 ? `Sync stalled · ${s.pending} pending` : 'Sync stalled' };
  if (s.refusals.length > 0) return { cls: 'refused', text: `${s.refusals.length} change${s.refusals.length === 1 ? '' : 's'} refused` };
  switch (s.mode) {
    case 'local':
      // A local workspace's index builds (after an import) are said too.
      return { cls: 'local', text: s.activity ? `${s.activity} · not synced` : 'Local demo · not synced' };
    case 'online':
      // Long work (a pull's "n of m" with a bar, an index build) instead of a silent, busy table.
      if (s.activity) return { cls: 'online', text: s.pending > 0 ? `${s.activity} · ${s.pending} pending` : s.activity, ...(s.progress ? { progress: s.progress } : {}) };
      return { cls: 'online', text: s.pending > 0 ? `Syncing · ${s.pending} pending` : 'Synced' };
    case 'offline':
      return { cls: 'offline', text: s.pending > 0 ? `Offline · ${s.pending} pending` : 'Offline' };
    case 'connecting':
      return { cls: 'connecting', text: 'Connecting…' };
  }
}
