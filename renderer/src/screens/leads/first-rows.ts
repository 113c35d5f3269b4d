/**
 * The leads screen's first rows, drawn before React and the app's chunk have loaded and run. Either
 * the page's HTML brought them (the web host draws the first screen into it: electron/first-screen-
 * html.ts), and the page's entry (main.tsx) adopts that layer, or the entry draws them in plain DOM as
 * soon as the first page of leads has answered. Both draw one description (first-screen.ts): the
 * whole window as the React app draws it at that moment (navigation, top bar, the screen's header and
 * filters, the table with the same columns, classes and sizes: columns.ts), in a layer over #root.
 * The layer then draws the live answers as they come. React renders the app underneath; when its
 * table first shows what it will show, it calls `takeOverFirstRows` in a layout effect, which
 * removes the layer before the browser paints again and hands over what the person did meanwhile:
 * the scroll position, the focused control, the text typed into the search box, the rows checked,
 * and the clicks and keys given to anything else, replayed on React's own controls at the same
 * places.
 */
import type { SessionInfo } from '../../../../electron/bridge.ts';
import { bridge } from '../../bridge/index.ts';
import { liveKey, subscribeLive } from '../../lib/live-ops.ts';
import { CAMPAIGNS_INPUT, leadCountInput, STAGES_INPUT, TAGS_INPUT } from '../../lib/workspace-inputs.ts';
import { DEFAULT_FILTERS, useApp } from '../../state/app-store.ts';
import type { LeadFilters } from '../../state/app-store.ts';
import { layoutOf, parseHidden, readHidden } from './columns.ts';
import type { Layout } from './columns.ts';
import { countPart, filterOptions, firstScreenNode, rowsPart, syncPart, toDom, toDomChildren } from './first-screen.ts';
import type { Named, OpenSession, Tag, VElement } from './first-screen.ts';
import type { LeadPager } from './lead-pager.ts';

type Replay = { kind: 'click'; x: number; y: number; mods: MouseEventInit } | { kind: 'key'; init: KeyboardEventInit };

/** What the first paint holds while it shows. */
type Early = {
  layer: HTMLElement;
  viewport: HTMLElement;
  search: HTMLInputElement;
  selects: { campaignId: HTMLSelectElement; tagId: HTMLSelectElement; pipelineStage: HTMLSelectElement };
  checked: Set<string>;
  replay: Replay[];
  stop: () => void;
};

/** The live answers the first paint draws (undefined or null until answered). */
type Live = { session: OpenSession | null; tags: Map<string, Tag> | null; count?: number; campaigns?: Named[]; stages?: Named[] };

let early: Early | null = null;
/** React's table has taken over (or the app went elsewhere): the first paint is no longer wanted. */
let over = false;
/** Subscriptions held until React's views hold their own (so theirs start with an answer). */
let held: (() => void)[] = [];

/** The first paint the page's HTML brought, if any. */
const servedLayer = (): HTMLElement | null => document.querySelector<HTMLElement>('body > [data-first-paint]');

/** Asks, now, for what the leads screen's first frame shows besides the rows, through the same live
 * subscriptions React's views use (so they start with these answers). Adopts the first paint the
 * page's HTML brought, or draws the first rows once the session is open and the pager's first page
 * and the tags have answered. Nothing is drawn when React's table is there first, or when the window
 * opens on something else. Resolves when the app's chunk may run without delaying the first rows:
 * they are painted, or will not be drawn here, or a second has passed. */
export function paintFirstRowsWhenReady(pager: LeadPager, session: Promise<SessionInfo>): Promise<void> {
  const { filters, leadId } = useApp.getState();
  const hidden = parseHidden(readHidden());
  const served = servedLayer();
  // A lead open in the panel narrows the table, and filters add controls: React draws those.
  if (leadId !== null || JSON.stringify(filters) !== JSON.stringify({ ...DEFAULT_FILTERS, sortBy: filters.sortBy, sortOrder: filters.sortOrder })) {
    served?.remove();
    return Promise.resolve();
  }
  let settle = () => undefined as void;
  const settled = new Promise<void>((resolve) => (settle = resolve));
  // React is not held back for long by a slow first page: it then draws its own "Loading…" rows.
  const cap = setTimeout(() => settle(), 1000);
  const done = () => {
    clearTimeout(cap);
    settle();
  };
  const layout = layoutOf(false, hidden);
  const live: Live = { session: null, tags: null };
  let sessionAnswered = false;
  let refresh: (() => void) | null = null;
  // The web host drew every column: with columns hidden on this machine the entry draws its own.
  if (served && (hidden.size > 0 || filters.sortBy !== DEFAULT_FILTERS.sortBy || filters.sortOrder !== DEFAULT_FILTERS.sortOrder)) served.remove();
  else if (served) {
    try {
      refresh = paint(pager, filters, layout, live, served);
      // Painted already: the page's module script ran this entry once the frame with these rows was
      // painted (or when the browser paints none: boot.ts). The app's chunk runs now, not a frame on.
      done();
    } catch {
      // Not the markup this entry draws (a page from an older build): the entry draws its own.
      served.remove();
    }
  }
  const ready = () => {
    if (over) return done();
    if (early) {
      refresh?.();
      return;
    }
    // Nothing to draw here (no rows, an error, no workspace): React draws what there is.
    if (sessionAnswered && !live.session) return done();
    if (pager.error !== null || (!pager.loading && pager.loadedCount === 0)) return done();
    if (!live.session || !live.tags || pager.loadedCount === 0) return;
    refresh = paint(pager, filters, layout, live, null);
    // Once the frame with the rows is painted.
    requestAnimationFrame(() => setTimeout(done, 0));
  };
  const hold = <T>(op: Parameters<typeof subscribeLive>[0], input: unknown, take: (value: T) => void) => {
    held.push(subscribeLive(op, input, liveKey(op, input), (r) => {
      if (r.ok) take(r.value as T);
      ready();
    }));
  };
  hold<{ tags: Tag[] }>('tags.getAll', TAGS_INPUT, (v) => (live.tags = new Map(v.tags.map((t) => [t.id, t]))));
  hold<{ count: number }>('campaigns.leads.count', leadCountInput(filters), (v) => (live.count = v.count));
  hold<{ basicCampaigns: Named[] }>('campaigns.getBasic', CAMPAIGNS_INPUT, (v) => (live.campaigns = v.basicCampaigns));
  hold<{ stages: Named[] }>('pipelineStages.getAll', STAGES_INPUT, (v) => (live.stages = v.stages));
  held.push(bridge.syncStatus.subscribe((s) => {
    useApp.getState().setSync(s);
    ready();
  }));
  held.push(pager.subscribe(ready));
  session.then((s) => {
    // The app's first render can then draw the workspace at once (App.tsx asks for it too).
    if (useApp.getState().session === null) useApp.getState().setSession(s);
    if (s.state === 'open') live.session = s;
    sessionAnswered = true;
    ready();
  }, done);
  return settled;
}

/** Finds a part of the first paint by its place (first-screen.ts names them). */
function part<T extends Element>(layer: HTMLElement, selector: string, type: { new (): T; prototype: T }): T {
  const found = layer.querySelector(selector);
  if (!(found instanceof type)) throw new Error(`The first paint has no ${selector}`);
  return found;
}

/** Draws the first paint, or adopts the one the page's HTML brought (`served`: drawn from the web
 * host's answers, which the live ones replace as they come); returns what redraws its live parts
 * (rows, count, sync, filter options). */
function paint(pager: LeadPager, filters: LeadFilters, layout: Layout, live: Live, served: HTMLElement | null): () => void {
  const checked = new Set<string>();
  // Where the rows are scrolled to, as the last scroll event said: read there, and not while
  // drawing, where reading the viewport's scroll position or height after the DOM changed would make
  // the browser lay the whole window out at once, again for every answer that arrives.
  let scrollTop = 0;
  let layer: HTMLElement;
  if (served) layer = served;
  else {
    if (!live.session || !live.tags) throw new Error('The first paint needs the session and the tags');
    layer = toDom(firstScreenNode({ session: live.session, sync: useApp.getState().sync, filters, layout, tags: live.tags, count: live.count, campaigns: live.campaigns, stages: live.stages, rows: pager, checked, scrollTop, height: window.innerHeight }));
  }
  const search = part(layer, '.topbar input[type="search"]', HTMLInputElement);
  const sync = part(layer, '.topbar .sync', HTMLButtonElement);
  const count = part(layer, '.screen-header .sub', HTMLSpanElement);
  const campaignSelect = part(layer, 'select[aria-label="Campaign"]', HTMLSelectElement);
  const tagSelect = part(layer, 'select[aria-label="Tag"]', HTMLSelectElement);
  const stageSelect = part(layer, 'select[aria-label="Pipeline stage"]', HTMLSelectElement);
  const table = part(layer, '.table', HTMLDivElement);
  const viewport = part(layer, '.table .viewport', HTMLDivElement);
  const body = part(layer, '.table [data-rows]', HTMLDivElement);
  if (served) {
    // What was done on it before this script ran: rows checked, a scroll.
    for (const box of Array.from(layer.querySelectorAll<HTMLInputElement>('input[data-early-id]'))) {
      if (box.checked && box.dataset.earlyId) checked.add(box.dataset.earlyId);
    }
    scrollTop = viewport.scrollTop;
  }

  const drawSync = () => {
    const s = useApp.getState().sync;
    if (!s) return;
    const p = syncPart(s);
    sync.className = p.cls;
    sync.title = p.title;
    sync.replaceChildren(...toDomChildren(p.children));
  };
  const drawCount = () => {
    // The web host's count stays until the live one answers.
    if (live.count === undefined && (pager.loading || served)) return;
    const c = countPart(live.count, pager);
    count.textContent = c.text;
    count.dataset.loaded = c.loaded;
    count.dataset.more = c.more;
  };
  const options = (select: HTMLSelectElement, list: VElement[]) => {
    const value = select.value;
    select.replaceChildren(...toDomChildren(list));
    select.value = value;
    if (select.selectedIndex < 0) select.selectedIndex = 0;
  };
  const drawFilters = () => {
    const o = filterOptions({ campaigns: live.campaigns, tags: live.tags ?? new Map(), stages: live.stages });
    if (live.campaigns) options(campaignSelect, o.campaignId);
    if (live.tags) options(tagSelect, o.tagId);
    if (live.stages) options(stageSelect, o.pipelineStage);
  };
  /** The pager's version the rows were drawn from (none: the web host's rows). */
  let drawn = served ? -1 : pager.getVersion();
  // The window's height stands for the viewport's (which is inside it).
  const drawRows = () => {
    // The web host's rows stay until the pager's first page (and the tags) have answered.
    if (pager.loading || !live.tags) return;
    drawn = pager.getVersion();
    const r = rowsPart({ rows: pager, layout, tags: live.tags, checked, scrollTop, height: window.innerHeight });
    table.setAttribute('aria-rowcount', r.rowCount);
    body.style.height = r.height;
    body.replaceChildren(...toDomChildren(r.rows));
  };

  // React renders underneath, unseen (and out of the way of anyone looking for a control by role).
  const root = document.getElementById('root');
  root?.style.setProperty('visibility', 'hidden');
  if (!served) document.body.append(layer);
  // Marks the layer as live: its handlers are bound and it draws the answers that come.
  layer.setAttribute('data-live', '');

  // Until React takes over: rows checked stay checked; text goes into the search box; other clicks
  // and keys wait, to be replayed on React's controls.
  const replay: Replay[] = [];
  const onClick = (e: MouseEvent) => {
    const t = e.target as HTMLElement;
    if (t === search || t instanceof HTMLSelectElement || t instanceof HTMLOptionElement) return;
    const id = t instanceof HTMLInputElement ? t.dataset.earlyId : undefined;
    if (id) {
      if (t instanceof HTMLInputElement && t.checked) checked.add(id);
      else checked.delete(id);
      const row = t.closest('.tr');
      row?.classList.toggle('selected', checked.has(id));
      row?.setAttribute('aria-selected', String(checked.has(id)));
      return;
    }
    e.preventDefault();
    e.stopPropagation();
    replay.push({ kind: 'click', x: e.clientX, y: e.clientY, mods: { shiftKey: e.shiftKey, ctrlKey: e.ctrlKey, metaKey: e.metaKey, altKey: e.altKey } });
  };
  const onKey = (e: KeyboardEvent) => {
    // Typing in the search box and choosing in a filter work here and are handed over; Tab moves
    // the focus, which is handed over too.
    if (e.target === search || e.target instanceof HTMLSelectElement || ['Tab', 'Shift', 'Control', 'Alt', 'Meta'].includes(e.key)) return;
    e.preventDefault();
    e.stopPropagation();
    replay.push({ kind: 'key', init: { key: e.key, code: e.code, shiftKey: e.shiftKey, ctrlKey: e.ctrlKey, metaKey: e.metaKey, altKey: e.altKey, repeat: e.repeat } });
  };
  const onScroll = () => {
    scrollTop = viewport.scrollTop;
    drawRows();
  };
  layer.addEventListener('click', onClick, true);
  window.addEventListener('keydown', onKey, true);
  viewport.addEventListener('scroll', onScroll, { passive: true });
  early = {
    layer,
    viewport,
    search,
    selects: { campaignId: campaignSelect, tagId: tagSelect, pipelineStage: stageSelect },
    checked,
    replay,
    stop: () => {
      layer.removeEventListener('click', onClick, true);
      window.removeEventListener('keydown', onKey, true);
      viewport.removeEventListener('scroll', onScroll);
    },
  };
  // Later answers (the count, the filters' options, the sync, the next page) are drawn once per
  // frame, right before it is laid out, and the rows only when the pager has changed.
  let scheduled = false;
  return () => {
    if (scheduled) return;
    scheduled = true;
    requestAnimationFrame(() => {
      scheduled = false;
      if (!layer.isConnected) return;
      drawSync();
      drawCount();
      drawFilters();
      if (pager.getVersion() !== drawn) drawRows();
    });
  };
}

/** Ends the first paint: React's views now hold their own subscriptions, so the ones asked for
 * early are let go a moment later (a second: React subscribes in its effects right after). */
function finish(): Early | null {
  over = true;
  const e = early;
  early = null;
  const release = held;
  held = [];
  setTimeout(() => {
    for (const stop of release) stop();
  }, 1000);
  if (!e) {
    // A first paint the page's HTML brought and the entry did not adopt (another screen).
    servedLayer()?.remove();
    return null;
  }
  e.stop();
  e.layer.remove();
  document.getElementById('root')?.style.removeProperty('visibility');
  return e;
}

/** How far the first rows are scrolled (where React's table starts: its virtualizer scrolls its
 * viewport to its initial offset when it attaches, so setting the offset once is not enough). */
export function firstRowsScrollTop(): number {
  return early?.viewport.scrollTop ?? 0;
}

/** React's leads table is drawn (called in its layout effect, before the browser paints): the first
 * paint goes, and what was done on it moves to React's table. Returns the ids of the rows checked on
 * it, for the table's selection. */
export function takeOverFirstRows(viewport: HTMLElement): string[] {
  // Read while the first paint is in the page (a removed element has no scroll position or place).
  const focused = document.activeElement;
  const scrollTop = early?.viewport.scrollTop ?? 0;
  const scrollLeft = early?.viewport.scrollLeft ?? 0;
  const focusRect = focused instanceof HTMLElement && early?.layer.contains(focused) ? focused.getBoundingClientRect() : null;
  const e = finish();
  if (!e) return [];
  viewport.scrollTop = scrollTop;
  viewport.scrollLeft = scrollLeft;
  if (focused === e.viewport) viewport.focus({ preventScroll: true });
  else if (focusRect) {
    const twin = document.elementFromPoint(focusRect.left + focusRect.width / 2, focusRect.top + focusRect.height / 2);
    (twin?.closest('input, select, button, [tabindex]') as HTMLElement | null)?.focus({ preventScroll: true });
  }
  // Text typed and filters chosen meanwhile: the app's filters (React's top bar and filter bar show
  // them, and the table shows what they match).
  const patch: Partial<LeadFilters> = {};
  if (e.search.value !== '') patch.query = e.search.value;
  if (e.selects.campaignId.value !== '') patch.campaignId = e.selects.campaignId.value;
  if (e.selects.tagId.value !== 'all') patch.tagId = e.selects.tagId.value;
  if (e.selects.pipelineStage.value !== '') patch.pipelineStage = e.selects.pipelineStage.value;
  if (Object.keys(patch).length > 0) useApp.getState().setFilters(patch);
  // Replayed once React has finished this commit, in the order given.
  if (e.replay.length > 0) {
    setTimeout(() => {
      for (const r of e.replay) {
        if (r.kind === 'key') (document.activeElement ?? document.body).dispatchEvent(new KeyboardEvent('keydown', { ...r.init, bubbles: true, cancelable: true }));
        else document.elementFromPoint(r.x, r.y)?.dispatchEvent(new MouseEvent('click', { ...r.mods, clientX: r.x, clientY: r.y, bubbles: true, cancelable: true, view: window }));
      }
    }, 0);
  }
  return [...e.checked];
}

/** The app shows something other than the leads table (another screen, the first-run screen): the
 * first paint goes without handing anything over. */
export function dropFirstRows(): void {
  finish();
}
