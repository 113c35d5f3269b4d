/** Bench support: what each slow frame of the UI bench's scrolling (over 50 ms) was made of, from a
 * ThreadSampler run meanwhile, the pages of leads the table asked for and the page's long tasks. It
 * tells the app's work (the page's main thread running for most of the frame, a page of leads
 * arriving in it) from the machine's (its threads ready but waiting for a core that other
 * processes held). */
import { cpus } from 'node:os';
import type { SampledWindow, ThreadInfo, ThreadSampler } from './thread-sampler.ts';

/** The threads a frame goes through, by Chromium's and node's names: the renderer's main thread
 * (named after the executable) and compositor, the GPU process's display compositor, the browser's
 * and the app's main threads. A bench samples these only. */
const FRAME_THREADS = new Set(['chromium', 'Compositor', 'VizCompositorTh', 'MainThread']);
export const chooseFrameThreads = (t: ThreadInfo): boolean => FRAME_THREADS.has(t.name);

type Frames = { deltas: number[]; ends: number[] };
type Page = { sent: number; answered?: number };
type LongTask = { at: number; duration: number };

const f1 = (n: number) => n.toFixed(1);

export type SlowFrames = {
  /** One line per slow frame, in order (up to `limit`; a frame without samples says so). */
  lines: string[];
  /** What they had in common, in one line. */
  summary: string;
};

/** The slow frames (over `over` ms) of a scroll, explained. */
export function explainSlowFrames(frames: Frames, sampler: Pick<ThreadSampler, 'available' | 'window'>, pages: Page[], longTasks: LongTask[], opts: { over?: number; limit?: number } = {}): SlowFrames {
  const over = opts.over ?? 50;
  const slow = frames.deltas.map((delta, i) => ({ delta, i, from: (frames.ends[i] ?? 0) - delta, to: frames.ends[i] ?? 0 })).filter((f) => f.delta > over);
  const first = (frames.ends[0] ?? 0) - (frames.deltas[0] ?? 0);
  const last = frames.ends[frames.ends.length - 1] ?? 0;
  const whole = sampler.window(first, last);
  if (!sampler.available || !whole) return { lines: [], summary: 'no CPU samples (not Linux)' };
  // The page's renderer: the renderer whose main thread ran most during the scroll.
  const main = whole.threads.filter((t) => t.thread.process.startsWith('chromium:renderer') && t.thread.name === 'chromium').sort((a, b) => b.run - a.run)[0]?.thread;
  const pick = (w: SampledWindow, test: (t: ThreadInfo) => boolean) => w.threads.find((t) => test(t.thread)) ?? { run: 0, wait: 0 };
  const pageMain = (w: SampledWindow) => pick(w, (t) => t === main);
  const parts = (w: SampledWindow) => [
    ['its compositor', pick(w, (t) => t.pid === main?.pid && t.name === 'Compositor')],
    ['the display compositor', pick(w, (t) => t.process.startsWith('chromium:gpu-process') && t.name === 'VizCompositorTh')],
    ['the browser', pick(w, (t) => t.process.startsWith('chromium[') && t.name === 'chromium')],
    ['the app', pick(w, (t) => t.process.startsWith('node:start.ts') && t.name === 'MainThread')],
  ] as const;
  const cores = cpus().length;
  // /proc/stat counts in 10 ms ticks: the machine's figures are to ~10 ms a core.
  const machine = (w: SampledWindow) => `the machine ${w.cpu.busy.toFixed(0)} of ${(cores * (w.span[1] - w.span[0])).toFixed(0)} core-ms busy: ${w.ours.toFixed(0)} ours (browser, app, bench), ${Math.max(0, w.cpu.busy - w.ours).toFixed(0)} other processes', ${w.cpu.steal.toFixed(0)} stolen`;
  const lines: string[] = [];
  let waited = 0;
  let ran = 0;
  let withPage = 0;
  let othersBusy = 0;
  let spanned = 0;
  for (const f of slow) {
    const w = sampler.window(f.from, f.to);
    if (!w) {
      if (lines.length < (opts.limit ?? 10)) lines.push(`frame ${f.i} (${f1(f.delta)} ms): no CPU samples around it`);
      continue;
    }
    const m = pageMain(w);
    // A frame waits on each thread of its pipeline: the page's main thread, its compositor, the
    // display compositor (a frame went slow with the main thread ready at once, and the display
    // compositor waiting 45 ms for a core).
    const threads = parts(w);
    const [compositor, display] = threads;
    if (m.wait + compositor[1].wait + display[1].wait > m.run) waited++;
    if (m.run > over) ran++;
    const arrived = pages.filter((p) => p.answered !== undefined && p.answered >= f.from && p.answered <= f.to).length;
    const asked = pages.filter((p) => p.sent >= f.from && p.sent <= f.to).length;
    if (arrived > 0) withPage++;
    othersBusy += Math.max(0, w.cpu.busy - w.ours);
    spanned += cores * (w.span[1] - w.span[0]);
    const tasks = longTasks.filter((t) => t.at < f.to && t.at + t.duration > f.from).map((t) => `${f1(t.duration)} ms`);
    if (lines.length < (opts.limit ?? 10)) {
      lines.push(`frame ${f.i} (${f1(f.delta)} ms, ${f1((f.from - first) / 1000)} s in; sampled over ${f1(w.span[1] - w.span[0])} ms): the page's main thread ran ${f1(m.run)} ms and waited ${f1(m.wait)} ms for a core; ${threads.map(([name, t]) => `${name} ${f1(t.run)}/${f1(t.wait)}`).join(', ')} (ran/waited); ${machine(w)}; pages of leads: ${arrived} answered, ${asked} asked; long tasks: ${tasks.join(', ') || 'none'}`);
    }
  }
  const m = pageMain(whole);
  const n = frames.deltas.length;
  const average = `an average frame: the page's main thread ran ${f1(m.run / n)} ms and waited ${f1(m.wait / n)} ms; ${parts(whole).map(([name, t]) => `${name} ${f1(t.run / n)}/${f1(t.wait / n)}`).join(', ')}`;
  const share = (busy: number, of: number) => `${((100 * busy) / Math.max(1, of)).toFixed(0)}%`;
  const summary = slow.length === 0
    ? `no frame over ${over} ms; ${average}; other processes used ${share(Math.max(0, whole.cpu.busy - whole.ours), cores * (whole.span[1] - whole.span[0]))} of the machine`
    : `${slow.length} frame(s) over ${over} ms: in ${waited} the frame's threads (the page's main thread and compositor, the display compositor) waited for a core longer than the main thread ran, in ${ran} it ran over ${over} ms, in ${withPage} a page of leads arrived; other processes used ${share(othersBusy, spanned)} of the machine in them, ${share(Math.max(0, whole.cpu.busy - whole.ours), cores * (whole.span[1] - whole.span[0]))} over the whole scroll; ${average}`;
  return { lines, summary };
}
