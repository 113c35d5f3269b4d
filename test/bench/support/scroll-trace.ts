/** Diagnostic: what the UI benchmark's slow scrolling frames (over 50 ms) were made of, in more
 * detail than the bench prints. The bench's setup (the web host on a seeded data folder, Debian's
 * Chromium, a fresh context, the table re-sorted by name) and its fast scroll (scrollFrames: 40 px a
 * frame, 900 frames), with meanwhile every thread of the browser, the app and this process sampled
 * every 10 ms (thread-sampler.ts: CPU and waits for a core; the machine's CPU) and a Chromium trace of
 * every process (TRACE=0: none; TRACE_OUT=<prefix> keeps it). For each frame over 50 ms: the bench's
 * explanation (slow-frames.ts), each thread that ran or waited 5 ms or more in it, and the trace's
 * tasks over 8 ms in it with their thread CPU; then the page's main thread over the whole scroll
 * (its most CPU in one task).
 * Usage: tsx scroll-trace.ts <dataDir> [leads=100000] [runs=3]
 * (the folder is seeded when it holds no workspace yet, and kept: later runs reuse it; SHOT=<file>
 * saves a screenshot of the table at the end of the loaded rows after the last run). */
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { ensureRendererBuilt, launchBrowser, startApp } from '../../e2e/support/app.ts';
import { FIRST_ROWS_PROBE, leadPages, loadingNow, resortByName, scrollFrames, watchLongTasks } from '../ui.bench.ts';
import { explainSlowFrames } from './slow-frames.ts';
import { ThreadSampler } from './thread-sampler.ts';
import { traceScriptArgs } from './trace-script.ts';
import type { TraceEvent } from './trace-script.ts';

const { dataDir, n: RUNS } = traceScriptArgs('scroll-trace.ts', 'runs', 3);
const TRACE = process.env.TRACE !== '0';

const CATEGORIES = ['devtools.timeline', 'disabled-by-default-devtools.timeline.frame', 'toplevel', 'blink.user_timing', 'v8', 'cc', 'viz', 'gpu', 'benchmark'];


const f1 = (n: number) => n.toFixed(1);

/** The trace's complete events on each thread that no other event of that thread contains. */
function topLevel(events: TraceEvent[]): Map<string, TraceEvent[]> {
  const byThread = new Map<string, TraceEvent[]>();
  for (const e of events) {
    if (e.ph !== 'X' || !e.dur) continue;
    const k = `${e.pid}/${e.tid}`;
    let list = byThread.get(k);
    if (!list) byThread.set(k, (list = []));
    list.push(e);
  }
  for (const [k, list] of byThread) {
    list.sort((a, b) => a.ts - b.ts || (b.dur ?? 0) - (a.dur ?? 0));
    const top: TraceEvent[] = [];
    for (const e of list) {
      const last = top[top.length - 1];
      if (last && e.ts < last.ts + (last.dur ?? 0)) continue;
      top.push(e);
    }
    byThread.set(k, top);
  }
  return byThread;
}

/** The longest events inside `parent` on its thread (self-contained: two levels), for a summary. */
function inside(events: TraceEvent[], parent: TraceEvent): string {
  const end = parent.ts + (parent.dur ?? 0);
  const kids = events.filter((e) => e !== parent && e.pid === parent.pid && e.tid === parent.tid && e.ph === 'X' && e.ts >= parent.ts && e.ts + (e.dur ?? 0) <= end && (e.dur ?? 0) >= 2000);
  return kids.sort((a, b) => (b.dur ?? 0) - (a.dur ?? 0)).slice(0, 5).map((e) => `${e.name} ${f1((e.dur ?? 0) / 1000)}`).join(', ');
}

await ensureRendererBuilt();
const app = await startApp({ dataDir });
const browser = await launchBrowser({ asInElectron: true });
const sampler = new ThreadSampler(() => [process.pid]);
try {
  for (let waited = 0; loadingNow(dataDir) && waited < 120_000; waited += 500) await new Promise((r) => setTimeout(r, 500));
  for (let run = 0; run < RUNS; run++) {
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    const page = await context.newPage();
    await page.addInitScript({ content: FIRST_ROWS_PROBE });
    await page.goto(app.url);
    await page.waitForFunction(() => 'reactRows' in (window as unknown as { __firstRows: object }).__firstRows, undefined, { timeout: 60_000 });
    const resort = await resortByName(page);
    const takeLongTasks = await watchLongTasks(page);
    if (TRACE) await browser.startTracing(page, { categories: CATEGORIES });
    sampler.start();
    // The trace's clock against the page's: a mark at a known time.
    const markAt = await page.evaluate(() => {
      performance.mark('scroll:start');
      return performance.timeOrigin + performance.now();
    });
    const load0 = loadavg()[0] ?? NaN;
    const selfCpu = process.cpuUsage();
    const frames = await scrollFrames(page, 'down', 900);
    sampler.stop();
    const self = process.cpuUsage(selfCpu);
    const events = TRACE ? (JSON.parse((await browser.stopTracing()).toString('utf8')) as { traceEvents: TraceEvent[] }).traceEvents : [];
    if (TRACE && process.env.TRACE_OUT) writeFileSync(`${process.env.TRACE_OUT}-${run}.json`, JSON.stringify({ traceEvents: events }));
    const longTasks = await takeLongTasks();
    const pages = (await leadPages(page)).filter((p) => p.sent >= markAt);
    const d = frames.deltas;
    const slow = d.map((x, i) => ({ delta: x, end: frames.ends[i] ?? 0, i })).filter((f) => f.delta > 50);
    console.log(`\nrun ${run}: re-sort ${f1(resort)} ms; ${d.length} frames, ${frames.rows}; over 50 ms: ${slow.length}, over 33 ms: ${d.filter((x) => x > 33).length}; long tasks ${longTasks.length} (${longTasks.map((t) => f1(t.duration)).join(', ')}); load ${f1(load0)}; this process's CPU meanwhile ${f1((self.user + self.system) / 1000)} ms (the sampler${TRACE ? ', the trace' : ''})`);
    const answered = pages.filter((p) => p.answered !== undefined).map((p) => (p.answered ?? 0) - p.sent);
    console.log(`  leads pages asked during the scroll: ${pages.length}, answered in ${answered.map((x) => x.toFixed(0)).join(', ')} ms`);
    const explained = explainSlowFrames(frames, sampler, pages, longTasks, { limit: Infinity });
    console.log(`  ${explained.summary}`);
    // The trace's clock: ts (µs) of the mark, against markAt (ms since the epoch).
    const mark = events.find((e) => e.name === 'scroll:start');
    const toTrace = (epochMs: number) => (mark ? mark.ts + (epochMs - markAt) * 1000 : NaN);
    const names = new Map<string, string>();
    const procs = new Map<number, string>();
    for (const e of events) {
      if (e.ph === 'M' && e.name === 'thread_name') names.set(`${e.pid}/${e.tid}`, String(e.args?.name));
      if (e.ph === 'M' && e.name === 'process_name') procs.set(e.pid, String(e.args?.name));
    }
    const tops = topLevel(events);

    // Per slow frame: the bench's explanation, then every thread of ours that ran or waited 5 ms or
    // more in it, and the trace's tasks over 8 ms of wall time in it (with their thread CPU).
    const frameLines = explained.lines;
    slow.forEach((f, k) => {
      const from = f.end - f.delta;
      console.log(`  ${frameLines[k] ?? `frame ${f.i}`}`);
      const w = sampler.window(from, f.end);
      const threads = (w?.threads ?? []).filter((t) => t.run + t.wait >= 5).map((t) => `${t.thread.process}/${t.thread.name} ${f1(t.run)}/${f1(t.wait)}`);
      if (threads.length > 0) console.log(`    threads (ran/waited ms): ${threads.join(', ')}`);
      if (!mark) return;
      const a = toTrace(from);
      const b = toTrace(f.end);
      for (const [key, list] of tops) {
        const hits = list.filter((e) => e.ts < b && e.ts + (e.dur ?? 0) > a);
        const wall = hits.reduce((n, e) => n + Math.min(b, e.ts + (e.dur ?? 0)) - Math.max(a, e.ts), 0) / 1000;
        if (wall < 8) continue;
        const cpu = hits.reduce((n, e) => n + (e.tdur ?? 0), 0) / 1000;
        const pid = Number(key.split('/')[0]);
        const long = hits.filter((e) => (e.dur ?? 0) >= 8000).map((e) => `${e.name} at ${f1((e.ts - a) / 1000)} ${f1((e.dur ?? 0) / 1000)} ms (cpu ${f1((e.tdur ?? 0) / 1000)})${inside(events, e) ? `: ${inside(events, e)}` : ''}`);
        console.log(`    trace ${procs.get(pid) ?? pid}/${names.get(key) ?? key}: tasks ${f1(wall)} ms of the frame (their thread CPU ${f1(cpu)})${long.length > 0 ? `; ${long.join('; ')}` : ''}`);
      }
    });
    // The renderer's main thread over the whole scroll: its tasks by thread CPU (the app's work).
    const mainKey = mark ? `${mark.pid}/${mark.tid}` : undefined;
    const mainTasks = (mainKey ? tops.get(mainKey) ?? [] : []).filter((e) => e.ts >= (mark?.ts ?? 0));
    if (mainTasks.length > 0) {
      const byCpu = [...mainTasks].sort((x, y) => (y.tdur ?? 0) - (x.tdur ?? 0));
      const total = mainTasks.reduce((n, e) => n + (e.tdur ?? 0), 0) / 1000;
      console.log(`  the page's main thread in the trace: ${mainTasks.length} tasks, ${f1(total)} ms of CPU (${f1(total / d.length)} a frame); the most CPU in one task ${f1((byCpu[0]?.tdur ?? 0) / 1000)} ms (wall ${f1((byCpu[0]?.dur ?? 0) / 1000)}); the longest wall ${f1(Math.max(...mainTasks.map((e) => e.dur ?? 0)) / 1000)} ms`);
    }
    if (process.env.SHOT && run === RUNS - 1) {
      await page.evaluate(() => {
        const v = document.querySelector('[data-testid="leads-viewport"]') as HTMLElement;
        v.scrollTop = v.scrollHeight;
      });
      await page.screenshot({ path: process.env.SHOT });
      console.log(`  screenshot past the loaded rows: ${process.env.SHOT}`);
    }
    await context.close();
  }
} finally {
  sampler.stop();
  await browser.close();
  await app.stop();
}
