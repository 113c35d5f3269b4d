/**
 * Where a V8 CPU profile's time went (a `.cpuprofile` as `node --cpu-prof` or the inspector's
 * Profiler writes it; BENCH_PROFILE of the desktop bench's sync child):
 *   npx tsx test/bench/support/profile-summary.ts FILE [TOP]
 * prints the sampled time, the functions with the most self time, the functions with the most
 * total time (self and callees, each sample counted once per function however deep it recurses),
 * and self time by source (package or project file). Native calls (a better-sqlite3 statement, a
 * JSON.parse) count where V8 shows them: as their own frames, under the caller's name.
 */
import { readFileSync } from 'node:fs';

type Node = { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] };
type Profile = { nodes: Node[]; samples: number[]; timeDeltas: number[]; startTime: number; endTime: number };

const short = (url: string): string => {
  if (!url) return '';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) return url.slice(nm + 'node_modules/'.length);
  const at = url.search(/(electron|shared|sync-server|test)\//);
  return at >= 0 ? url.slice(at) : url.replace(/^file:\/\//, '');
};

/** A source for the by-source totals: a package name, a project file, or V8's own entries. */
const source = (n: Node): string => {
  const { url, functionName } = n.callFrame;
  if (!url) return functionName.startsWith('(') ? functionName : `(native) ${functionName || '(anonymous)'}`;
  const s = short(url);
  if (s.startsWith('node:') || s.startsWith('internal')) return 'node internals';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const parts = url.slice(nm + 'node_modules/'.length).split('/');
    return parts[0]?.startsWith('@') ? `${parts[0]}/${parts[1] ?? ''}` : (parts[0] ?? s);
  }
  return s;
};

export function summarize(profile: Profile, top = 30): string[] {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const selfUs = new Map<number, number>();
  let totalUs = 0;
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0;
    selfUs.set(id, (selfUs.get(id) ?? 0) + dt);
    totalUs += dt;
  });
  const key = (n: Node) => `${n.callFrame.functionName || '(anonymous)'} ${short(n.callFrame.url)}${n.callFrame.url ? `:${n.callFrame.lineNumber + 1}` : ''}`;
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  const bySource = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const n = byId.get(id);
    if (!n) continue;
    self.set(key(n), (self.get(key(n)) ?? 0) + us);
    bySource.set(source(n), (bySource.get(source(n)) ?? 0) + us);
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const a = byId.get(at);
      if (!a) break;
      const k = key(a);
      if (seen.has(k)) continue;
      seen.add(k);
      total.set(k, (total.get(k) ?? 0) + us);
    }
  }
  const ms = (us: number) => `${(us / 1000).toFixed(0).padStart(7)} ms ${((100 * us) / totalUs).toFixed(1).padStart(5)}%`;
  const list = (m: Map<string, number>, n: number) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, us]) => `  ${ms(us)}  ${k}`);
  return [
    `sampled ${(totalUs / 1000).toFixed(0)} ms`,
    'self time:',
    ...list(self, top),
    'total time (self and callees):',
    ...list(total, top * 2),
    'self time by source:',
    ...list(bySource, top),
  ];
}

const file = process.argv[2];
if (file) {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  for (const l of summarize(profile, Number(process.argv[3] ?? 30))) process.stdout.write(`${l}\n`);
}
