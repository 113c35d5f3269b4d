/**
 * The sync status's long work (electron/backend/sync-status.ts): documents received during a first
 * pull ("n synced": the server's pull pages tell no total), then the index builds after it. (The
 * indicator, renderer/src/app/SyncIndicator.tsx, shows `activity` as it is; its module needs a
 * browser, which this project's unit tests do not have.)
 */
import { describe, expect, it } from 'vitest';
import { SyncStatusTracker } from '../../electron/backend/sync-status.ts';
import type { SyncStatus } from '../../electron/backend/sync-status.ts';

const settled = (): Promise<void> => new Promise((r) => queueMicrotask(() => r()));

describe('sync status: long work', () => {
  it('counts a first pull page by page until its last page, then says which index is built', async () => {
    const t = new SyncStatusTracker(() => new Date('2026-11-29T00:00:00Z'));
    const seen: (string | undefined)[] = [];
    t.subscribe((s: SyncStatus) => seen.push(s.activity));
    t.requestOk();
    // A page that is not full while nothing is catching up: live mode, nothing to say.
    t.pulledPage('tags', 3, false);
    await settled();
    expect(t.get().activity).toBeUndefined();
    t.pulledPage('leads', 2000, true);
    await settled();
    expect(t.get().activity).toBe('2,000 synced');
    t.pulledPage('leads', 2000, true);
    t.pulledPage('activities', 2000, true);
    await settled();
    expect(t.get().activity).toBe('6,000 synced');
    t.pulledPage('leads', 500, false);
    await settled();
    expect(t.get().activity).toBe('6,500 synced');
    t.buildingIndex('leads by full name');
    t.pulledPage('activities', 10, false);
    await settled();
    expect(t.get().activity).toBe('Building the index of leads by full name');
    t.buildingIndex(null);
    await settled();
    expect(t.get().activity).toBeUndefined();
    // A later catch-up counts from zero again.
    t.pulledPage('leads', 2000, true);
    await settled();
    expect(t.get().activity).toBe('2,000 synced');
    expect(seen).toContain('6,000 synced');
  });
});
