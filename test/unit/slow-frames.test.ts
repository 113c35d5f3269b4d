/** The UI bench's account of slow scrolling frames: a frame is put down to the page's main thread
 * waiting for a core, to it running, or to a page of leads arriving, from the sampler's windows;
 * and the sampler reads a thread's CPU from /proc. */
import { describe, expect, it } from 'vitest';
import { explainSlowFrames } from '../bench/support/slow-frames.ts';
import { ThreadSampler } from '../bench/support/thread-sampler.ts';
import type { SampledWindow, ThreadInfo } from '../bench/support/thread-sampler.ts';

const thread = (process: string, name: string, pid = 10): ThreadInfo => ({ pid, tid: pid, process, name });
const main = thread('chromium:renderer[10]', 'chromium');
const compositor = { ...thread('chromium:renderer[10]', 'Compositor'), tid: 11 };

/** A sampler whose window over [from, to] is what `at` says for it. */
function fakeSampler(at: (from: number, to: number) => { run: number; wait: number; others: number }) {
  return {
    available: true,
    window(from: number, to: number): SampledWindow {
      const w = at(from, to);
      return {
        span: [from, to],
        threads: [{ thread: main, run: w.run, wait: w.wait }, { thread: compositor, run: 1, wait: 1 }],
        ours: w.run + 1,
        cpu: { busy: w.run + 1 + w.others, steal: 0 },
      };
    },
  };
}

describe('explainSlowFrames', () => {
  // Frames of 16 ms from t=1000, the third 60 ms (waiting for a core), the fifth 70 ms (running).
  const deltas = [16, 16, 60, 16, 70, 16];
  const ends = deltas.reduce<number[]>((out, d) => [...out, (out[out.length - 1] ?? 1000) + d], []);
  const waitingFrame = { from: (ends[2] ?? 0) - 60, to: ends[2] ?? 0 };
  const runningFrame = { from: (ends[4] ?? 0) - 70, to: ends[4] ?? 0 };
  const sampler = fakeSampler((from, to) => {
    if (from === waitingFrame.from && to === waitingFrame.to) return { run: 8, wait: 50, others: 100 };
    if (from === runningFrame.from && to === runningFrame.to) return { run: 65, wait: 2, others: 10 };
    return { run: 5 * deltas.length, wait: 5, others: 20 };
  });

  it('tells the frames the page waited for a core from those it ran through, and those a page of leads arrived in', () => {
    const pages = [{ sent: runningFrame.from - 30, answered: runningFrame.from + 5 }];
    const longTasks = [{ at: runningFrame.from + 1, duration: 66 }];
    const out = explainSlowFrames({ deltas, ends }, sampler, pages, longTasks);
    expect(out.summary).toMatch(/^2 frame\(s\) over 50 ms: in 1 the frame's threads \(the page's main thread and compositor, the display compositor\) waited for a core longer than the main thread ran, in 1 it ran over 50 ms, in 1 a page of leads arrived/);
    expect(out.lines).toHaveLength(2);
    expect(out.lines[0]).toMatch(/^frame 2 \(60\.0 ms.*ran 8\.0 ms and waited 50\.0 ms for a core; its compositor 1\.0\/1\.0.*100 other processes'.*pages of leads: 0 answered.*long tasks: none$/);
    expect(out.lines[1]).toMatch(/^frame 4 \(70\.0 ms.*ran 65\.0 ms and waited 2\.0 ms.*pages of leads: 1 answered, 0 asked; long tasks: 66\.0 ms$/);
  });

  it('prints at most `limit` frames, and says so when no frame was slow', () => {
    expect(explainSlowFrames({ deltas, ends }, sampler, [], [], { limit: 1 }).lines).toHaveLength(1);
    const smooth = explainSlowFrames({ deltas: [16, 16], ends: [1016, 1032] }, sampler, [], []);
    expect(smooth.lines).toEqual([]);
    expect(smooth.summary).toMatch(/^no frame over 50 ms; an average frame: the page's main thread ran/);
  });
});

describe.runIf(process.platform === 'linux')('ThreadSampler', () => {
  it("reads a busy thread's CPU from /proc: this process's main thread spinning for 120 ms", () => {
    // The process's main thread (its tid is the pid): vitest's forks pool runs the test on it.
    const sampler = new ThreadSampler(() => [process.pid], (t) => t.tid === process.pid);
    sampler.start();
    const from = performance.timeOrigin + performance.now();
    while (performance.timeOrigin + performance.now() - from < 120);
    const to = performance.timeOrigin + performance.now();
    sampler.stop();
    const w = sampler.window(from, to);
    const mine = w?.threads.find((t) => t.thread.tid === process.pid);
    // Ran for most of it (the rest waiting for a core on a busy machine); the machine was busy as long.
    expect((mine?.run ?? 0) + (mine?.wait ?? 0)).toBeGreaterThan(100);
    expect(mine?.run ?? 0).toBeGreaterThan(20);
    expect(w?.ours ?? 0).toBeGreaterThanOrEqual(mine?.run ?? Infinity);
  });
});
