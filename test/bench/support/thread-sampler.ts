/** Bench support: where the machine's CPU went while something ran (Linux; elsewhere it samples
 * nothing and `available` is false). Samples, every few milliseconds: each chosen thread's time on a
 * CPU and time ready but waiting in the run queue for one (/proc/<pid>/task/<tid>/schedstat, ns);
 * each process's CPU (/proc/<pid>/stat, 10 ms ticks) under the given roots; the machine's CPU lines
 * (/proc/stat: busy, stolen). So a slow window (a frame over 50 ms) can be told apart: a thread of ours
 * busy, or ready and waiting for a core that something else held. */
import { closeSync, existsSync, openSync, readdirSync, readFileSync, readSync } from 'node:fs';

type ThreadKey = string;
export type ThreadInfo = { pid: number; tid: number; process: string; name: string };
type Sample = { at: number; threads: Map<ThreadKey, [number, number]>; processes: Map<number, number>; cpu: { busy: number; steal: number } };

export type SampledWindow = {
  /** The samples the window spans (ms since the epoch): the last at or before its start, the first at
   * or after its end. */
  span: [number, number];
  /** Per sampled thread: ms on a CPU and ms waiting for one, most first. */
  threads: { thread: ThreadInfo; run: number; wait: number }[];
  /** CPU (ms) of the processes under the roots (the browser's, the app's, the bench's): their 10 ms
   * ticks, or the sampled threads' CPU when that is more. */
  ours: number;
  /** The machine's CPU (ms summed over its cores): busy, taken by the hypervisor. */
  cpu: { busy: number; steal: number };
};

const read = (path: string): string | null => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
};

/** The files read at every sample, kept open and read again from their start (a fifth of the CPU
 * of opening them each time: the sampler competes with what it measures). */
class ProcFiles {
  private readonly fds = new Map<string, number | null>();
  private readonly buffer = Buffer.alloc(8192);

  read(path: string): string | null {
    let fd = this.fds.get(path);
    if (fd === undefined) {
      try {
        fd = openSync(path, 'r');
      } catch {
        fd = null;
      }
      this.fds.set(path, fd);
    }
    if (fd === null) return null;
    try {
      return this.buffer.toString('utf8', 0, readSync(fd, this.buffer, 0, this.buffer.length, 0));
    } catch {
      return null;
    }
  }

  close(): void {
    for (const fd of this.fds.values()) if (fd !== null) closeSync(fd);
    this.fds.clear();
  }
}

/** The processes under `root` (itself included), by parent links in /proc. */
function descendants(root: number): number[] {
  const parent = new Map<number, number>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const ppid = Number(read(`/proc/${d}/stat`)?.split(') ')[1]?.split(' ')[1]);
    if (Number.isFinite(ppid)) parent.set(Number(d), ppid);
  }
  const out = [root];
  for (let i = 0; i < out.length; i++) for (const [pid, pp] of parent) if (pp === out[i]) out.push(pid);
  return out;
}

/** A short name for a process: Chromium's --type (renderer, gpu-process, a utility's sub-type), or
 * node and its script. */
function processLabel(pid: number): string {
  // Chromium rewrites its command line into one string (spaces, not NULs, between arguments).
  const cmd = (read(`/proc/${pid}/cmdline`) ?? '').replaceAll('\0', ' ');
  const type = /--type=(\S+)/.exec(cmd)?.[1];
  const sub = /--utility-sub-type=(\S+)/.exec(cmd)?.[1]?.split('.').pop();
  const exe = (read(`/proc/${pid}/comm`) ?? '?').trim();
  if (type) return `${exe}:${sub ?? type}`;
  // node, by its script (node's main thread names the process after itself: MainThread).
  if (exe === 'node' || exe === 'MainThread') return `node:${/(\S+\.(?:ts|mjs|cjs|js))\b/.exec(cmd)?.[1]?.split('/').pop() ?? ''}`;
  return exe;
}

/** Every process on the machine: its CPU (user + system, ms) and a short name. */
function everyProcess(): Map<number, { name: string; cpu: number }> {
  const out = new Map<number, { name: string; cpu: number }>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const stat = read(`/proc/${d}/stat`);
    const f = stat?.split(') ')[1]?.split(' ');
    if (!stat || !f) continue;
    out.set(Number(d), { name: processLabel(Number(d)), cpu: (Number(f[11]) + Number(f[12])) * 10 });
  }
  return out;
}

/** A process's CPU (user + system), ms. */
const processCpu = (files: ProcFiles, pid: number): number => {
  const f = files.read(`/proc/${pid}/stat`)?.split(') ')[1]?.split(' ') ?? [];
  return (Number(f[11]) + Number(f[12])) * 10;
};

function machineCpu(files: ProcFiles): Sample['cpu'] {
  const line = (files.read('/proc/stat') ?? '').split('\n')[0]?.trim().split(/\s+/).slice(1).map(Number) ?? [];
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = line;
  // Clock ticks (10 ms) summed over the cores.
  return { busy: (user + nice + system + irq + softirq) * 10, steal: steal * 10 };
}

export class ThreadSampler {
  readonly available = existsSync('/proc/self/task') && existsSync('/proc/stat');
  private samples: Sample[] = [];
  /** Every process's CPU (ms) and name when sampling started and stopped. */
  private everyone: [Map<number, { name: string; cpu: number }>, Map<number, { name: string; cpu: number }>] = [new Map(), new Map()];
  private timer: NodeJS.Timeout | undefined;
  private threads = new Map<ThreadKey, ThreadInfo>();
  /** The threads read at each sample: the chosen ones that ran since the last scan (an idle thread
   * cannot have waited for a core), and new ones. */
  private active = new Set<ThreadKey>();
  private ranAtScan = new Map<ThreadKey, number>();
  private lastScan = 0;
  private pids: number[] = [];
  private lastPids = 0;
  private readonly files = new ProcFiles();
  /** Time spent sampling (ms): what the sampler took from the machine it measures. */
  spent = 0;

  /** `roots`: the processes whose trees are ours; `choose`: which of their threads to read (all by
   * default: a diagnostic; a bench reads a few, to stay light). */
  constructor(
    private readonly roots: () => number[],
    private readonly choose: (t: ThreadInfo) => boolean = () => true,
    private readonly everyMs = 10,
  ) {}

  private scan(): void {
    if (Date.now() - this.lastPids > 2000) {
      this.pids = this.roots().flatMap(descendants);
      this.lastPids = Date.now();
    }
    const active = new Set<ThreadKey>();
    for (const pid of this.pids) {
      let tids: string[] = [];
      try {
        tids = readdirSync(`/proc/${pid}/task`);
      } catch {
        continue;
      }
      let label: string | undefined;
      for (const t of tids) {
        const key = `${pid}/${t}`;
        let info = this.threads.get(key);
        if (!info) {
          label ??= processLabel(pid);
          info = { pid, tid: Number(t), process: `${label}[${pid}]`, name: (read(`/proc/${pid}/task/${t}/comm`) ?? '?').trim() };
          this.threads.set(key, info);
        }
        if (!this.choose(info)) continue;
        const run = Number(this.files.read(`/proc/${pid}/task/${t}/schedstat`)?.split(' ')[0] ?? NaN);
        const before = this.ranAtScan.get(key);
        if (before === undefined || run > before) active.add(key);
        this.ranAtScan.set(key, run);
      }
    }
    this.active = active;
    this.lastScan = Date.now();
  }

  private sample(): void {
    const t0 = performance.now();
    if (Date.now() - this.lastScan > 250) this.scan();
    const threads = new Map<ThreadKey, [number, number]>();
    for (const key of this.active) {
      const t = this.threads.get(key);
      const s = t && this.files.read(`/proc/${t.pid}/task/${t.tid}/schedstat`);
      if (!s) continue;
      const [run = 0, wait = 0] = s.split(' ').map(Number);
      threads.set(key, [run, wait]);
    }
    const processes = new Map<number, number>();
    for (const pid of this.pids) processes.set(pid, processCpu(this.files, pid));
    this.samples.push({ at: performance.timeOrigin + performance.now(), threads, processes, cpu: machineCpu(this.files) });
    this.spent += performance.now() - t0;
  }

  start(): void {
    if (!this.available) return;
    this.everyone[0] = everyProcess();
    this.lastPids = 0;
    this.scan();
    this.sample();
    this.timer = setInterval(() => this.sample(), this.everyMs);
  }

  stop(): void {
    if (!this.timer) return;
    clearInterval(this.timer);
    this.timer = undefined;
    this.sample();
    this.everyone[1] = everyProcess();
    this.files.close();
  }

  /** The processes outside the roots that used the most CPU between start and stop: name (with
   * node's script or Chromium's type) and ms. */
  others(n: number): { name: string; cpu: number }[] {
    const ours = new Set(this.pids);
    const out: { name: string; cpu: number }[] = [];
    for (const [pid, after] of this.everyone[1]) {
      if (ours.has(pid)) continue;
      const cpu = after.cpu - (this.everyone[0].get(pid)?.cpu ?? 0);
      if (cpu > 0) out.push({ name: after.name, cpu });
    }
    return out.sort((a, b) => b.cpu - a.cpu).slice(0, n);
  }

  /** What the samples around [from, to] (ms since the epoch) saw; null without samples on both sides. */
  window(from: number, to: number): SampledWindow | null {
    const a = this.samples.findLast((s) => s.at <= from);
    const b = this.samples.find((s) => s.at >= to);
    if (!a || !b) return null;
    const threads: SampledWindow['threads'] = [];
    for (const [key, [run, wait]] of b.threads) {
      const before = a.threads.get(key);
      const thread = this.threads.get(key);
      if (before && thread) threads.push({ thread, run: (run - before[0]) / 1e6, wait: (wait - before[1]) / 1e6 });
    }
    // The processes' CPU counts in 10 ms ticks; the sampled threads' in ns: whichever says more.
    let ticks = 0;
    for (const [pid, cpu] of b.processes) ticks += cpu - (a.processes.get(pid) ?? cpu);
    const ours = Math.max(ticks, threads.reduce((n, t) => n + t.run, 0));
    return {
      span: [a.at, b.at],
      threads: threads.sort((x, y) => y.run + y.wait - (x.run + x.wait)),
      ours,
      cpu: { busy: b.cpu.busy - a.cpu.busy, steal: b.cpu.steal - a.cpu.steal },
    };
  }
}
