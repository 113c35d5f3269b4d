/** Diagnostic: where the leads table's first rows spend their time, from a Chromium trace of single
 * navigations in the UI benchmark's setup (the web host on a seeded data folder, fresh contexts,
 * the same probe). Prints, per navigation, the renderer's main thread from the navigation's start
 * to the frame painted with a row: each task over 2 ms with what ran in it (parsing, script
 * compile and evaluation, style, layout, paint), the page's requests, and the frames.
 * Usage: tsx first-rows-trace.ts <dataDir> [leads=100000] [navigations=4]
 * (the folder is seeded when it holds no workspace yet, and kept: later runs reuse it). */
import { writeFileSync } from 'node:fs';
import { ensureRendererBuilt, launchBrowser, startApp } from '../../e2e/support/app.ts';
import { FIRST_ROWS_PROBE } from '../ui.bench.ts';
import { traceScriptArgs } from './trace-script.ts';
import type { TraceEvent } from './trace-script.ts';

const { dataDir, n: NAVIGATIONS } = traceScriptArgs('first-rows-trace.ts', 'navigations', 4);


const CATEGORIES = [
  'devtools.timeline',
  'disabled-by-default-devtools.timeline',
  'disabled-by-default-devtools.timeline.frame',
  'toplevel',
  'blink.user_timing',
  'loading',
  'navigation',
  'v8',
  'v8.execute',
  'disabled-by-default-v8.compile',
  'blink',
  'cc',
  'benchmark',
  'rail',
  'fonts',
];

/** Marks in the trace (user timing) where the bench's probe marks the row inserted and painted. */
const TRACE_MARKS = `new MutationObserver((_, o) => {
  if (!document.querySelector('.table [data-lead-id]')) return;
  o.disconnect();
  performance.mark('trace:rowInserted');
  requestAnimationFrame(() => { const c = new MessageChannel(); c.port1.onmessage = () => performance.mark('trace:rowPainted'); c.port2.postMessage(0); });
}).observe(document, { subtree: true, childList: true });`;

/** What a task's time went to: the innermost named events (self time), by name. */
function selfTimes(events: TraceEvent[], from: number, to: number): Map<string, number> {
  const inside = events.filter((e) => e.ph === 'X' && e.ts >= from && e.ts + (e.dur ?? 0) <= to && (e.dur ?? 0) > 0).sort((a, b) => a.ts - b.ts || (b.dur ?? 0) - (a.dur ?? 0));
  const out = new Map<string, number>();
  const stack: { e: TraceEvent; child: number }[] = [];
  const close = (upTo: number) => {
    while (stack.length > 0) {
      const top = stack[stack.length - 1];
      if (!top || top.e.ts + (top.e.dur ?? 0) > upTo) break;
      stack.pop();
      const self = (top.e.dur ?? 0) - top.child;
      out.set(top.e.name, (out.get(top.e.name) ?? 0) + self);
      const parent = stack[stack.length - 1];
      if (parent) parent.child += top.e.dur ?? 0;
    }
  };
  for (const e of inside) {
    close(e.ts);
    stack.push({ e, child: 0 });
  }
  close(Infinity);
  return out;
}

/** The events inside `parent` over 3 ms, as an indented tree (three levels). */
function tree(events: TraceEvent[], parent: TraceEvent, depth: number, t0: number): void {
  if (depth > 4) return;
  const end = parent.ts + (parent.dur ?? 0);
  const inside = events.filter((e) => e !== parent && e.ph === 'X' && e.ts >= parent.ts && e.ts + (e.dur ?? 0) <= end && (e.dur ?? 0) > 0 && !(e.ts === parent.ts && e.dur === parent.dur)).sort((a, b) => a.ts - b.ts || (b.dur ?? 0) - (a.dur ?? 0));
  const direct: TraceEvent[] = [];
  for (const e of inside) {
    const last = direct[direct.length - 1];
    if (last && e.ts < last.ts + (last.dur ?? 0)) continue;
    direct.push(e);
  }
  for (const e of direct) {
    if ((e.dur ?? 0) < 3000) continue;
    const extra = e.args?.data ? ` ${JSON.stringify(e.args.data).slice(0, 100)}` : '';
    console.log(`  ${'  '.repeat(depth)}${e.name} at ${((e.ts - t0) / 1000).toFixed(1)} ${((e.dur ?? 0) / 1000).toFixed(1)} ms${extra}`);
    tree(events, e, depth + 1, t0);
  }
}

function describe(events: TraceEvent[], url: string, marks: Record<string, number>): void {
  const nav = events.find((e) => e.name === 'navigationStart' && String(e.args?.data?.documentLoaderURL ?? '').startsWith(url) && e.args?.data?.isLoadingMainFrame === true);
  if (!nav) {
    console.log('  no navigationStart for the page in the trace');
    return;
  }
  const t0 = nav.ts;
  const pid = nav.pid;
  const at = (ts: number) => ((ts - t0) / 1000).toFixed(1);
  const main = events.find((e) => e.ph === 'M' && e.name === 'thread_name' && e.pid === pid && e.args?.name === 'CrRendererMain');
  const tid = main?.tid ?? nav.tid;
  const end = t0 + (marks.rowPainted ?? 1000) * 1000 + 20_000;
  const mine = events.filter((e) => e.pid === pid && e.tid === tid && e.ts >= t0 - 50_000 && e.ts <= end);
  console.log(`  marks (ms from navigation): ${Object.entries(marks).map(([k, v]) => `${k} ${v.toFixed(0)}`).join(', ')}`);
  const named = (n: string) => events.filter((e) => e.name === n && e.pid === pid && e.ts >= t0).map((e) => at(e.ts));
  const user = events.filter((e) => e.pid === pid && e.name.startsWith('trace:') && e.ts >= t0);
  console.log(`  trace marks (ms from navigationStart): ${user.map((e) => `${e.name.slice(6)} ${at(e.ts)}`).join(', ')}`);
  console.log(`  blink marks: firstPaint ${named('firstPaint').join('/')}, firstContentfulPaint ${named('firstContentfulPaint').join('/')}, domInteractive ${named('domInteractive').join('/')}, domContentLoaded ${named('domContentLoadedEventStart').join('/')}`);
  // The page's requests (the renderer's view).
  const sends = events.filter((e) => e.name === 'ResourceSendRequest' && e.ts >= t0 - 50_000 && e.ts <= end);
  for (const s of sends) {
    const id = s.args?.data?.requestId;
    const u = String(s.args?.data?.url ?? '').replace(url, '/');
    const recv = events.find((e) => e.name === 'ResourceReceiveResponse' && e.args?.data?.requestId === id);
    const fin = events.find((e) => e.name === 'ResourceFinish' && e.args?.data?.requestId === id);
    const data = events.filter((e) => e.name === 'ResourceReceivedData' && e.args?.data?.requestId === id).map((e) => at(e.ts));
    console.log(`  request ${u.slice(0, 60)}: sent ${at(s.ts)}, response ${recv ? at(recv.ts) : '-'}, data ${data.join(' ')}, finished ${fin ? at(fin.ts) : '-'}${s.args?.data?.priority ? ` (${String(s.args.data.priority)})` : ''}`);
  }
  // Top-level tasks on the main thread.
  const candidates = mine.filter((e) => e.ph === 'X' && (e.name === 'ThreadControllerImpl::RunTask' || e.name === 'RunTask') && e.ts >= t0).sort((a, b) => a.ts - b.ts || (b.dur ?? 0) - (a.dur ?? 0));
  const tasks: TraceEvent[] = [];
  for (const c of candidates) {
    const last = tasks[tasks.length - 1];
    if (last && c.ts < last.ts + (last.dur ?? 0)) continue;
    tasks.push(c);
  }
  let busy = 0;
  const total = new Map<string, number>();
  for (const t of tasks) {
    const dur = t.dur ?? 0;
    busy += dur;
    const self = selfTimes(mine, t.ts, t.ts + dur);
    for (const [k, v] of self) total.set(k, (total.get(k) ?? 0) + v);
    if (dur < 2000) continue;
    const top = [...self].filter(([k]) => k !== t.name).sort((a, b) => b[1] - a[1]).slice(0, 6).map(([k, v]) => `${k} ${(v / 1000).toFixed(1)}`);
    console.log(`  task at ${at(t.ts)} ${(dur / 1000).toFixed(1)} ms: ${top.join(', ')}`);
    if (dur >= 20_000) tree(mine, t, 1, t0);
  }
  console.log(`  main thread busy in tasks until the row was painted: ${(busy / 1000).toFixed(0)} ms; by kind: ${[...total].sort((a, b) => b[1] - a[1]).slice(0, 16).map(([k, v]) => `${k} ${(v / 1000).toFixed(1)}`).join(', ')}`);
  // Frames the page's compositor drew.
  const frames = events.filter((e) => e.pid === pid && (e.name === 'DrawFrame' || e.name === 'Commit' || e.name === 'BeginMainThreadFrame' || e.name === 'PaintImage' || e.name === 'Paint') && e.ts >= t0 && e.ts <= end);
  console.log(`  frames: ${frames.map((e) => `${e.name}@${at(e.ts)}`).join(', ')}`);
}

await ensureRendererBuilt();
const app = await startApp({ dataDir });
const browser = await launchBrowser({ asInElectron: true });
try {
  for (let i = 0; i < NAVIGATIONS; i++) {
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    const page = await context.newPage();
    await page.addInitScript({ content: FIRST_ROWS_PROBE });
    await page.addInitScript({ content: TRACE_MARKS });
    // The first navigation warms the app (its first queries); the later ones are traced.
    if (i > 0) await browser.startTracing(page, { categories: CATEGORIES });
    await page.goto(app.url);
    await page.waitForFunction(() => 'rowPainted' in (window as unknown as { __firstRows: object }).__firstRows, undefined, { timeout: 60_000 });
    await page.waitForTimeout(200);
    const marks = await page.evaluate(() => (window as unknown as { __firstRows: Record<string, number> }).__firstRows);
    if (i > 0) {
      const buf = await browser.stopTracing();
      if (process.env.TRACE_OUT) writeFileSync(`${process.env.TRACE_OUT}-${i}.json`, buf);
      const trace = JSON.parse(buf.toString('utf8')) as { traceEvents: TraceEvent[] };
      console.log(`navigation ${i}:`);
      describe(trace.traceEvents, app.url, marks);
    } else console.log(`navigation ${i} (not traced): row painted at ${(marks.rowPainted ?? NaN).toFixed(0)} ms`);
    await context.close();
  }
} finally {
  await browser.close();
  await app.stop();
}
