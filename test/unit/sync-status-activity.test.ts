/**
 * The sync status's long work (electron/backend/sync-status.ts): a pull of many pages as "n of m"
 * by the server's count of what it brings (or "n so far" from a server that gives none), the time
 * left once its rate is known, then the index builds after it. (The indicator,
 * renderer/src/app/SyncIndicator.tsx, shows `activity` as it is and `progress` as a bar; the
 * end-to-end test test/e2e/sync-progress.test.ts looks at it in a browser.)
 */
import { describe, expect, it } from 'vitest';
import { inWords, secondsLeft, storageProblem, SyncStatusTracker } from '../../electron/backend/sync-status.ts';
import { syncSummary } from '../../renderer/src/app/sync-summary.ts';
import type { SyncStatus } from '../../electron/backend/sync-status.ts';

const settled = (): Promise<void> => new Promise((r) => queueMicrotask(() => r()));

/** A tracker on a clock the test moves. */
function tracker(): { t: SyncStatusTracker; advance: (ms: number) => void } {
  let now = Date.parse('2026-11-29T00:00:00Z');
  return { t: new SyncStatusTracker(() => new Date(now)), advance: (ms) => (now += ms) };
}

describe('sync status: long work', () => {
  it('counts a pull page by page against the server count, until its last page, then says which index is built', async () => {
    const { t } = tracker();
    const seen: (string | undefined)[] = [];
    t.subscribe((s: SyncStatus) => seen.push(s.activity));
    t.requestOk();
    // A pull that ends with its first page (live mode, a small collection): nothing to say.
    t.pulledPage('tags', 3, false, 3);
    await settled();
    expect(t.get().activity).toBeUndefined();
    expect(t.get().progress).toBeUndefined();
    t.pulledPage('leads', 2000, true, 100_000);
    await settled();
    expect(t.get().activity).toBe('Syncing leads: 2,000 of 100,000');
    expect(t.get().progress).toEqual({ done: 2000, total: 100_000 });
    t.pulledPage('leads', 2000, true);
    t.pulledPage('activities', 2000, true, 4500);
    await settled();
    expect(t.get().activity).toBe('Syncing leads and activities: 6,000 of 104,500');
    // Leads end; the pull goes on with activities, and the finished leads stay in its numbers.
    t.pulledPage('leads', 500, false);
    t.pulledPage('leadGroups', 2000, true, 2001);
    await settled();
    expect(t.get().activity).toBe('Syncing leads, activities and lead groups: 8,500 of 106,501');
    t.pulledPage('leadGroups', 1, false);
    t.buildingIndex('leads by full name');
    t.pulledPage('activities', 2000, true);
    await settled();
    expect(t.get().progress).toEqual({ done: 10_501, total: 106_501 });
    t.pulledPage('activities', 500, false);
    await settled();
    expect(t.get().activity).toBe('Building the index of leads by full name');
    expect(t.get().progress).toBeUndefined();
    t.buildingIndex(null);
    await settled();
    expect(t.get().activity).toBeUndefined();
    expect(seen).toContain('Syncing leads and activities: 6,000 of 104,500');
  });

  it('counts a pull started again from its checkpoint (a restart, a resume) from there, and never shows more received than its total', async () => {
    const { t } = tracker();
    t.requestOk();
    // A restarted desktop: the server counts what remains after the stored checkpoint.
    t.pulledPage('leads', 2000, true, 40_000);
    await settled();
    expect(t.get().activity).toBe('Syncing leads: 2,000 of 40,000');
    // Paused and resumed mid-pull: counted again from the checkpoint, the pages so far kept.
    t.pulledPage('leads', 2000, true, 38_500);
    await settled();
    expect(t.get().progress).toEqual({ done: 4000, total: 40_500 });
    // Changes written on the server meanwhile come too: the total grows with them.
    for (let i = 0; i < 18; i++) t.pulledPage('leads', 2000, true);
    await settled();
    expect(t.get().progress).toEqual({ done: 40_000, total: 40_500 });
    t.pulledPage('leads', 2000, true);
    await settled();
    expect(t.get().progress).toEqual({ done: 42_000, total: 42_000 });
    t.pulledPage('leads', 0, false);
    await settled();
    expect(t.get().activity).toBeUndefined();
    // A later pull counts from zero again.
    t.pulledPage('leads', 2000, true, 3000);
    await settled();
    expect(t.get().activity).toBe('Syncing leads: 2,000 of 3,000');
  });

  it('says how long is left once three seconds of pulling give a rate, over the last half minute', async () => {
    const { t, advance } = tracker();
    t.requestOk();
    t.pulledPage('leads', 2000, true, 100_000);
    advance(1000);
    t.pulledPage('leads', 2000, true);
    await settled();
    // One second measured: no estimate yet.
    expect(t.get().activity).toBe('Syncing leads: 4,000 of 100,000');
    advance(2000);
    t.pulledPage('leads', 4000, true);
    await settled();
    // 6,000 documents in 3 s: 2,000/s, 92,000 left = 46 s.
    expect(t.get().activity).toBe('Syncing leads: 8,000 of 100,000 · about 50 s left');
    // It slows down (the file grows): after a minute at 500/s the estimate follows the recent rate.
    for (let i = 0; i < 60; i++) {
      advance(1000);
      t.pulledPage('leads', 500, true);
    }
    await settled();
    // 38,000 of 100,000 at 500/s: 124 s.
    expect(t.get().activity).toBe('Syncing leads: 38,000 of 100,000 · about 2 min left');
  });

  it('says "so far" when the server gives no count (a server without count=true)', async () => {
    const { t } = tracker();
    t.requestOk();
    t.pulledPage('leads', 2000, true);
    t.pulledPage('leads', 2000, true);
    await settled();
    expect(t.get().activity).toBe('Syncing leads: 4,000 so far');
    expect(t.get().progress).toBeUndefined();
  });

  it('puts the time left in words', () => {
    expect(secondsLeft([{ at: 0, done: 0 }, { at: 2999, done: 100 }], 100)).toBeNull();
    expect(secondsLeft([{ at: 0, done: 0 }, { at: 4000, done: 8000 }], 10_000)).toBe(5);
    expect([5, 24, 49, 50, 89, 91, 3540, 3600, 4800, 7200 + 59].map(inWords)).toEqual([
      'a few seconds left',
      'about 20 s left',
      'about 50 s left',
      'about 1 min left',
      'about 1 min left',
      'about 2 min left',
      'about 59 min left',
      'about 1 h left',
      'about 1 h 20 min left',
      'about 2 h 1 min left',
    ]);
  });
});

describe('sync status: pulled data that cannot be stored', () => {
  it('says why while online, as a stalled sync, until a page of that collection is stored again', async () => {
    const { t } = tracker();
    t.requestOk();
    t.pulledPage('leads', 2000, true, 10_000);
    t.storeFailed('leads', Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' }));
    await settled();
    expect(t.get().mode).toBe('online');
    expect(t.get().stalled).toBe(true);
    expect(t.get().error).toBe('Synced leads could not be saved on this computer: the disk is full (free some space). Sync tries again every few seconds; nothing is lost meanwhile.');
    expect(syncSummary(t.get())).toEqual({ cls: 'offline', text: 'Sync stalled' });
    // Another collection's page stored says nothing of the leads.
    t.pageStored('tags');
    await settled();
    expect(t.get().stalled).toBe(true);
    t.pageStored('leads');
    await settled();
    expect(t.get().stalled).toBeUndefined();
    expect(t.get().error).toBeNull();
    expect(syncSummary(t.get()).text).toMatch(/^Syncing leads/);
  });

  it('puts the storage errors a user can act on in words', () => {
    const coded = (code: string) => Object.assign(new Error(`sqlite says ${code}`), { code });
    expect(storageProblem(coded('SQLITE_FULL'))).toBe('the disk is full (free some space)');
    expect(storageProblem(coded('SQLITE_IOERR_WRITE'))).toBe('the disk could not be written (SQLITE_IOERR_WRITE)');
    expect(storageProblem(coded('SQLITE_READONLY'))).toBe('the data folder is read-only');
    expect(storageProblem(new Error('something else'))).toBe('something else');
  });
});
