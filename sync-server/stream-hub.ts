/** Live replication streams (GET /replication/<collection>/stream): which streams are open, the caps
 * on them (per key, per process, unsent bytes), and on every change of a workspace's collection the
 * documents each stream has not been sent yet, in seq order, as Server-Sent Events. */
import type { FastifyInstance } from 'fastify';
import { DomainError } from '../shared/errors.ts';
import type { CollectionName } from '../shared/model/index.ts';
import { streamEventData } from '../shared/wire/replication.ts';
import { sseComment, sseEvent } from '../shared/wire/sse.ts';
import type { SqlDatabase } from './db.ts';
import type { CommitEvent } from './pg-store.ts';
import type { ServerMetrics } from './metrics.ts';
import { changesSince } from './replication-changes.ts';

export type StreamLimits = { perKey: number; perProcess: number; bufferBytes: number; metrics?: ServerMetrics };

export type Subscriber = {
  workspaceId: string;
  keyId: string;
  collection: CollectionName;
  lastSeq: number;
  res: NodeJS.WritableStream & { end(): void; destroy(): void; destroyed?: boolean; writableLength: number; on(e: 'close', f: () => void): unknown };
};

/** Live streams: on every change of a workspace's collection, each subscriber gets the documents
 * after the last one it was sent, in seq order. One query per group of subscribers at the same point. */
export class StreamHub {
  private readonly subs = new Set<Subscriber>();
  private readonly pumping = new Map<string, Promise<void>>();
  private readonly again = new Set<string>();
  private readonly heartbeat: NodeJS.Timeout;
  private closed = false;
  private readonly perKey = new Map<string, number>();
  /** Streams admitted and not yet closed (counted from admission, so concurrent opens cannot pass). */
  private open = 0;

  constructor(
    private readonly sql: SqlDatabase,
    private readonly log: FastifyInstance['log'],
    heartbeatMs: number,
    private readonly limits: StreamLimits,
  ) {
    this.heartbeat = setInterval(() => {
      for (const s of this.subs) this.send(s, sseComment('ping'));
    }, heartbeatMs);
    this.heartbeat.unref();
  }

  /** Refuses a new stream over the key's or the process's cap (429, nothing opened). */
  admit(keyId: string): void {
    const mine = this.perKey.get(keyId) ?? 0;
    const refuse = (scope: 'key' | 'process', limit: number): never => {
      this.limits.metrics?.refused.inc({ reason: `streams_per_${scope}` });
      throw new DomainError(
        'RATE_LIMITED',
        scope === 'key'
          ? `This API key already has ${mine} live replication streams open, the most allowed (${limit}); close one (or another desktop) first.`
          : `This server has the most live replication streams it holds (${limit}); retry in a moment (another server process may have room).`,
        { reason: `streams_per_${scope}`, limit, retryAfterSeconds: 5 },
      );
    };
    if (mine >= this.limits.perKey) refuse('key', this.limits.perKey);
    if (this.open >= this.limits.perProcess) refuse('process', this.limits.perProcess);
    this.perKey.set(keyId, mine + 1);
    this.open += 1;
    this.limits.metrics?.streamsOpen.set(this.open);
  }

  /** Gives back an admission whose stream never opened (or closed). */
  release(keyId: string): void {
    const n = (this.perKey.get(keyId) ?? 1) - 1;
    if (n > 0) this.perKey.set(keyId, n);
    else this.perKey.delete(keyId);
    this.open = Math.max(0, this.open - 1);
    this.limits.metrics?.streamsOpen.set(this.open);
  }

  /** Writes to a stream unless its unsent data is over the bound: a client that does not read is
   * dropped (it reconnects, gets RESYNC and pulls from its checkpoint) instead of growing memory. */
  private send(s: Subscriber, chunk: string): void {
    if (s.res.destroyed) return;
    // The backlog, not the message: a page larger than the bound still goes to a client that keeps up.
    if (s.res.writableLength > this.limits.bufferBytes) {
      this.log.warn({ keyId: s.keyId, collection: s.collection, bufferedBytes: s.res.writableLength }, 'closing a live replication stream that does not keep up');
      this.limits.metrics?.refused.inc({ reason: 'stream_backpressure' });
      this.subs.delete(s);
      s.res.destroy();
      return;
    }
    s.res.write(chunk);
  }

  add(s: Subscriber, onClose?: () => void): void {
    this.subs.add(s);
    let released = false;
    const done = (): void => {
      this.subs.delete(s);
      if (!released) {
        released = true;
        this.release(s.keyId);
        onClose?.();
      }
    };
    s.res.on('close', done);
    if (s.res.destroyed || this.closed) done();
    // Changes committed between the start point and now.
    this.pump(s.workspaceId, s.collection);
  }

  changed(e: CommitEvent): void {
    for (const c of e.collections) this.pump(e.workspaceId, c);
  }

  /** Live streams open in this process. */
  get size(): number {
    return this.subs.size;
  }

  /** Sends RESYNC on every stream (its client pulls from its own checkpoint) after change events may
   * have been missed; with `catchUp`, also sends every stream what was committed after the last
   * document it was sent. */
  resync(opts: { catchUp: boolean }): void {
    if (this.closed) return;
    const groups = new Map<string, Subscriber>();
    for (const s of this.subs) {
      this.send(s, sseEvent(streamEventData('RESYNC')));
      groups.set(`${s.workspaceId}/${s.collection}`, s);
    }
    if (opts.catchUp) for (const s of groups.values()) this.pump(s.workspaceId, s.collection);
  }

  private pump(workspaceId: string, collection: CollectionName): void {
    if (this.closed) return;
    const key = `${workspaceId}/${collection}`;
    if (![...this.subs].some((s) => s.workspaceId === workspaceId && s.collection === collection)) return;
    if (this.pumping.has(key)) {
      this.again.add(key);
      return;
    }
    const run = (async () => {
      do {
        this.again.delete(key);
        await this.deliver(workspaceId, collection);
      } while (this.again.has(key) && !this.closed);
    })()
      .catch((err: unknown) => this.log.warn({ err }, 'live replication stream update failed'))
      .finally(() => this.pumping.delete(key));
    this.pumping.set(key, run);
  }

  private async deliver(workspaceId: string, collection: CollectionName): Promise<void> {
    for (;;) {
      const group = [...this.subs].filter((s) => s.workspaceId === workspaceId && s.collection === collection);
      if (group.length === 0) return;
      const from = Math.min(...group.map((s) => s.lastSeq));
      const page = await changesSince(this.sql, workspaceId, collection, from, 500);
      if (page.length === 0) return;
      for (const s of group) {
        const mine = page.filter((p) => p.seq > s.lastSeq);
        const last = mine[mine.length - 1];
        if (!last) continue;
        s.lastSeq = last.seq;
        this.send(s, sseEvent(streamEventData({ documents: mine.map((p) => p.doc), checkpoint: { seq: last.seq } })));
      }
      if (page.length < 500) return;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.heartbeat);
    for (const s of this.subs) s.res.end();
    this.subs.clear();
    await Promise.all([...this.pumping.values()]);
  }
}
