/** The leads table's columns, without React: what each cell shows, as a small tree of elements that
 * the React table (LeadsTable.tsx) and the page's first paint (first-rows.ts, before React has
 * loaded) both draw, so the two draw the same markup. */
import { relative, shortDate } from '../../lib/format.ts';
import type { LeadFilters, SortBy } from '../../state/app-store.ts';
import type { LeadRow } from './lead-pager.ts';

export const ROW_HEIGHT = 40;
/** The header sits inside the scrolling box (so it scrolls sideways with the rows): rows start below it. */
export const HEADER_HEIGHT = 34;
export const CHECKBOX_WIDTH = 40;

/** An element of a cell: text, or a div/span with a class, a tooltip and inline colours. */
export type CellNode = string | { tag: 'div' | 'span'; cls?: string; title?: string; style?: { background?: string; color?: string }; children: CellNode[] };
export type TagLookup = (id: string | null) => { name: string; color: string } | undefined;

/** `min`: the column's width in px, or its least width when it takes a share (`grow`) of what is left. */
export type Column = { key: string; label: string; min: number; grow?: number; sort?: SortBy; num?: boolean; title?: (r: LeadRow) => string; cell: (r: LeadRow, tagName: TagLookup) => CellNode[] };

const div = (children: CellNode[], cls?: string): CellNode => ({ tag: 'div', ...(cls !== undefined ? { cls } : {}), children });
const span = (children: CellNode[], cls?: string, title?: string): CellNode => ({ tag: 'span', ...(cls !== undefined ? { cls } : {}), ...(title !== undefined ? { title } : {}), children });
const faint = (text: string): CellNode => span([text], 'faint');

/** The campaign a row's sequence runs in, by name. */
const campaignOf = (r: LeadRow): string => r.campaigns.find((c) => c.id === r.leadSequence?.campaignId)?.name ?? '';
const senderOf = (r: LeadRow): string => (r.leadSequence?.sdrProfile ? `${r.leadSequence.sdrProfile.firstName} ${r.leadSequence.sdrProfile.lastName}` : 'Unassigned');

/** A pipeline stage as a coloured pill; unstaged leads show as "New" (as StagePill.tsx). */
export function stagePill(stage: { name: string; colorHex: string } | null): CellNode {
  const s = stage ?? { name: 'New', colorHex: '#94a3b8' };
  return span([{ tag: 'span', cls: 'dot', style: { background: s.colorHex }, children: [] }, s.name], 'pill', s.name);
}

/** A tag as a tinted pill, or a dash (as TagPill in StagePill.tsx). */
export function tagPill(tag: { name: string; color: string } | undefined): CellNode {
  if (!tag) return faint('—');
  return { tag: 'span', cls: 'pill', style: { background: `${tag.color}22`, color: '#1f2937' }, children: [{ tag: 'span', cls: 'dot', style: { background: tag.color }, children: [] }, tag.name] };
}

export const COLUMNS: Column[] = [
  {
    key: 'name', label: 'Name', min: 140, grow: 1.6, sort: 'fullName',
    title: (r) => [r.fullName || r.email || r.leadIdentifier, r.fullName ? r.email : ''].filter(Boolean).join('\n'),
    cell: (r) => [div([r.fullName || r.email || r.leadIdentifier], 'name'), ...(r.email ? [div([r.email], 'sub')] : [])],
  },
  {
    key: 'company', label: 'Company', min: 120, grow: 1.4, sort: 'company',
    title: (r) => [r.company, r.jobTitle].filter(Boolean).join('\n'),
    cell: (r) => [div([r.company || faint('—')]), ...(r.jobTitle ? [div([r.jobTitle], 'sub')] : [])],
  },
  { key: 'stage', label: 'Stage', min: 118, cell: (r) => [stagePill(r.pipelineStage)] },
  { key: 'tag', label: 'Tag', min: 88, cell: (r, tagName) => [tagPill(tagName(r.tagId))] },
  {
    // The campaign's name on a line of its own, wide enough for a whole name (the demo's longest at
    // a 1280 px window); status and sender below. Name and company give way first: their second
    // lines (email, job title) are long anyway, and every cell has its full text as a tooltip.
    key: 'sequence', label: 'Sequence', min: 220, grow: 1.8,
    title: (r) => (r.leadSequence ? `${campaignOf(r)}\n${r.leadSequence.status.replace('_', ' ').toLowerCase()} · ${senderOf(r)}` : ''),
    cell: (r) =>
      r.leadSequence
        ? [div([campaignOf(r)], 'campaign-name'), div([span([r.leadSequence.status.replace('_', ' ').toLowerCase()], `status ${r.leadSequence.status}`), ' ', senderOf(r)], 'sub')]
        : [faint('Not enrolled')],
  },
  { key: 'score', label: 'Score', min: 56, sort: 'rankingScore', num: true, cell: (r) => [String(Math.round(r.rankingScore))] },
  { key: 'followUp', label: 'Catch-up', min: 84, sort: 'followUpAt', cell: (r) => (r.followUpAt ? [span([shortDate(r.followUpAt)], new Date(r.followUpAt).getTime() < Date.now() ? 'due overdue' : '')] : []) },
  { key: 'activity', label: 'Last activity', min: 92, sort: 'lastActivityAt', cell: (r) => [span([relative(r.lastActivityAt, Date.now(), 'short')], undefined, r.lastActivityAt ?? '')] },
  { key: 'created', label: 'Created', min: 72, sort: 'createdAt', cell: (r) => [shortDate(r.createdAt)] },
];

/** With the lead panel open the table keeps the columns that identify and place a lead, so it fits
 * beside the panel without scrolling sideways. */
const COMPACT_KEYS = new Set(['name', 'company', 'stage', 'tag', 'sequence']);
export type Layout = { columns: Column[]; grid: string; minWidth: number };

export function layoutOf(compact: boolean, hidden: Set<string>): Layout {
  const columns = COLUMNS.filter((c) => !hidden.has(c.key) && (!compact || COMPACT_KEYS.has(c.key)));
  // Below the columns' least widths the table scrolls sideways rather than cut them.
  const minWidth = CHECKBOX_WIDTH + columns.reduce((sum, c) => sum + c.min, 0);
  return { columns, grid: `${CHECKBOX_WIDTH}px ${columns.map((c) => (c.grow ? `minmax(${c.min}px, ${c.grow}fr)` : `${c.min}px`)).join(' ')}`, minWidth };
}

/** What a click on a column's header does to the filters: the other direction of the same column,
 * or this column in its natural direction (names and dates to come A-Z / soonest first). */
export function sortAfterClick(filters: LeadFilters, col: Column): Partial<LeadFilters> | null {
  if (!col.sort) return null;
  if (filters.sortBy === col.sort) return { sortOrder: filters.sortOrder === 'asc' ? 'desc' : 'asc' };
  return { sortBy: col.sort, sortOrder: col.sort === 'fullName' || col.sort === 'company' || col.sort === 'followUpAt' ? 'asc' : 'desc' };
}

/** The columns a person hid with the column chooser, remembered on this machine. */
const HIDDEN_KEY = 'leads.hiddenColumns';
const hiddenListeners = new Set<() => void>();
let hiddenCache: string | null = null;
export function readHidden(): string {
  if (hiddenCache === null) {
    try {
      hiddenCache = localStorage.getItem(HIDDEN_KEY) ?? '[]';
    } catch {
      hiddenCache = '[]';
    }
  }
  return hiddenCache;
}
export function parseHidden(raw: string): Set<string> {
  try {
    const v: unknown = JSON.parse(raw);
    return new Set(Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string' && x !== 'name') : []);
  } catch {
    return new Set();
  }
}
export function setHidden(keys: Set<string>): void {
  hiddenCache = JSON.stringify([...keys]);
  try {
    localStorage.setItem(HIDDEN_KEY, hiddenCache);
  } catch {
    // Storage full or disabled: the choice lasts for this session.
  }
  for (const l of hiddenListeners) l();
}
export const subscribeHidden = (l: () => void): (() => void) => {
  hiddenListeners.add(l);
  return () => hiddenListeners.delete(l);
};

/** The sort arrow of a header: ▲ ascending, ▼ descending, on the sorted column only. */
export const sortArrow = (filters: LeadFilters, col: Column): string | null => (col.sort && filters.sortBy === col.sort ? (filters.sortOrder === 'asc' ? '▲' : '▼') : null);
export const ariaSort = (filters: LeadFilters, col: Column): 'ascending' | 'descending' | undefined => (col.sort && filters.sortBy === col.sort ? (filters.sortOrder === 'asc' ? 'ascending' : 'descending') : undefined);

/** The leads screen's count: the exact size of the view once counted, until then what has loaded so far. */
export function leadCountText(total: number | undefined, pager: { loadedCount: number; hasMore: boolean; loading: boolean }): string {
  if (total === undefined && pager.loading) return 'Loading…';
  const count = total ?? pager.loadedCount;
  if (total === undefined && pager.hasMore) return `${count.toLocaleString()}+ leads`;
  return `${count.toLocaleString()} lead${count === 1 ? '' : 's'}`;
}
