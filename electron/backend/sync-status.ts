/**
 * The sync status a desktop shows: online or offline (and why), local changes the server has not
 * acknowledged yet, the last successful exchange, pushes the server refused with its reasons, and
 * long work under way (a pull's progress, "n of m" by the server's count of what there is to pull,
 * and the time left once its rate is known; an index build after it). Replication feeds it events;
 * the UI subscribes (the bridge's SyncStatus shape).
 */
import type { SyncRefusal, SyncStatus } from '../bridge.ts';

export type { SyncRefusal, SyncStatus };

/** Refusals kept for display, newest first. */
const MAX_REFUSALS = 50;

/** The time a pull's rate is measured over, and the least before a time left is shown. */
const RATE_WINDOW_MS = 30_000;
const RATE_MIN_MS = 3_000;

/** A count as en-US writes it ("12,000"), without ICU: the process's first number formatted
 * through Intl (toLocaleString) loads ICU's number data, 25-40 ms of CPU in the turn of a pulled
 * page during the initial sync (its first "n of m"). */
const count = (n: number): string => String(Math.round(n)).replace(/\B(?=(\d{3})+(?!\d))/g, ',');

/** "leadGroups" -> "lead groups". */
const collectionInWords = (c: string): string => c.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();

/** "leads", "leads and activities", "leads, activities and messages". */
function listInWords(words: readonly string[]): string {
  return words.length <= 1 ? (words[0] ?? '') : `${words.slice(0, -1).join(', ')} and ${words[words.length - 1] ?? ''}`;
}

/** Seconds until `left` more documents arrive at the rate of `samples`, or null while the rate is
 * not known yet (under RATE_MIN_MS of pulling measured). */
export function secondsLeft(samples: readonly { at: number; done: number }[], left: number): number | null {
  const first = samples[0];
  const last = samples[samples.length - 1];
  if (!first || !last || last.at - first.at < RATE_MIN_MS || last.done <= first.done) return null;
  return (left * (last.at - first.at)) / 1000 / (last.done - first.done);
}

/** "about 40 s left", "about 3 min left", "about 1 h 20 min left". */
export function inWords(seconds: number): string {
  if (seconds < 10) return 'a few seconds left';
  if (seconds < 50) return `about ${Math.round(seconds / 10) * 10} s left`;
  const minutes = Math.max(1, Math.round(seconds / 60));
  if (minutes < 60) return `about ${minutes} min left`;
  return `about ${Math.floor(minutes / 60)} h${minutes % 60 === 0 ? '' : ` ${minutes % 60} min`} left`;
}

/** A storage error in words: SQLite's result codes a user can act on, else its message. */
export function storageProblem(why: unknown): string {
  const code = typeof why === 'object' && why !== null && 'code' in why ? String((why as { code: unknown }).code) : '';
  if (code === 'SQLITE_FULL') return 'the disk is full (free some space)';
  if (code.startsWith('SQLITE_IOERR')) return `the disk could not be written (${code})`;
  if (code === 'SQLITE_READONLY' || code.startsWith('SQLITE_READONLY_')) return 'the data folder is read-only';
  return why instanceof Error ? why.message : String(why);
}

export class SyncStatusTracker {
  private pendingKeys = new Set<string>();
  private lastSyncedAt: string | null = null;
  private refusals: SyncRefusal[] = [];
  private error: string | null = null;
  private everConnected = false;
  private requestFailing = false;
  /** A fatal condition (outdated app, revoked key): shown until replication restarts. */
  private fatal: string | null = null;
  private stopped = false;
  private readonly downStreams = new Set<string>();
  private readonly listeners = new Set<(s: SyncStatus) => void>();
  private emitQueued = false;
  /** A pull of many pages (a first pull, a resumed one, catching up): per collection, the documents
   * received since it began, the server's count of what there was to pull (null: the server gave
   * none), and whether it still goes on. Finished collections stay until every one has finished. */
  private readonly pulls = new Map<string, { done: number; total: number | null; going: boolean }>();
  /** (time, documents received) at each page of the pulls, for the rate: the last RATE_WINDOW_MS. */
  private samples: { at: number; done: number }[] = [];
  /** The index the storage builds now, in words. */
  private building: string | null = null;
  /** Why pulled documents could not be stored on this computer (a full disk), in words, by
   * collection, until a pulled page of it is stored again. */
  private readonly notStored = new Map<string, string>();
  private last: SyncStatus;

  constructor(private readonly now: () => Date = () => new Date()) {
    this.last = this.compute();
  }

  /** The current status. */
  get(): SyncStatus {
    return this.last;
  }

  /** Calls `listener` with every new status (coalesced per tick); returns the unsubscribe. */
  subscribe(listener: (s: SyncStatus) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private compute(): SyncStatus {
    const offline = this.stopped || this.fatal !== null || this.requestFailing || this.downStreams.size > 0;
    const mode: SyncStatus['mode'] = offline ? 'offline' : this.everConnected ? 'online' : 'connecting';
    return {
      mode,
      pending: this.pendingKeys.size,
      lastSyncedAt: this.lastSyncedAt,
      refusals: [...this.refusals],
      error: this.fatal ?? (this.stopped ? 'Sync is paused.' : (this.notStored.values().next().value ?? (offline ? this.error : null))),
      ...(this.notStored.size > 0 ? { stalled: true } : {}),
      ...(this.pulls.size > 0 ? this.pullActivity() : this.building ? { activity: `Building the index of ${this.building}` } : {}),
    };
  }

  /** "Syncing leads: 12,000 of 100,000 · about 3 min left", and the progress bar's numbers. */
  private pullActivity(): Pick<SyncStatus, 'activity' | 'progress'> {
    const entries = [...this.pulls.values()];
    const done = entries.reduce((n, e) => n + e.done, 0);
    const what = `Syncing ${listInWords([...this.pulls.keys()].map(collectionInWords))}`;
    if (entries.some((e) => e.total === null)) return { activity: `${what}: ${count(done)} so far` };
    // Changes written on the server meanwhile are pulled too: never "of" fewer than received.
    const total = Math.max(done, entries.reduce((n, e) => n + (e.total ?? 0), 0));
    const left = secondsLeft(this.samples, total - done);
    return { activity: `${what}: ${count(done)} of ${count(total)}${left === null ? '' : ` · ${inWords(left)}`}`, progress: { done, total } };
  }

  private changed(): void {
    if (this.emitQueued) return;
    this.emitQueued = true;
    queueMicrotask(() => {
      this.emitQueued = false;
      const next = this.compute();
      if (JSON.stringify(next) === JSON.stringify(this.last)) return;
      this.last = next;
      for (const l of this.listeners) l(next);
    });
  }

  /** A pull, push or stream connect succeeded. */
  requestOk(): void {
    this.everConnected = true;
    this.requestFailing = false;
    this.lastSyncedAt = this.now().toISOString();
    this.changed();
  }

  /**
   * A pull page of `documents` arrived for `collection`; `full`: more are waiting. `remaining`: the
   * server's count of the documents after the checkpoint this page was asked from (this page's
   * included), given on the first page of a pull: the pull's "of m". A pull that ends with its first
   * page is not shown.
   */
  pulledPage(collection: string, documents: number, full: boolean, remaining?: number): void {
    let pull = this.pulls.get(collection);
    if (!pull) {
      if (!full) return;
      pull = { done: 0, total: null, going: true };
      this.pulls.set(collection, pull);
    }
    // Counted again when a pull starts over from its checkpoint (a pause, a reconnection).
    if (remaining !== undefined) pull.total = pull.done + remaining;
    pull.done += documents;
    pull.going = full;
    if (![...this.pulls.values()].some((p) => p.going)) {
      this.pulls.clear();
      this.samples = [];
    } else {
      const at = this.now().getTime();
      const done = [...this.pulls.values()].reduce((n, p) => n + p.done, 0);
      this.samples.push({ at, done });
      // The rate of the last half minute (a pull slows as the local file grows), from two samples at least.
      while (this.samples.length > 2 && (this.samples[1]?.at ?? at) <= at - RATE_WINDOW_MS) this.samples.shift();
    }
    this.changed();
  }

  /** Pulled documents of `collection` could not be stored on this computer (`why`: the storage's
   * error); the replication pulls them again after its retry wait. Said until pageStored. */
  storeFailed(collection: string, why: unknown): void {
    this.notStored.set(collection, `Synced ${collectionInWords(collection)} could not be saved on this computer: ${storageProblem(why)}. Sync tries again every few seconds; nothing is lost meanwhile.`);
    this.changed();
  }

  /** A pulled page of `collection` was stored. */
  pageStored(collection: string): void {
    if (this.notStored.delete(collection)) this.changed();
  }

  /** The local database builds an index (in words: "leads by full name"), or none (null). */
  buildingIndex(what: string | null): void {
    this.building = what;
    this.changed();
  }

  /** A request failed (network down, server error). */
  requestFailed(reason: string): void {
    this.requestFailing = true;
    this.error = reason;
    this.changed();
  }

  streamUp(collection: string): void {
    this.downStreams.delete(collection);
    this.requestOk();
  }

  streamDown(collection: string, reason: string): void {
    this.downStreams.add(collection);
    this.error = reason;
    this.changed();
  }

  /** Replication cannot go on until the user acts (update the app, new key). */
  fatalError(reason: string): void {
    this.fatal = reason;
    this.changed();
  }

  setStopped(stopped: boolean): void {
    this.stopped = stopped;
    if (!stopped) this.fatal = null;
    // A pause is no measure of the pull's rate: it is measured again from the next page.
    if (stopped) this.samples = [];
    this.changed();
  }

  /** A local change waits for the server (key: collection/id). */
  addPending(key: string): void {
    if (this.pendingKeys.has(key)) return;
    this.pendingKeys.add(key);
    this.changed();
  }

  /** The server has the document's current local state. */
  acknowledged(key: string): void {
    if (this.pendingKeys.delete(key)) this.changed();
  }

  pendingCount(): number {
    return this.pendingKeys.size;
  }

  isPending(key: string): boolean {
    return this.pendingKeys.has(key);
  }

  addRefusals(list: readonly SyncRefusal[]): void {
    if (list.length === 0) return;
    const seen = new Set(this.refusals.map((r) => `${r.collection}/${r.documentId}/${r.at}/${r.code}`));
    const fresh = list.filter((r) => !seen.has(`${r.collection}/${r.documentId}/${r.at}/${r.code}`));
    if (fresh.length === 0) return;
    this.refusals = [...fresh, ...this.refusals].sort((a, b) => (a.at < b.at ? 1 : a.at > b.at ? -1 : 0)).slice(0, MAX_REFUSALS);
    this.changed();
  }

  /** Replaces a placeholder refusal (no reason known yet) with the server's explanation. */
  explainRefusal(r: SyncRefusal): void {
    this.refusals = this.refusals.filter((x) => !(x.collection === r.collection && x.documentId === r.documentId && x.code === 'REFUSED'));
    this.addRefusals([r]);
    this.changed();
  }
}
