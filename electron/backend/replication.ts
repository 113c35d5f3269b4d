/**
 * Keeps a workspace's local database in step with its sync server: one RxDB replication ("lane") per
 * collection over the endpoints of API-CONTRACT.md "Replication endpoints", and the sync status the
 * UI shows (online or offline and why, changes the server has not acknowledged, refusals with their
 * reasons). The parts live beside it, one job each:
 *
 * - server-client.ts: every request (key, schema version, time limits, error mapping);
 * - replication-pull.ts: pull pages by the server's `seq` checkpoint, one page fetched ahead;
 * - replication-stream.ts: the live stream, reconnected with backoff, RESYNC on every connect;
 * - replication-merge.ts: the conflict handler (a refusal takes the server's state, a concurrent
 *   edit is merged three ways);
 * - rxdb-internals.ts: RxDB's names for its own writes, which tell pulled documents from local ones.
 *
 * Here: the lanes, the order in which they push, what counts as pending, and fetching the reasons
 * of refusals (GET /replication/refusals).
 */
import { setImmediate as turn, setTimeout as delay } from 'node:timers/promises';
import { replicateRxCollection } from 'rxdb/plugins/replication';
import type { RxReplicationState } from 'rxdb/plugins/replication';
import type { RxCollection, RxDatabase, RxReplicationPullStreamItem, RxReplicationWriteToMasterRow, WithDeleted } from 'rxdb';
import { Subject } from 'rxjs';
import type { Subscription } from 'rxjs';
import { REPLICATED_COLLECTIONS } from '../../shared/model/index.ts';
import type { CollectionName } from '../../shared/model/index.ts';
import { pushAnswerSchema, refusalsListSchema } from '../../shared/wire/replication.ts';
import type { Checkpoint, PullPage, PushRow } from '../../shared/wire/replication.ts';
import type { LocalDb } from './local-db-port.ts';
import { isRefusal, sameDocument } from './replication-merge.ts';
import { PulledLoader } from './replication-load.ts';
import { PullPages } from './replication-pull.ts';
import { followStream } from './replication-stream.ts';
import { isConflictWrite, isDownstreamWrite } from './rxdb-internals.ts';
import { ServerClient, ServerError } from './server-client.ts';
import type { StartSync } from './session.ts';
import { localInstanceOf } from './storage/local-instance.ts';
import type { LocalInstance } from './storage/local-instance.ts';
import { SyncStatusTracker } from './sync-status.ts';
import type { SyncStatus } from './sync-status.ts';

type Json = Record<string, unknown>;
type Doc = WithDeleted<Json>;

export type SyncOptions = {
  /** The local database (a LocalDb); replication needs only its RxDB database. */
  db: Partial<LocalDb> & { rx?: RxDatabase };
  serverUrl: string;
  apiKey: string;
  fetch?: typeof fetch;
  /** The collections to replicate (default: every replicated collection of shared/model). */
  collections?: readonly CollectionName[];
  /** Documents per pull request (default 2000, the server's largest page; a pull's first request
   * asks for fewer: PULL_RAMP) and per push request (default 100). */
  pullBatchSize?: number;
  pushBatchSize?: number;
  /** Wait before retrying a failed pull or push (default 2 s). */
  retryMs?: number;
  /** Stream reconnect backoff: first wait and cap (default 250 ms, 30 s). */
  backoffMs?: number;
  maxBackoffMs?: number;
  /** Reconnect a stream that has been silent this long (default 45 s; servers send heartbeats). */
  streamIdleMs?: number;
  now?: () => Date;
  random?: () => number;
  log?: (line: string) => void;
};

/** A running sync: its status for the UI, and controls. */
export type Sync = {
  status(): SyncStatus;
  onStatus(listener: (s: SyncStatus) => void): () => void;
  /** Resolves when every collection has pulled what the server had and pushed every local change. */
  awaitInSync(): Promise<void>;
  /** Stops talking to the server (as if the network were gone); local work goes on. */
  pause(): Promise<void>;
  resume(): Promise<void>;
  stop(): Promise<void>;
};

type Lane = {
  collection: CollectionName;
  /** The collection's local storage instance (null on a storage without one, as in some tests). */
  instance: LocalInstance | null;
  state: RxReplicationState<Json, Checkpoint>;
  stream: Subject<RxReplicationPullStreamItem<Json, Checkpoint>>;
  abort: AbortController | null;
  loop: Promise<void> | null;
  /** The replication is being replaced after a lost pulled page (startOver), or null. */
  startingOver: Promise<void> | null;
  /** Resolves when `state` is replaced (awaitInSync then waits for the new one), and resolves it. */
  replacedNow: Promise<void>;
  replaced: () => void;
  /** Its replication has been asked to start (startLanes). */
  started: boolean;
};

/**
 * The collections whose documents a collection's documents point at. The server refuses a pushed
 * reference to something it does not have, and every collection replicates on its own lane, so a
 * lead written offline with a new tag could otherwise reach the server before its tag and be refused.
 * A lane therefore pushes only once the lanes it depends on have pushed what they hold.
 */
export const PUSH_AFTER: Partial<Record<CollectionName, readonly CollectionName[]>> = {
  senders: ['members'],
  leads: ['tags', 'leadGroups', 'stages'],
  campaigns: ['leadGroups', 'senders'],
  activities: ['leads', 'members'],
  enrollments: ['leads', 'campaigns', 'senders'],
  messages: ['leads', 'campaigns', 'senders'],
  usage: ['senders'],
};

/** How long a push waits for the lanes it depends on before trying anyway (the server then judges). */
const PUSH_ORDER_WAIT_MS = 30_000;

/** Resolves two turns of the event loop later: after the work the current turn queued
 * (setImmediate) and in a turn of its own, wherever it is called from (an immediate queued from
 * the poll phase runs in the same turn's check phase). */
const nextTurns = async (): Promise<void> => {
  await turn();
  await turn();
};

const errorText = (e: unknown): string => (e instanceof Error ? e.message : String(e));

/**
 * The first page of each pull, when pull pages are large (`from` documents or more: the default
 * page): `first` documents, then full pages. RxDB handles a pulled page in one task of the event loop (a clone of
 * every document, its conflict checks, the meta rows), and the first page of a sync runs that code
 * cold (not yet optimized): 81 ms of CPU for a first page of 2,000 leads, the longest task of an
 * initial sync. RxDB goes on pulling while a page holds at least its batch size, so RxDB is given
 * `first` as its batch size and the handler asks the server for full pages once a pull is under
 * way; a pull whose last page is shorter than a full one but not than `first` ends with one more
 * request, which finds nothing (or what the server wrote meanwhile).
 */
export const PULL_RAMP = { first: 250, from: 2000 };

/**
 * A pull page of at least twice this many documents is handed to RxDB in parts of this many (a full
 * page of 2,000: two of 1,000), each its own write (replication-pull.ts `split`). What a page costs
 * the event loop grows with its size: RxDB's handling of it in one task, and the garbage collector's
 * scavenges, which copy what is alive when they run, and a page's objects live from its parse to its
 * COMMIT (measured 2026-11-30, 100k leads: the largest scavenge copied 9.0 MB with writes of 2,000,
 * 7.2 MB with writes of 1,000). A part stays a bulk write of the storage (BULK_ROWS, 1,000, in
 * storage/sqlite/doc-table.ts: in a table with fewer rows it starts a load and its indexes are
 * built after it; writes of 500 left every index written row by row, twice the CPU). The fetch
 * stays a full page: half the round trips of pages of 1,000 over a real network.
 */
export const PULL_PART = 1000;

/** Starts replicating every replicated collection of the local database with the sync server. */
export async function startSync(opts: SyncOptions): Promise<Sync> {
  const rx = opts.db.rx;
  if (!rx) throw new Error('Replication needs the RxDB local database (openLocalDatabase).');
  const client = new ServerClient(opts.serverUrl, opts.apiKey, opts.fetch);
  const now = opts.now ?? (() => new Date());
  const status = new SyncStatusTracker(now);
  const log = opts.log ?? (() => undefined);
  const subs: Subscription[] = [];
  // Refusal times are the server's clock: start a day back so a skewed desktop clock cannot hide
  // them (and recent ones from before a restart are shown); afterwards follow the server's times.
  let refusalsSince = new Date(now().getTime() - 86_400_000).toISOString();
  let paused = false;
  /** Pauses so far: a pull handler's call that a pause overlapped drops its page's parts left. */
  let pauses = 0;
  let stopped = false;

  const fail = (e: unknown): never => {
    const err = e instanceof ServerError ? e : new ServerError('INTERNAL', errorText(e), 0);
    if (err.needsUser) status.fatalError(err.message);
    else status.requestFailed(err.message);
    throw err;
  };

  /** Fetches the reasons of refusals recorded since the last look, and shows them. */
  let refusalFetch: Promise<void> | null = null;
  const fetchRefusals = (): Promise<void> => {
    refusalFetch ??= (async () => {
      try {
        const { refusals } = await client.checked(refusalsListSchema, `/replication/refusals?since=${encodeURIComponent(refusalsSince)}`);
        for (const { collection, documentId, code, message, at } of refusals) {
          status.explainRefusal({ collection, documentId, code, message, at });
          if (at > refusalsSince) refusalsSince = at;
        }
      } catch (e) {
        log(`Could not fetch refusal reasons: ${errorText(e)}`);
      } finally {
        refusalFetch = null;
      }
    })();
    return refusalFetch;
  };

  const lanes: Lane[] = [];
  /** Waits (bounded) until the lanes `c` depends on have nothing left to push or pull. */
  const parentsPushed = async (c: CollectionName): Promise<void> => {
    const parents = lanes.filter((l) => (PUSH_AFTER[c] ?? []).includes(l.collection));
    if (parents.length === 0) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      Promise.all(parents.map((l) => l.state.awaitInSync())),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, PUSH_ORDER_WAIT_MS);
      }),
    ]);
    clearTimeout(timer);
  };
  /** Conflicts resolved by taking the server's document, until that write lands in the fork. */
  const tookServerState = new Map<string, Doc>();
  let watchingBuilds = false;
  const unwatch: (() => void)[] = [];
  /** Each lane's pull pages (its current replication's): a pause drops their parts not handed out. */
  const pullPages = new Map<CollectionName, PullPages>();
  /** The lane's RxDB replication from its stored checkpoints, not yet started (startLanes starts it, or startOver). */
  const replicate = (c: CollectionName, collection: RxCollection<Json>, instance: LocalInstance | null, stream: Subject<RxReplicationPullStreamItem<Json, Checkpoint>>): RxReplicationState<Json, Checkpoint> => {
    const pages = new PullPages(client, c);
    pullPages.set(c, pages);
    const fullPage = opts.pullBatchSize ?? 2000;
    /** RxDB's batch size: a pull goes on while a page holds this many (PULL_RAMP). */
    const rxBatch = fullPage >= PULL_RAMP.from ? Math.min(PULL_RAMP.first, fullPage) : fullPage;
    /** The last page was full: the next pull continues this one (no new count of what remains). */
    let pulling = false;
    /** The last page was shorter than asked for but not than RxDB's batch size: RxDB asks once
     * more, which ends the pull (not a new one: no count). */
    let ending = false;
    /** Stores pulled pages of new documents itself (created at the first pull: it needs the started replication). */
    let loader: PulledLoader | null = null;
    /** The page after `checkpoint`, fetched (or fetched ahead) and counted for the status; its first
     * part (PULL_PART) returned, the others left for nextPart. */
    const fetchPage = async (checkpoint: Checkpoint | null): Promise<PullPage> => {
      const batchSize = pulling ? fullPage : rxBatch;
      // The storage's bulk load (an initial sync into an empty table) builds the indexes it left
      // out once pulled pages pause for its quiet window (1.5 s), which a slow server or network
      // reaches mid-pull; every later page then writes those indexes row by row (a 300k sync:
      // 229 s of CPU against 95 s with the builds after it). So the builds wait while a page is
      // asked for (the first one after a reopen can continue a load a quit cut short) and while
      // the pages come full (more are waiting); the storage bounds each hold (LOAD_HOLD_MS, 30 s
      // without a page), and a pull that ends, fails or is stopped releases it at once.
      instance?.holdLoad(!paused && !stopped);
      // A pull that starts (first after startup or a resume, or after being caught up) asks how
      // many documents remain, for the status's "n of m".
      const page = await pages.take(checkpoint, batchSize, !pulling && !ending).catch((e: unknown) => {
        instance?.holdLoad(false);
        return fail(e);
      });
      pulling = page.documents.length >= batchSize;
      ending = !pulling && page.documents.length >= rxBatch;
      instance?.holdLoad(pulling && !paused && !stopped);
      status.requestOk();
      status.pulledPage(c, page.documents.length, pulling, page.remaining);
      if (pulling) {
        // A full page means more is waiting: ask for the next one now, and let the request go
        // out before RxDB stores this page (its storing runs as one long chain of promise
        // callbacks, which would otherwise hold the request back until it is done), so the
        // server reads and sends the next page while this one is stored.
        pages.prefetch(page.checkpoint, fullPage);
      }
      return pages.split(page, checkpoint, PULL_PART);
    };
    const state = replicateRxCollection<Json, Checkpoint>({
      collection,
      replicationIdentifier: `outreach-crm-sync|${client.serverUrl}`,
      live: true,
      retryTime: opts.retryMs ?? 2_000,
      waitForLeadership: false,
      // Started one lane a turn (startLanes), or by startOver.
      autoStart: false,
      pull: {
        // Big pages: fewer round trips and fewer (larger) storage transactions per pulled document;
        // the first of a pull smaller (PULL_RAMP).
        batchSize: rxBatch,
        stream$: stream.asObservable(),
        handler: async (checkpoint) => {
          const pausesAtStart = pauses;
          let from = checkpoint ?? null;
          for (;;) {
            // The next part of the page fetched last (PULL_PART), or a page to fetch.
            const part = pages.nextPart(from) ?? (await fetchPage(from));
            // RxDB takes a page while it still stores the one before (it pulls ahead without bound,
            // and merges the pages it has not begun to store into one write), and begins this one
            // in the same turn of the event loop as it finishes that one (its meta rows' write
            // resolving, its checkpoint): 100-160 ms of CPU in one turn during an initial sync.
            // So a page (or part) is handed over once the storage's page before it has been written
            // (RxDB asks to store a page in the turn it gets it: two turns later that page is open, or
            // waits in the file's queue behind writes that came while another page was open, such
            // as other lanes' starts; a page that has not opened yet is not written either), and two
            // turns after that: after RxDB's end of that page, in a turn of its own (not the one
            // that parsed this page's answer either). Storing stays one page at a time as before;
            // the fetches still run ahead (the prefetch in fetchPage).
            await nextTurns();
            await instance?.pagesWritten();
            await nextTurns();
            // Returned while paused, RxDB drops this part (the pause's forget came before a page
            // fetched meanwhile was split). RxDB's own pause and start follow ours later (its queue),
            // so a part returned right after a resume may be dropped too: any pause during this call
            // drops the parts left, and the page is asked for again from the stored checkpoint.
            const interrupted = paused || stopped || pauses !== pausesAtStart;
            if (interrupted) pages.forget();
            // Documents none of which is stored (an initial sync, or its resumption) are stored here
            // with their checkpoint, without RxDB's per-document work (replication-load.ts); a page
            // holding a stored document is RxDB's, which compares the states.
            loader ??= instance ? new PulledLoader(state) : null;
            if (interrupted || !loader || !(await loader.store(part))) return { documents: part.documents, checkpoint: part.checkpoint ?? undefined };
            from = part.checkpoint;
            // The pull goes on while pages come full (or parts of one remain); after the last one,
            // RxDB is told the pull is over (no documents: it stores no checkpoint, this one is).
            if (!pulling && !pages.splitting) {
              ending = false;
              return { documents: [], checkpoint: from ?? undefined };
            }
          }
        },
      },
      push: {
        batchSize: opts.pushBatchSize ?? 100,
        handler: async (rows: RxReplicationWriteToMasterRow<Json>[]) => {
          for (const r of rows) status.addPending(`${c}/${String(r.newDocumentState.id)}`);
          await parentsPushed(c);
          const conflicts = await client.checked(pushAnswerSchema, `/replication/${c}/push`, { method: 'POST', body: rows satisfies PushRow[], collection: c }).catch(fail);
          status.requestOk();
          return conflicts;
        },
      },
    });
    subs.push(
      state.sent$.subscribe((doc) => {
        const id = String(doc.id);
        const current = instance?.current(id);
        if (!current || sameDocument(current, doc)) status.acknowledged(`${c}/${id}`);
      }),
      state.conflict$.subscribe((conflict) => {
        const id = String(conflict.input.newDocumentState.id);
        if (sameDocument(conflict.output, conflict.input.realMasterState)) tookServerState.set(`${c}/${id}`, conflict.input.realMasterState);
        if (!isRefusal(conflict.input)) return;
        status.addRefusals([{ collection: c, documentId: id, code: 'REFUSED', message: 'The sync server refused this change; its version was restored.', at: now().toISOString() }]);
        void fetchRefusals();
      }),
      state.error$.subscribe((e) => log(`${c}: ${errorText(e)}`)),
    );
    return state;
  };

  /**
   * A pulled write of the lane's collection failed after RxDB may have been told it was stored (a
   * full disk: local-instance.ts onPulledPageLost). RxDB's replication would go on with the next
   * page and store a checkpoint past the lost one, so it is stopped (a stopped replication stores
   * no checkpoint; the storage refuses its pulled writes meanwhile) and replaced, after the retry
   * wait, by one that pulls from the stored checkpoint: the lost page again.
   */
  const startOver = (lane: Lane, why: unknown): void => {
    status.storeFailed(lane.collection, why);
    if (lane.startingOver || stopped) return;
    const old = lane.state;
    lane.startingOver = (async () => {
      log(`${lane.collection}: a pulled page could not be stored; pulling again from the last stored checkpoint.`);
      await old.cancel();
      await delay(opts.retryMs ?? 2_000, undefined, { ref: false });
      lane.startingOver = null;
      const collection = rx.collections[lane.collection] as RxCollection<Json> | undefined;
      if (stopped || !collection) return;
      lane.instance?.acceptPulls();
      lane.state = replicate(lane.collection, collection, lane.instance, lane.stream);
      // A lane paused meanwhile is started by the resume (it was started before).
      if (!paused) void lane.state.start().catch(() => undefined);
      lane.replaced();
      lane.replacedNow = new Promise((r) => (lane.replaced = r));
    })();
  };

  for (const c of opts.collections ?? REPLICATED_COLLECTIONS) {
    const collection = rx.collections[c] as RxCollection<Json> | undefined;
    if (!collection) throw new Error(`The local database has no ${c} collection.`);
    const stream = new Subject<RxReplicationPullStreamItem<Json, Checkpoint>>();
    const instance = localInstanceOf(collection.storageInstance);
    let replaced = (): void => undefined;
    const replacedNow = new Promise<void>((r) => (replaced = r));
    const lane: Lane = { collection: c, instance, state: replicate(c, collection, instance, stream), stream, abort: null, loop: null, startingOver: null, replacedNow, replaced, started: false };
    lanes.push(lane);
    if (instance) unwatch.push(instance.onPulledPageLost((why) => startOver(lane, why)));

    // Pending: local writes (anything but the replication's own downstream writes) until the server
    // has the document's current state.
    // Index builds of the database's file (one file: watched through the first collection).
    if (instance && !watchingBuilds) {
      watchingBuilds = true;
      unwatch.push(instance.watchBuilds((what) => status.buildingIndex(what)));
    }
    if (instance) {
      subs.push(
        instance.changeStream().subscribe((bulk) => {
          if (isDownstreamWrite(bulk.context)) {
            // Stored (change events follow the COMMIT): a storage problem said before is over.
            status.pageStored(c);
            // RxDB only pulls over documents without unpushed local changes: these match the server.
            if (status.pendingCount() > 0) for (const ev of bulk.events) status.acknowledged(`${c}/${ev.documentId}`);
            return;
          }
          for (const ev of bulk.events) {
            const key = `${c}/${ev.documentId}`;
            const master = tookServerState.get(key);
            tookServerState.delete(key);
            // A conflict resolved to exactly the server's state leaves nothing to push.
            if (isConflictWrite(bulk.context) && master && sameDocument(ev.documentData, master)) status.acknowledged(key);
            else status.addPending(key);
          }
        }),
      );
    }
  }

  const timings = { backoffMs: opts.backoffMs ?? 250, maxBackoffMs: opts.maxBackoffMs ?? 30_000, idleMs: opts.streamIdleMs ?? 45_000, random: opts.random ?? Math.random };
  const startStreams = () => {
    for (const lane of lanes) {
      const abort = new AbortController();
      lane.abort = abort;
      lane.loop = followStream(client, lane.collection, abort.signal, timings, {
        up: () => status.streamUp(lane.collection),
        event: (e) => lane.stream.next(e),
        down: (err) => {
          if (err.needsUser) status.fatalError(err.message);
          status.streamDown(lane.collection, err.message);
        },
      });
    }
  };
  const stopStreams = async () => {
    for (const lane of lanes) lane.abort?.abort();
    await Promise.all(lanes.map((l) => l.loop));
    for (const lane of lanes) {
      lane.abort = null;
      lane.loop = null;
    }
  };

  /**
   * Starts the lanes not yet started, one at a time, each after the one before has started and in a
   * turn of the event loop of its own. A replication's start opens its meta instance (a table and
   * its indexes, linked to the collection's) and records it in RxDB's internal store: started
   * together (RxDB's autoStart), the 12 lanes did that in one turn, 114-133 ms of CPU, the longest
   * task of an initial sync. Stops at a pause or a stop; a resume goes on with the lanes left.
   * The lanes started first pull meanwhile: a start's writes asked for while one of their pages is
   * open wait in the file's queue, and the next page waits for them (pagesWritten, in the pull
   * handler), so it is still stored on its own.
   */
  let starting: Promise<void> | null = null;
  const startLanes = (): Promise<void> => {
    starting ??= (async () => {
      try {
        for (const lane of lanes) {
          if (paused || stopped) return;
          if (lane.started) continue;
          lane.started = true;
          // A failed start is emitted on error$ (logged above) and leaves the lane to be started
          // again by a resume, as RxDB's autoStart did.
          await lane.state.start().catch(() => undefined);
          await nextTurns();
        }
      } finally {
        starting = null;
      }
    })();
    return starting;
  };

  void startLanes();
  startStreams();
  void fetchRefusals();

  /** A pause or a stop: no pull goes on, so the index builds of a load start once it is quiet, at
   * once rather than after a page still in flight (which then holds nothing: see the pull handler). */
  const releaseLoads = (): void => {
    for (const l of lanes) l.instance?.holdLoad(false);
  };

  const sync: Sync = {
    status: () => status.get(),
    onStatus: (listener) => status.subscribe(listener),
    async awaitInSync() {
      for (;;) {
        // A lane started over meanwhile (its replication replaced: startOver) is waited for again.
        const states = lanes.map((l) => l.state);
        await Promise.all(lanes.map((l) => Promise.race([l.state.awaitInSync(), l.replacedNow])));
        if (lanes.some((l, i) => l.state !== states[i] || l.startingOver)) continue;
        if (status.pendingCount() === 0) return;
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    async pause() {
      if (paused || stopped) return;
      paused = true;
      pauses++;
      releaseLoads();
      // RxDB drops a part its pull handler returns while paused, and asks again from its stored
      // checkpoint, which is the one that part carried: the part after it would skip it.
      for (const p of pullPages.values()) p.forget();
      status.setStopped(true);
      await Promise.all(lanes.map((l) => l.state.pause()));
      await stopStreams();
    },
    async resume() {
      if (!paused || stopped) return;
      paused = false;
      status.setStopped(false);
      // The lanes started before the pause sync again; the others start one a turn as at first.
      await Promise.all(lanes.filter((l) => l.started).map((l) => l.state.start()));
      void (starting ?? Promise.resolve()).then(startLanes);
      startStreams();
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      releaseLoads();
      status.setStopped(true);
      await stopStreams();
      await Promise.all(lanes.map((l) => l.state.cancel()));
      for (const s of subs) s.unsubscribe();
      for (const u of unwatch) u();
      for (const l of lanes) l.stream.complete();
    },
  };
  return sync;
}

// The desktop session starts sync through this shape (electron/backend/session.ts).
const _fitsSession: StartSync = startSync;
