/**
 * The leads table's data: campaigns.leads.search pages fetched with the cursor as the user scrolls.
 * Only the pages in view hold a live subscription, so a change to a lead on screen shows at once
 * while 100k rows cost no more than the few pages being looked at. Every page but the last is full
 * (keyset paging), so row i sits on page floor(i / size).
 */
import type { Result } from '../../../../electron/bridge.ts';
import type { OpInput, OpOutput } from '../../../../shared/ops/index.ts';
import { bridge } from '../../bridge/index.ts';
import { LEAD_PAGE_SIZE } from '../../lib/workspace-inputs.ts';

export type SearchInput = OpInput<'campaigns.leads.search'>;
export type LeadRow = OpOutput<'campaigns.leads.search'>['leads'][number];

type PageState = {
  cursor: string | null;
  rows: LeadRow[] | null;
  /** undefined until loaded; null on the last page. */
  next: string | null | undefined;
  error: string | null;
};

type Live = { cursor: string | null; stop: () => void };

export class LeadPager {
  private pages: PageState[] = [{ cursor: null, rows: null, next: undefined, error: null }];
  private readonly live = new Map<number, Live>();
  private readonly listeners = new Set<() => void>();
  private version = 0;
  private disposed = false;
  private visible: [number, number] = [0, 0];
  /** When the first page arrived (performance.now()), for the UI benchmark. */
  firstPageAt: number | null = null;

  constructor(
    private readonly input: Omit<SearchInput, 'cursor' | 'limit'>,
    readonly pageSize = LEAD_PAGE_SIZE,
  ) {
    this.setVisible(0, 0);
  }

  subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  getVersion = (): number => this.version;

  private changed(): void {
    this.version++;
    for (const l of this.listeners) l();
  }

  /** Rows known so far (a placeholder row follows while more may exist). */
  get loadedCount(): number {
    let n = 0;
    for (const p of this.pages) {
      if (!p.rows) break;
      n += p.rows.length;
      if (p.rows.length < this.pageSize) break;
    }
    return n;
  }

  get hasMore(): boolean {
    const last = this.pages[this.pages.length - 1];
    return !last || last.rows === null || last.next !== null;
  }

  /** True until the first page has answered. */
  get loading(): boolean {
    return this.pages[0]?.rows === null && this.pages[0]?.error === null;
  }

  get error(): string | null {
    for (const p of this.pages) if (p.error) return p.error;
    return null;
  }

  row(i: number): LeadRow | undefined {
    const page = this.pages[Math.floor(i / this.pageSize)];
    return page?.rows?.[i % this.pageSize];
  }

  /** Ids of every loaded row, in order (for range selection and "select all loaded"). */
  loadedIds(): string[] {
    const out: string[] = [];
    for (let i = 0; i < this.loadedCount; i++) {
      const r = this.row(i);
      if (r) out.push(r.id);
    }
    return out;
  }

  /** Tells the pager which rows are on screen: their pages are kept live, the rest let go. */
  setVisible(start: number, end: number): void {
    if (this.disposed) return;
    this.visible = [start, end];
    // One page of margin on each side: scrolling back and forth across a page boundary keeps its
    // subscriptions instead of dropping and re-asking for them.
    const first = Math.max(0, Math.floor(start / this.pageSize) - 1);
    const last = Math.min(this.pages.length - 1, Math.floor(end / this.pageSize) + 1);
    const wanted = new Set<number>();
    for (let p = first; p <= last; p++) wanted.add(p);
    for (const [p, l] of this.live) {
      if (!wanted.has(p)) {
        l.stop();
        this.live.delete(p);
      }
    }
    for (const p of wanted) {
      const page = this.pages[p];
      if (!page) continue;
      const current = this.live.get(p);
      if (current && current.cursor === page.cursor) continue;
      current?.stop();
      this.watch(p, page.cursor);
    }
  }

  private watch(index: number, cursor: string | null): void {
    const stop = bridge.subscribe('campaigns.leads.search', { ...this.input, cursor: cursor ?? undefined, limit: this.pageSize }, (r) => this.arrived(index, cursor, r));
    this.live.set(index, { cursor, stop });
  }

  private arrived(index: number, cursor: string | null, r: Result<OpOutput<'campaigns.leads.search'>>): void {
    const page = this.pages[index];
    if (this.disposed || !page || page.cursor !== cursor) return;
    if (!r.ok) {
      page.error = r.error.message;
      this.changed();
      return;
    }
    if (index === 0 && this.firstPageAt === null) this.firstPageAt = performance.now();
    page.rows = keepUnchanged(page.rows, r.value.leads);
    page.error = null;
    page.next = r.value.nextCursor;
    const following = this.pages[index + 1];
    if (page.next === null) {
      // This page is now the end: later pages (from before a deletion) no longer exist.
      for (let p = index + 1; p < this.pages.length; p++) {
        this.live.get(p)?.stop();
        this.live.delete(p);
      }
      this.pages.length = index + 1;
    } else if (!following) {
      this.pages.push({ cursor: page.next, rows: null, next: undefined, error: null });
    } else if (following.cursor !== page.next) {
      // Rows moved across the page boundary: the next page starts elsewhere now.
      following.cursor = page.next;
      following.error = null;
    }
    this.changed();
    this.setVisible(...this.visible);
  }

  dispose(): void {
    this.disposed = true;
    for (const l of this.live.values()) l.stop();
    this.live.clear();
    this.listeners.clear();
  }
}

/** The new rows, reusing the old row objects that did not change, so unchanged rows are not drawn
 * again (rows compare by identity in the table). */
function keepUnchanged(old: LeadRow[] | null, next: LeadRow[]): LeadRow[] {
  if (!old) return next;
  const byId = new Map(old.map((r) => [r.id, r]));
  return next.map((r) => {
    const prev = byId.get(r.id);
    return prev && JSON.stringify(prev) === JSON.stringify(r) ? prev : r;
  });
}

/** A pager made before the leads screen exists (`startLeadPager`), waiting to be taken by it. */
let started: { key: string; pager: LeadPager } | null = null;

/** Makes the pager the leads screen will show for `input` now, so that its first page is asked for
 * while the rest of the app still loads (main.tsx, before React). Its first `openLeadPager` takes it. */
export function startLeadPager(input: Omit<SearchInput, 'cursor' | 'limit'>): LeadPager {
  started?.pager.dispose();
  started = { key: JSON.stringify(input), pager: new LeadPager(input) };
  return started.pager;
}

/** The pager for `input`: the one `startLeadPager` made when it asked for the same input, no screen
 * took it yet and it holds no error (asked before a workspace was open, its answer was "no
 * workspace": the backend runs it again when one opens, but the screen would show that error
 * until then), else a new one. Whoever calls it disposes of the pager. */
export function openLeadPager(input: Omit<SearchInput, 'cursor' | 'limit'>): LeadPager {
  const early = started;
  started = null;
  if (early && early.key === JSON.stringify(input) && early.pager.error === null) return early.pager;
  early?.pager.dispose();
  return new LeadPager(input);
}

/** Fetches every lead of a filter, page by page (export, "select all matching" actions). */
export async function* allLeads(input: Omit<SearchInput, 'cursor' | 'limit'>, pageSize = 200): AsyncGenerator<LeadRow[]> {
  let cursor: string | undefined;
  for (;;) {
    const r = await bridge.call('campaigns.leads.search', { ...input, cursor, limit: pageSize });
    if (!r.ok) throw new Error(r.error.message);
    yield r.value.leads;
    if (!r.value.nextCursor) return;
    cursor = r.value.nextCursor;
  }
}
