/**
 * The leads screen's first paint as a description, written once for both who draw it: the page's
 * entry in plain DOM (first-rows.ts, through `toDom`) when the first page has answered, and the web
 * host, which sends it inside the page's HTML (electron/first-screen-html.ts, through `toHtml`) so
 * that the browser paints the rows with its first frame, before any script runs. It is the window
 * as the React app draws it (navigation, top bar, the screen's header and filters, the table with
 * the same columns, classes and sizes as LeadsTable.tsx: columns.ts). Pure: no DOM at load, no
 * bridge, no app state, so Node can run it.
 */
import type { SessionInfo, SyncStatus } from '../../../../electron/bridge.ts';
import { NAV_ITEMS } from '../../app/nav-items.ts';
import { syncSummary } from '../../app/sync-summary.ts';
import type { LeadFilters } from '../../state/lead-filters.ts';
import { ariaSort, COLUMNS, HEADER_HEIGHT, leadCountText, ROW_HEIGHT, sortArrow } from './columns.ts';
import type { CellNode, Layout } from './columns.ts';
import type { LeadRow } from './lead-pager.ts';
import { escapeHtml, escapeHtmlText } from '../../../../shared/html.ts';

/** An element: a tag, its class, attributes and inline styles (drawn through the CSSOM, or as
 * classes of a style sheet in HTML: the page's CSP refuses style attributes), and its children,
 * text or elements. */
export type VElement = { tag: keyof HTMLElementTagNameMap; cls?: string; attrs?: Record<string, string>; style?: Record<string, string>; children: VNode[] };
export type VNode = string | VElement;

export type OpenSession = Extract<SessionInfo, { state: 'open' }>;
export type Tag = { id: string; name: string; color: string };
export type Named = { id: string; name: string };
/** The rows known so far: the pager's (first-rows.ts), or the first page the web host read. */
export type RowSource = { loadedCount: number; hasMore: boolean; loading: boolean; error: string | null; row(i: number): LeadRow | undefined };

/** What the first paint shows. Lists not answered yet are undefined. */
export type FirstScreen = {
  session: OpenSession;
  sync: SyncStatus | null;
  filters: LeadFilters;
  layout: Layout;
  tags: Map<string, Tag>;
  count: number | undefined;
  campaigns: Named[] | undefined;
  stages: Named[] | undefined;
  rows: RowSource;
  /** Rows checked (their ids). */
  checked: ReadonlySet<string>;
  /** Where the rows are scrolled to, and the height they are seen in (the window's). */
  scrollTop: number;
  height: number;
  /** Rows drawn past those in view (the React table's overscan, 12, unless said). */
  overscan?: number;
};

/** The web host does not know the window's height: it sends the rows a window this high shows, and
 * none past them (the entry draws those when the live page answers). */
export const SERVED_HEIGHT = 1200;

function el(tag: VElement['tag'], props: { cls?: string; text?: string; attrs?: Record<string, string>; style?: Record<string, string> } = {}, children: VNode[] = []): VElement {
  return {
    tag,
    ...(props.cls !== undefined ? { cls: props.cls } : {}),
    ...(props.attrs ? { attrs: props.attrs } : {}),
    ...(props.style && Object.keys(props.style).length > 0 ? { style: props.style } : {}),
    children: props.text !== undefined ? [props.text, ...children] : children,
  };
}

function cells(nodes: CellNode[]): VNode[] {
  return nodes.map((n) => {
    if (typeof n === 'string') return n;
    const style: Record<string, string> = {};
    if (n.style?.background) style.background = n.style.background;
    if (n.style?.color) style.color = n.style.color;
    return el(n.tag, { ...(n.cls !== undefined ? { cls: n.cls } : {}), ...(n.title !== undefined ? { attrs: { title: n.title } } : {}), style }, cells(n.children));
  });
}

/** The sync indicator's class, tooltip and content. */
export function syncPart(s: SyncStatus | null): { cls: string; title: string; children: VNode[] } {
  const { cls, text, progress } = syncSummary(s);
  const bar = progress
    ? [el('span', { cls: 'progress', attrs: { role: 'progressbar', 'aria-label': 'Sync progress', 'aria-valuenow': String(progress.done), 'aria-valuemin': '0', 'aria-valuemax': String(progress.total) } }, [el('span', { style: { width: `${progress.total > 0 ? Math.min(100, (100 * progress.done) / progress.total) : 100}%` } })])]
    : [];
  return { cls: `sync ${cls}`, title: s?.error ?? 'Sync status: open Settings for details', children: [el('span', { cls: 'dot', attrs: { 'aria-hidden': 'true' } }), text, ...bar] };
}

/** The count's text and what it was drawn from (data attributes the tests read). */
export function countPart(count: number | undefined, rows: RowSource): { text: string; loaded: string; more: string } {
  return { text: leadCountText(count, rows), loaded: String(rows.loadedCount), more: rows.hasMore ? 'yes' : 'no' };
}

const option = (value: string, text: string) => el('option', { text, attrs: { value } });

/** The filters' options. */
export function filterOptions(s: Pick<FirstScreen, 'campaigns' | 'tags' | 'stages'>): { campaignId: VElement[]; tagId: VElement[]; pipelineStage: VElement[] } {
  return {
    campaignId: [option('', 'All campaigns'), ...(s.campaigns ?? []).map((c) => option(c.id, c.name))],
    tagId: [option('all', 'Any tag'), option('uncategorized', 'Uncategorized (no tag)'), ...[...s.tags.values()].map((t) => option(t.id, t.name))],
    pipelineStage: [option('', 'Any stage'), ...(s.stages ?? []).map((st) => option(st.name, st.name))],
  };
}

/** The table's rows as the React table draws them: those in view and twelve more (its overscan),
 * placed by their index; a "Loading…" row after the last loaded one while more may exist. */
export function rowsPart(s: Pick<FirstScreen, 'rows' | 'layout' | 'tags' | 'checked' | 'scrollTop' | 'height' | 'overscan'>): { height: string; rowCount: string; rows: VElement[] } {
  const { rows: source, layout } = s;
  const tagName = (id: string | null) => (id ? s.tags.get(id) : undefined);
  const rows = source.loadedCount + (source.hasMore ? 1 : 0);
  const last = Math.min(rows, Math.ceil((s.scrollTop + s.height) / ROW_HEIGHT) + (s.overscan ?? 12));
  const out: VElement[] = [];
  for (let i = 0; i < last; i++) {
    const r = source.row(i);
    const place = { transform: `translateY(${i * ROW_HEIGHT}px)`, 'grid-template-columns': layout.grid };
    if (!r) {
      out.push(el('div', { cls: 'tr', attrs: { role: 'row' }, style: place }, [el('div', { cls: 'td loading-row', text: source.error ?? 'Loading…', style: { 'grid-column': '1 / -1' } })]));
      continue;
    }
    const checked = s.checked.has(r.id);
    out.push(el('div', { cls: `tr${checked ? ' selected' : ''}`, attrs: { role: 'row', 'aria-selected': String(checked), 'data-lead-id': r.id }, style: place }, [
      el('div', { cls: 'td', attrs: { role: 'gridcell' } }, [el('input', { cls: 'check', attrs: { type: 'checkbox', 'aria-label': `Select ${r.fullName}`, 'data-early-id': r.id, ...(checked ? { checked: '' } : {}) } })]),
      ...layout.columns.map((c) => {
        const title = c.title?.(r);
        return el('div', { cls: `td${c.num ? ' num' : ''}`, attrs: { role: 'gridcell', ...(title ? { title } : {}) } }, cells(c.cell(r, tagName)));
      }),
    ]));
  }
  return { height: `${rows * ROW_HEIGHT}px`, rowCount: String(source.hasMore ? -1 : source.loadedCount), rows: out };
}

/** The whole first paint: a layer over #root, `[data-first-paint]`. The parts drawn again as answers
 * come (first-rows.ts) are found in it by their place: `.topbar .sync`, `.screen-header .sub`, the
 * filters by their labels, `[data-rows]` (the rows' box). */
export function firstScreenNode(s: FirstScreen): VElement {
  const { session, layout, filters } = s;
  const nav = el('nav', { cls: 'nav', attrs: { 'aria-label': 'Main' } }, [
    el('div', { cls: 'brand' }, [el('span', { cls: 'logo', attrs: { 'aria-hidden': 'true' } }), 'Outreach CRM']),
    ...NAV_ITEMS.map((it) => el('button', { attrs: it.screen === 'leads' ? { 'aria-current': 'page' } : {} }, [el('span', { text: it.label }), el('kbd', { text: it.keys })])),
    el('div', { cls: 'spacer' }),
    el('div', { cls: 'workspace' }, [el('strong', { text: session.workspaceName }), session.member.name, ' · ', session.member.role, el('div', { text: session.kind === 'demo' ? 'Local demo workspace' : new URL(session.serverUrl ?? 'http://x').host })]),
  ]);
  const sync = syncPart(s.sync);
  const topbar = el('header', { cls: 'topbar' }, [
    el('div', { cls: 'search' }, [el('input', { attrs: { type: 'search', placeholder: 'Search leads by name, email, company, phone or profile URL   ( / )', 'aria-label': 'Search leads' } })]),
    el('div', { cls: 'right' }, [el('button', { cls: sync.cls, attrs: { title: sync.title } }, sync.children), el('button', { cls: 'btn small', attrs: { title: 'Command palette' } }, ['Commands ', el('kbd', { text: 'Ctrl K' })])]),
  ]);
  const count = countPart(s.count, s.rows);
  const hidden = COLUMNS.length - layout.columns.length;
  const header = el('div', { cls: 'screen-header' }, [
    el('h1', { text: 'Leads' }),
    el('span', { cls: 'sub', text: count.text, attrs: { 'data-loaded': count.loaded, 'data-more': count.more } }),
    el('div', { cls: 'grow' }),
    el('div', { cls: 'column-chooser', style: { position: 'relative' } }, [el('button', { cls: 'btn', text: `Columns${hidden > 0 ? ` (${layout.columns.length} of ${COLUMNS.length})` : ''}`, attrs: { 'aria-haspopup': 'true', 'aria-expanded': 'false', title: 'Show or hide columns' } })]),
    el('button', { cls: 'btn', text: 'New lead', attrs: { title: 'New lead (n)' } }),
    el('button', { cls: 'btn', text: 'Import CSV' }),
    el('button', { cls: 'btn', text: 'Export CSV' }),
    el('button', { cls: 'btn', text: 'Duplicates', attrs: { title: 'Leads of one person, to merge (g d)' } }),
  ]);
  const options = filterOptions(s);
  const toolbar = el('div', { cls: 'toolbar', attrs: { role: 'search', 'aria-label': 'Lead filters' } }, [
    el('select', { attrs: { 'aria-label': 'Campaign' } }, options.campaignId),
    el('select', { attrs: { 'aria-label': 'Tag' } }, options.tagId),
    el('select', { attrs: { 'aria-label': 'Pipeline stage' } }, options.pipelineStage),
  ]);
  const thead = el('div', { cls: 'thead', attrs: { role: 'row' }, style: { 'grid-template-columns': layout.grid, height: `${HEADER_HEIGHT}px` } }, [
    el('div', { cls: 'th', attrs: { role: 'columnheader' } }, [el('input', { cls: 'check', attrs: { type: 'checkbox', 'aria-label': 'Select all loaded leads' } })]),
    ...layout.columns.map((c) => {
      const sort = ariaSort(filters, c);
      const arrow = sortArrow(filters, c);
      return el('div', { cls: `th${c.sort ? ' sortable' : ''}`, attrs: { role: 'columnheader', ...(sort ? { 'aria-sort': sort } : {}) }, style: c.num ? { 'justify-content': 'flex-end' } : {} }, [c.label, ...(arrow ? [el('span', { cls: 'arrow', text: arrow })] : [])]);
    }),
  ]);
  const rows = rowsPart(s);
  const body = el('div', { attrs: { 'data-rows': '' }, style: { position: 'relative', height: rows.height } }, rows.rows);
  const viewport = el('div', { cls: 'viewport', attrs: { tabindex: '0' } }, [el('div', { style: { 'min-width': `${layout.minWidth}px` } }, [thead, body])]);
  const table = el('div', { cls: 'table', attrs: { role: 'grid', 'aria-label': 'Leads', 'aria-rowcount': rows.rowCount } }, [viewport]);
  return el('div', { attrs: { 'data-first-paint': 'leads' }, style: { position: 'fixed', inset: '0', 'z-index': '100', background: 'var(--bg)' } }, [
    el('div', { cls: 'app' }, [nav, topbar, el('main', { cls: 'main' }, [el('div', { cls: 'screen' }, [header, toolbar, table])]), el('div', { cls: 'toasts', attrs: { 'aria-live': 'polite' } })]),
  ]);
}

/** Draws a description in the page (in the browser only). */
export function toDom(node: VElement): HTMLElement {
  const e = document.createElement(node.tag);
  if (node.cls !== undefined) e.className = node.cls;
  for (const [k, v] of Object.entries(node.attrs ?? {})) e.setAttribute(k, v);
  for (const [k, v] of Object.entries(node.style ?? {})) e.style.setProperty(k, v);
  e.append(...toDomChildren(node.children));
  return e;
}

export function toDomChildren(nodes: VNode[]): (Node | string)[] {
  return nodes.map((n) => (typeof n === 'string' ? n : toDom(n)));
}

const NAME = /^[a-z][a-z0-9-]*$/;
const VOID = new Set(['input', 'br', 'img', 'hr', 'meta', 'link']);
/** A CSS value that cannot leave its declaration or fetch anything: no quotes, semicolons, braces,
 * angle brackets, backslashes, comments, url() or image functions. */
const SAFE_CSS = /^[\w #%().,/+-]*$/;
const UNSAFE_CSS = /url|image|\/\/|\/\*/i;

/** The description as HTML, every text and attribute value escaped. Inline styles become classes
 * (`fp0`, `fp1`, …) of a style sheet returned beside it, for one `<style>` element allowed by the
 * response's CSP nonce; a value that is not plainly a length, colour or the like is left out. */
export function toHtml(node: VElement): { html: string; css: string } {
  const classes = new Map<string, string>();
  const write = (n: VNode): string => {
    if (typeof n === 'string') return escapeHtmlText(n);
    if (!NAME.test(n.tag)) throw new Error(`toHtml: bad tag ${n.tag}`);
    const decls = Object.entries(n.style ?? {})
      .filter(([k, v]) => NAME.test(k) && SAFE_CSS.test(v) && !UNSAFE_CSS.test(v))
      .map(([k, v]) => `${k}: ${v}`)
      .join('; ');
    let styleClass = '';
    if (decls !== '') {
      styleClass = classes.get(decls) ?? `fp${classes.size}`;
      classes.set(decls, styleClass);
    }
    const cls = [n.cls ?? '', styleClass].filter((c) => c !== '').join(' ');
    let out = `<${n.tag}`;
    if (cls !== '') out += ` class="${escapeHtml(cls)}"`;
    for (const [k, v] of Object.entries(n.attrs ?? {})) {
      if (!NAME.test(k) || k.startsWith('on') || k === 'style') throw new Error(`toHtml: bad attribute ${k}`);
      out += v === '' ? ` ${k}` : ` ${k}="${escapeHtml(v)}"`;
    }
    out += '>';
    if (VOID.has(n.tag)) return out;
    return `${out}${n.children.map(write).join('')}</${n.tag}>`;
  };
  const html = write(node);
  const css = [...classes].map(([decls, cls]) => `[data-first-paint] .${cls}, [data-first-paint].${cls} { ${decls} }`).join('\n');
  return { html, css };
}
