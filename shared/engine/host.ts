/**
 * Hosting the runner: a loop that ticks at an interval and never runs two ticks at once, used by
 * the desktop backend (for the senders whose accounts it holds) and by the sync server's
 * `--runner` mode (for server-side channels). Two hosts never work one sender: the runner takes a
 * lease on each sender (senders.runnerId / runnerLeaseUntil), renewed while it runs and released
 * on stop, so another host takes over at once after a clean stop, or when the lease lapses after
 * a crash.
 */
import type { Clock } from '../context.ts';
import type { Store } from '../store.ts';
import { paceOf } from './sandbox.ts';
import type { SandboxNetwork, SentRecord } from './sandbox.ts';
import type { Runner, TickReport } from './runner.ts';

type Timers = {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
};

export type RunnerHostOptions = {
  runner: Runner;
  /** Pause between the end of one tick and the start of the next. */
  intervalMs: number;
  onReport?: (report: TickReport) => void;
  onError?: (error: unknown) => void;
  /** Injected for tests; the platform's timers by default. */
  timers?: Timers;
};

export type RunnerHost = {
  start(): void;
  /** Stops the loop, waits for a tick in progress, and releases the runner's leases. */
  stop(): Promise<void>;
  /** Runs one tick now unless one is in progress (then waits for it and returns null). */
  tickNow(): Promise<TickReport | null>;
  readonly running: boolean;
  readonly lastReport: TickReport | null;
};

const platformTimers: Timers = {
  setTimeout: (fn, ms) => globalThis.setTimeout(fn, ms),
  clearTimeout: (h) => globalThis.clearTimeout(h as ReturnType<typeof globalThis.setTimeout>),
};

export function createRunnerHost(opts: RunnerHostOptions): RunnerHost {
  const timers = opts.timers ?? platformTimers;
  let running = false;
  let timer: unknown = null;
  let current: Promise<TickReport | null> | null = null;
  let lastReport: TickReport | null = null;

  function runOnce(): Promise<TickReport | null> {
    if (current) return current.then(() => null);
    current = opts.runner
      .tick()
      .then((report) => {
        lastReport = report;
        opts.onReport?.(report);
        return report;
      })
      .catch((e: unknown) => {
        opts.onError?.(e);
        return null;
      })
      .finally(() => {
        current = null;
      });
    return current;
  }

  function schedule(): void {
    if (!running) return;
    timer = timers.setTimeout(() => {
      timer = null;
      void runOnce().then(schedule);
    }, opts.intervalMs);
  }

  return {
    start() {
      if (running) return;
      running = true;
      void runOnce().then(schedule);
    },
    async stop() {
      running = false;
      if (timer !== null) timers.clearTimeout(timer);
      timer = null;
      if (current) await current;
      await opts.runner.release();
    },
    tickNow: () => runOnce(),
    get running() {
      return running;
    },
    get lastReport() {
      return lastReport;
    },
  };
}

/**
 * After a restart of a host that runs the sandbox network in its own process, tells the network
 * what was already sent (from the store), so people who were about to accept or reply still do.
 * Events up to each sender's stored poll cursor were recorded and are not delivered again.
 */
export async function restoreSandbox(store: Store, network: SandboxNetwork, clock: Clock, lookbackDays = 14): Promise<number> {
  const { docs: senders } = await store.query('senders', { where: { op: 'eq', field: 'channel', value: 'sandbox' } });
  if (senders.length === 0) return 0;
  const since = new Date(clock.now().getTime() - lookbackDays * 86_400_000).toISOString();
  const { docs } = await store.query('messages', {
    where: {
      op: 'and',
      conds: [
        { op: 'eq', field: 'direction', value: 'out' },
        { op: 'eq', field: 'status', value: 'sent' },
        { op: 'in', field: 'sdrProfileId', values: senders.map((s) => s.id) },
        { op: 'gte', field: 'sentAt', value: since },
      ],
    },
  });
  const byId = new Map(senders.map((s) => [s.id, s]));
  const records: SentRecord[] = docs.map((m) => {
    const sentAt = m.sentAt ?? m.createdAt;
    const sender = byId.get(m.sdrProfileId);
    return {
      id: m.id, sdrProfileId: m.sdrProfileId, leadId: m.leadId, kind: m.kind, chatId: m.chatId, externalId: m.externalId, text: m.text, sentAt,
      pace: sender ? paceOf(sender, sentAt) : 'realistic',
    };
  });
  network.restore(records);
  return records.length;
}
