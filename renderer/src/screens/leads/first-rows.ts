/**
 * The leads screen's first rows, drawn by the page's entry (main.tsx) in plain DOM as soon as the
 * first page of leads has answered, without waiting for React and the app's chunk to load and run.
 * It draws the whole window as the React app draws it at that moment (navigation, top bar, the
 * screen's header and filters, the table with the same columns, classes and sizes: columns.ts), in
 * a layer over #root. React renders the app underneath; when its table first shows what it will
 * show, it calls `takeOverFirstRows` in a layout effect, which removes the layer before the browser
 * paints again and hands over what the person did meanwhile: the scroll position, the focused
 * control, the text typed into the search box, the rows checked, and the clicks and keys given to
 * anything else, replayed on React's own controls at the same places.
 */
import type { SessionInfo } from '../../../../electron/bridge.ts';
import { bridge } from '../../bridge/index.ts';
import { NAV_ITEMS } from '../../app/nav-items.ts';
import { syncSummary } from '../../app/sync-summary.ts';
import { liveKey, subscribeLive } from '../../lib/live-ops.ts';
import { CAMPAIGNS_INPUT, leadCountInput, STAGES_INPUT, TAGS_INPUT } from '../../lib/workspace-inputs.ts';
import { DEFAULT_FILTERS, useApp } from '../../state/app-store.ts';
import type { LeadFilters } from '../../state/app-store.ts';
import { ariaSort, COLUMNS, HEADER_HEIGHT, layoutOf, leadCountText, parseHidden, readHidden, ROW_HEIGHT, sortArrow } from './columns.ts';
import type { CellNode } from './columns.ts';
import type { LeadPager } from './lead-pager.ts';

type Tag = { id: string; name: string; color: string };
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

let early: Early | null = null;
/** React's table has taken over (or the app went elsewhere): the first paint is no longer wanted. */
let over = false;
/** Subscriptions held until React's views hold their own (so theirs start with an answer). */
let held: (() => void)[] = [];

/** Builds an element (styles through the CSSOM: the page's CSP refuses style attributes). */
function el<K extends keyof HTMLElementTagNameMap>(tag: K, props: { cls?: string; text?: string; attrs?: Record<string, string>; style?: Record<string, string> } = {}, children: (Node | string)[] = []): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (props.cls !== undefined) e.className = props.cls;
  if (props.text !== undefined) e.textContent = props.text;
  for (const [k, v] of Object.entries(props.attrs ?? {})) e.setAttribute(k, v);
  for (const [k, v] of Object.entries(props.style ?? {})) e.style.setProperty(k, v);
  e.append(...children);
  return e;
}

function cellDom(nodes: CellNode[]): (Node | string)[] {
  return nodes.map((n) => {
    if (typeof n === 'string') return n;
    const style: Record<string, string> = {};
    if (n.style?.background) style.background = n.style.background;
    if (n.style?.color) style.color = n.style.color;
    return el(n.tag, { ...(n.cls !== undefined ? { cls: n.cls } : {}), ...(n.title !== undefined ? { attrs: { title: n.title } } : {}), style }, cellDom(n.children));
  });
}

/** Asks, now, for what the leads screen's first frame shows besides the rows, through the same live
 * subscriptions React's views use (so they start with these answers), and draws the first rows
 * once the session is open and the pager's first page and the tags have answered. Nothing is drawn
 * when React's table is there first, or when the window opens on something else. Resolves when the
 * app's chunk may run without delaying the first rows: they are painted, or will not be drawn
 * here, or a second has passed. */
export function paintFirstRowsWhenReady(pager: LeadPager, session: Promise<SessionInfo>): Promise<void> {
  const { filters, leadId } = useApp.getState();
  // A lead open in the panel narrows the table, and filters add controls: React draws those.
  if (leadId !== null || JSON.stringify(filters) !== JSON.stringify({ ...DEFAULT_FILTERS, sortBy: filters.sortBy, sortOrder: filters.sortOrder })) return Promise.resolve();
  let settle = () => undefined as void;
  const settled = new Promise<void>((resolve) => (settle = resolve));
  // React is not held back for long by a slow first page: it then draws its own "Loading…" rows.
  const cap = setTimeout(() => settle(), 1000);
  const done = () => {
    clearTimeout(cap);
    settle();
  };
  let open: Extract<SessionInfo, { state: 'open' }> | null = null;
  let sessionAnswered = false;
  let tags: Map<string, Tag> | null = null;
  const data: { count?: number; campaigns: { id: string; name: string }[]; stages: { id: string; name: string }[] } = { campaigns: [], stages: [] };
  let refresh: (() => void) | null = null;
  const ready = () => {
    if (over) return done();
    if (early) {
      refresh?.();
      return;
    }
    // Nothing to draw here (no rows, an error, no workspace): React draws what there is.
    if (sessionAnswered && !open) return done();
    if (pager.error !== null || (!pager.loading && pager.loadedCount === 0)) return done();
    if (!open || !tags || pager.loadedCount === 0) return;
    refresh = paint(pager, open, filters, tags, data);
    // Once the frame with the rows is painted.
    requestAnimationFrame(() => setTimeout(done, 0));
  };
  const hold = <T>(op: Parameters<typeof subscribeLive>[0], input: unknown, take: (value: T) => void) => {
    held.push(subscribeLive(op, input, liveKey(op, input), (r) => {
      if (r.ok) take(r.value as T);
      ready();
    }));
  };
  hold<{ tags: Tag[] }>('tags.getAll', TAGS_INPUT, (v) => (tags = new Map(v.tags.map((t) => [t.id, t]))));
  hold<{ count: number }>('campaigns.leads.count', leadCountInput(filters), (v) => (data.count = v.count));
  hold<{ basicCampaigns: { id: string; name: string }[] }>('campaigns.getBasic', CAMPAIGNS_INPUT, (v) => (data.campaigns = v.basicCampaigns));
  hold<{ stages: { id: string; name: string }[] }>('pipelineStages.getAll', STAGES_INPUT, (v) => (data.stages = v.stages));
  held.push(bridge.syncStatus.subscribe((s) => {
    useApp.getState().setSync(s);
    ready();
  }));
  held.push(pager.subscribe(ready));
  session.then((s) => {
    // The app's first render can then draw the workspace at once (App.tsx asks for it too).
    if (useApp.getState().session === null) useApp.getState().setSession(s);
    if (s.state === 'open') open = s;
    sessionAnswered = true;
    ready();
  }, done);
  return settled;
}

/** Draws the first paint; returns what redraws its live parts (rows, count, sync, filter options). */
function paint(pager: LeadPager, session: Extract<SessionInfo, { state: 'open' }>, filters: LeadFilters, tags: Map<string, Tag>, data: { count?: number; campaigns: { id: string; name: string }[]; stages: { id: string; name: string }[] }): () => void {
  const hidden = parseHidden(readHidden());
  const layout = layoutOf(false, hidden);
  const tagName = (id: string | null) => (id ? tags.get(id) : undefined);

  const nav = el('nav', { cls: 'nav', attrs: { 'aria-label': 'Main' } }, [
    el('div', { cls: 'brand' }, [el('span', { cls: 'logo', attrs: { 'aria-hidden': 'true' } }), 'Outreach CRM']),
    ...NAV_ITEMS.map((it) => el('button', { attrs: it.screen === 'leads' ? { 'aria-current': 'page' } : {} }, [el('span', { text: it.label }), el('kbd', { text: it.keys })])),
    el('div', { cls: 'spacer' }),
    el('div', { cls: 'workspace' }, [el('strong', { text: session.workspaceName }), session.member.name, ' · ', session.member.role, el('div', { text: session.kind === 'demo' ? 'Local demo workspace' : new URL(session.serverUrl ?? 'http://x').host })]),
  ]);
  const search = el('input', { attrs: { type: 'search', placeholder: 'Search leads by name, email, company, phone or profile URL   ( / )', 'aria-label': 'Search leads' } });
  const sync = el('button', { attrs: { title: 'Sync status: open Settings for details' } });
  const drawSync = () => {
    const s = useApp.getState().sync;
    const { cls, text, progress } = syncSummary(s);
    sync.className = `sync ${cls}`;
    sync.title = s?.error ?? 'Sync status: open Settings for details';
    const bar = progress
      ? [el('span', { cls: 'progress', attrs: { role: 'progressbar', 'aria-label': 'Sync progress', 'aria-valuenow': String(progress.done), 'aria-valuemin': '0', 'aria-valuemax': String(progress.total) } }, [el('span', { style: { width: `${progress.total > 0 ? Math.min(100, (100 * progress.done) / progress.total) : 100}%` } })])]
      : [];
    sync.replaceChildren(el('span', { cls: 'dot', attrs: { 'aria-hidden': 'true' } }), text, ...bar);
  };
  const topbar = el('header', { cls: 'topbar' }, [
    el('div', { cls: 'search' }, [search]),
    el('div', { cls: 'right' }, [sync, el('button', { cls: 'btn small', attrs: { title: 'Command palette' } }, ['Commands ', el('kbd', { text: 'Ctrl K' })])]),
  ]);

  const count = el('span', { cls: 'sub' });
  const drawCount = () => {
    count.textContent = leadCountText(data.count, pager);
    count.dataset.loaded = String(pager.loadedCount);
    count.dataset.more = pager.hasMore ? 'yes' : 'no';
  };
  const shownColumns = COLUMNS.length - hidden.size;
  const header = el('div', { cls: 'screen-header' }, [
    el('h1', { text: 'Leads' }),
    count,
    el('div', { cls: 'grow' }),
    el('div', { cls: 'column-chooser', style: { position: 'relative' } }, [el('button', { cls: 'btn', text: `Columns${hidden.size > 0 ? ` (${shownColumns} of ${COLUMNS.length})` : ''}`, attrs: { 'aria-haspopup': 'true', 'aria-expanded': 'false', title: 'Show or hide columns' } })]),
    el('button', { cls: 'btn', text: 'New lead', attrs: { title: 'New lead (n)' } }),
    el('button', { cls: 'btn', text: 'Import CSV' }),
    el('button', { cls: 'btn', text: 'Export CSV' }),
    el('button', { cls: 'btn', text: 'Duplicates', attrs: { title: 'Leads of one person, to merge (g d)' } }),
  ]);
  const option = (value: string, text: string) => el('option', { text, attrs: { value } });
  const campaignSelect = el('select', { attrs: { 'aria-label': 'Campaign' } });
  const tagSelect = el('select', { attrs: { 'aria-label': 'Tag' } });
  const stageSelect = el('select', { attrs: { 'aria-label': 'Pipeline stage' } });
  const drawFilters = () => {
    campaignSelect.replaceChildren(option('', 'All campaigns'), ...data.campaigns.map((c) => option(c.id, c.name)));
    tagSelect.replaceChildren(option('all', 'Any tag'), option('uncategorized', 'Uncategorized (no tag)'), ...[...tags.values()].map((t) => option(t.id, t.name)));
    stageSelect.replaceChildren(option('', 'Any stage'), ...data.stages.map((s) => option(s.name, s.name)));
  };
  const toolbar = el('div', { cls: 'toolbar', attrs: { role: 'search', 'aria-label': 'Lead filters' } }, [campaignSelect, tagSelect, stageSelect]);

  const thead = el('div', { cls: 'thead', attrs: { role: 'row' }, style: { 'grid-template-columns': layout.grid, height: `${HEADER_HEIGHT}px` } }, [
    el('div', { cls: 'th', attrs: { role: 'columnheader' } }, [el('input', { cls: 'check', attrs: { type: 'checkbox', 'aria-label': 'Select all loaded leads' } })]),
    ...layout.columns.map((c) => {
      const sort = ariaSort(filters, c);
      const arrow = sortArrow(filters, c);
      return el('div', { cls: `th${c.sort ? ' sortable' : ''}`, attrs: { role: 'columnheader', ...(sort ? { 'aria-sort': sort } : {}) }, style: c.num ? { 'justify-content': 'flex-end' } : {} }, [c.label, ...(arrow ? [el('span', { cls: 'arrow', text: arrow })] : [])]);
    }),
  ]);
  const body = el('div', { style: { position: 'relative' } });
  const viewport = el('div', { cls: 'viewport', attrs: { tabindex: '0' } }, [el('div', { style: { 'min-width': `${layout.minWidth}px` } }, [thead, body])]);
  const table = el('div', { cls: 'table', attrs: { role: 'grid', 'aria-label': 'Leads' } }, [viewport]);
  const checked = new Set<string>();
  // Where the rows are scrolled to, as the last scroll event said: read there, and not while
  // drawing, where reading the viewport's scroll position or height after the DOM changed would make
  // the browser lay the whole window out at once, again for every answer that arrives.
  let scrollTop = 0;
  /** The pager's version the rows were drawn from. */
  let drawn = -1;
  // Rows as the React table draws them: those in view and twelve more (its overscan), placed by
  // their index; a "Loading…" row after the last loaded one while more may exist. The window's
  // height stands for the viewport's (which is inside it).
  const drawRows = () => {
    drawn = pager.getVersion();
    const rows = pager.loadedCount + (pager.hasMore ? 1 : 0);
    table.setAttribute('aria-rowcount', String(pager.hasMore ? -1 : pager.loadedCount));
    body.style.height = `${rows * ROW_HEIGHT}px`;
    const last = Math.min(rows, Math.ceil((scrollTop + window.innerHeight) / ROW_HEIGHT) + 12);
    const out: HTMLElement[] = [];
    for (let i = 0; i < last; i++) {
      const r = pager.row(i);
      const place = { transform: `translateY(${i * ROW_HEIGHT}px)`, 'grid-template-columns': layout.grid };
      if (!r) {
        out.push(el('div', { cls: 'tr', attrs: { role: 'row' }, style: place }, [el('div', { cls: 'td loading-row', text: pager.error ?? 'Loading…', style: { 'grid-column': '1 / -1' } })]));
        continue;
      }
      const box = el('input', { cls: 'check', attrs: { type: 'checkbox', 'aria-label': `Select ${r.fullName}`, 'data-early-id': r.id } });
      box.checked = checked.has(r.id);
      out.push(el('div', { cls: `tr${box.checked ? ' selected' : ''}`, attrs: { role: 'row', 'aria-selected': String(box.checked), 'data-lead-id': r.id }, style: place }, [
        el('div', { cls: 'td', attrs: { role: 'gridcell' } }, [box]),
        ...layout.columns.map((c) => {
          const title = c.title?.(r);
          return el('div', { cls: `td${c.num ? ' num' : ''}`, attrs: { role: 'gridcell', ...(title ? { title } : {}) } }, cellDom(c.cell(r, tagName)));
        }),
      ]));
    }
    body.replaceChildren(...out);
  };

  const layer = el('div', { attrs: { 'data-first-paint': 'leads' }, style: { position: 'fixed', inset: '0', 'z-index': '100', background: 'var(--bg)' } }, [
    el('div', { cls: 'app' }, [nav, topbar, el('main', { cls: 'main' }, [el('div', { cls: 'screen' }, [header, toolbar, table])]), el('div', { cls: 'toasts', attrs: { 'aria-live': 'polite' } })]),
  ]);
  drawSync();
  drawCount();
  drawFilters();
  drawRows();
  // React renders underneath, unseen (and out of the way of anyone looking for a control by role).
  const root = document.getElementById('root');
  root?.style.setProperty('visibility', 'hidden');
  document.body.append(layer);

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
  if (!e) return null;
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
