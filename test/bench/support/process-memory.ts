/**
 * What a process's resident memory is made of, from inside it (Linux): the desktop benchmark's child
 * prints this after a sync (test/bench/support/desktop-child.ts). Kept free of other imports: the
 * child bundles it.
 *
 * The parts, in bytes resident:
 * - `v8Heap`: V8's heap pages (the physical size of every heap space), of which `v8Live` is what
 *   live objects use (heapUsed) and the rest is heap V8 grew and keeps for later allocation;
 *   `v8Pages` is what V8's regular pages (256 KiB anonymous mappings) hold resident: more than
 *   the spaces count when V8 keeps freed pages mapped in its page pool for later use;
 * - `arrayBuffers`: ArrayBuffer and Buffer memory (outside V8's heap, allocated by malloc);
 * - `mallocMain`: glibc's main arena (the `[heap]` mapping): SQLite's page cache and statements,
 *   better-sqlite3's objects, V8's and Node's own native allocations;
 * - `mallocArenas`: glibc's per-thread arenas (64 MiB-aligned anonymous mappings: the backend's
 *   worker thread, V8's platform threads "V8Worker" (concurrent GC and compilation), libuv's pool,
 *   and arenas left by threads that ended, such as the SQLite statement and reader threads), each
 *   listed by size; `threads` names the threads alive. Which thread uses which arena is not visible
 *   from inside the process (gdb shows it: `thread_arena` of each thread); much of an arena can be
 *   memory freed but kept by glibc (free chunks, and a top chunk below its trim threshold, which
 *   glibc raises up to 64 MiB after a large block is freed);
 * - `otherAnon`: other anonymous mappings (large malloc blocks mapped one by one, V8 code space
 *   reservations, thread stacks) not counted above;
 * - `files`: mapped files: the node binary's and the shared libraries' code and data, the native
 *   addons (better-sqlite3), and the database file if SQLite maps it (mmap_size).
 * `anonymous` splits as v8Heap + v8Pooled + mallocMain + mallocArenas + otherAnon (arrayBuffers live inside
 * the malloc parts: it is shown, not added).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { getHeapSpaceStatistics } from 'node:v8';

export type MemoryBreakdown = {
  rss: number;
  anonymous: number;
  v8Heap: number;
  v8Live: number;
  v8Pages: number;
  /** Resident V8 pages no space counts: freed pages V8 keeps in its pool. */
  v8Pooled: number;
  /** Physical size by V8 heap space (new_space, old_space, code_space, large_object_space, ...). */
  v8Spaces: Record<string, number>;
  external: number;
  arrayBuffers: number;
  mallocMain: number;
  mallocArenas: number;
  /** Count of glibc thread arenas found. */
  arenas: number;
  /** Each thread arena's resident bytes, largest first. */
  arenaSizes: number[];
  /** The process's threads by name (/proc/self/task/N/comm: node's main thread and workers, V8's
   * platform threads "V8 DefaultWorke", libuv's pool "libuv-worker", ...), how many of each. */
  threads: Record<string, number>;
  otherAnon: number;
  files: number;
  /** The largest file mappings by path, resident bytes. */
  fileDetail: Record<string, number>;
};

type Mapping = { start: bigint; end: bigint; path: string; rss: number; anon: number };

/** V8's regular heap page (kRegularPageSize), each its own mapping. */
const V8_PAGE = 256n * 1024n;

/** Every mapping of /proc/self/smaps with its resident and anonymous bytes. */
function mappings(): Mapping[] {
  const out: Mapping[] = [];
  let cur: Mapping | null = null;
  for (const line of readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      cur = { start: BigInt(`0x${head[1]}`), end: BigInt(`0x${head[2]}`), path: head[3] ?? '', rss: 0, anon: 0 };
      out.push(cur);
      continue;
    }
    const field = /^(Rss|Anonymous):\s+(\d+) kB/.exec(line);
    if (field && cur) {
      if (field[1] === 'Rss') cur.rss = Number(field[2]) * 1024;
      else cur.anon = Number(field[2]) * 1024;
    }
  }
  return out;
}

/** glibc maps each thread arena as a HEAP_MAX_SIZE (64 MiB on 64-bit) region aligned to its size,
 * the unused tail kept as a PROT_NONE mapping right after the used head. */
const ARENA = 64n * 1024n * 1024n;

/** The process's threads by name, how many of each. */
function threadNames(): Record<string, number> {
  const out: Record<string, number> = {};
  for (const tid of readdirSync('/proc/self/task')) {
    let name = '?';
    try {
      name = readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim();
    } catch {
      // The thread ended meanwhile.
      continue;
    }
    out[name] = (out[name] ?? 0) + 1;
  }
  return out;
}

/** The breakdown now; null where /proc/self/smaps cannot be read (not Linux). */
export function memoryBreakdown(): MemoryBreakdown | null {
  let maps: Mapping[];
  try {
    maps = mappings();
  } catch {
    return null;
  }
  const usage = process.memoryUsage();
  const v8Spaces: Record<string, number> = {};
  for (const s of getHeapSpaceStatistics()) v8Spaces[s.space_name] = s.physical_space_size;
  const v8Heap = Object.values(v8Spaces).reduce((a, b) => a + b, 0);
  let anonymous = 0;
  let files = 0;
  let mallocMain = 0;
  let mallocArenas = 0;
  let arenas = 0;
  const arenaSizes: number[] = [];
  let v8Pages = 0;
  const fileDetail: Record<string, number> = {};
  for (const m of maps) {
    anonymous += m.anon;
    if (m.path.startsWith('/')) {
      files += m.rss - m.anon;
      fileDetail[m.path] = (fileDetail[m.path] ?? 0) + m.rss;
    }
    if (m.path === '[heap]') mallocMain += m.anon;
    else if (m.path === '' && m.end - m.start === V8_PAGE) v8Pages += m.anon;
    else if (m.path === '' && m.start % ARENA === 0n && m.end - m.start <= ARENA && m.anon > 0) {
      mallocArenas += m.anon;
      arenas++;
      arenaSizes.push(m.anon);
    }
  }
  // The spaces of regular pages (the large-object spaces map each object; code lives in its own range).
  const paged = Object.entries(v8Spaces)
    .filter(([name]) => !name.includes('large_object') && !name.startsWith('code') && name !== 'read_only_space')
    .reduce((a, [, v]) => a + v, 0);
  const v8Pooled = Math.max(0, v8Pages - paged);
  const top = Object.entries(fileDetail)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 6);
  return {
    rss: usage.rss,
    anonymous,
    v8Heap,
    v8Live: usage.heapUsed,
    v8Pages,
    v8Spaces,
    external: usage.external,
    arrayBuffers: usage.arrayBuffers,
    mallocMain,
    mallocArenas,
    arenas,
    arenaSizes: arenaSizes.sort((a, b) => b - a),
    threads: threadNames(),
    v8Pooled,
    otherAnon: Math.max(0, anonymous - v8Heap - v8Pooled - mallocMain - mallocArenas),
    files,
    fileDetail: Object.fromEntries(top),
  };
}

/** One line: each part in MB. */
export function formatBreakdown(b: MemoryBreakdown): string {
  const mb = (n: number) => `${(n / 1e6).toFixed(0)}`;
  const spaces = Object.entries(b.v8Spaces)
    .filter(([, v]) => v >= 0.5e6)
    .map(([k, v]) => `${k.replace(/_space$/, '')} ${mb(v)}`)
    .join(', ');
  const threads = Object.entries(b.threads)
    .sort((a, b) => b[1] - a[1])
    .map(([name, n]) => `${name} ${n}`)
    .join(', ');
  return (
    `rss ${mb(b.rss)} MB = anonymous ${mb(b.anonymous)} + files ${mb(b.files)}; anonymous: V8 heap ${mb(b.v8Heap)} (live ${mb(b.v8Live)}; ${spaces}; ` +
    `resident in V8's 256 KiB pages ${mb(b.v8Pages)}), freed V8 pages kept in its pool ${mb(b.v8Pooled)}, ` +
    `malloc main arena ${mb(b.mallocMain)}, ${b.arenas} thread arenas ${mb(b.mallocArenas)} (${b.arenaSizes.map(mb).join(' ')}), other ${mb(b.otherAnon)}; ` +
    `of malloc: array buffers ${mb(b.arrayBuffers)}, V8 external ${mb(b.external)}; threads: ${threads}`
  );
}
