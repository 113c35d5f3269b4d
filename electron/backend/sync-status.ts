/**
 * The sync status a desktop shows: online or offline (and why), local changes the server has not
 * acknowledged yet, the last successful exchange, pushes the server refused with its reasons, and
 * long work under way (a first pull's progress, an index build after it). Replication feeds it
 * events; the UI subscribes (the bridge's SyncStatus shape).
 */
import type { SyncRefusal, SyncStatus } from '../bridge.ts';

export type { SyncRefusal, SyncStatus };

/** Refusals kept for display, newest first. */
const MAX_REFUSALS = 50;

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
  /** Collections pulling page after full page (a first pull, or catching up), and the documents
   * they received since it began. */
  private readonly catchingUp = new Set<string>();
  private caughtUp = 0;
  /** The index the storage builds now, in words. */
  private building: string | null = null;
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
      error: this.fatal ?? (this.stopped ? 'Sync is paused.' : offline ? this.error : null),
      ...(this.catchingUp.size > 0 ? { activity: `${this.caughtUp.toLocaleString('en-US')} synced` } : this.building ? { activity: `Building the index of ${this.building}` } : {}),
    };
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

  /** A pull page of `documents` arrived for `collection`; `full`: more are waiting. */
  pulledPage(collection: string, documents: number, full: boolean): void {
    if (!full && !this.catchingUp.has(collection)) return;
    if (full) this.catchingUp.add(collection);
    else this.catchingUp.delete(collection);
    this.caughtUp = this.catchingUp.size > 0 || full ? this.caughtUp + documents : 0;
    this.changed();
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
