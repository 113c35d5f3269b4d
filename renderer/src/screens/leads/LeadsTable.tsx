/** The leads table: virtualized rows (only what is on screen is in the DOM), sortable headers,
 * checkboxes with shift-click ranges, keyboard movement (j/k, arrows, x, Enter). */
import { useVirtualizer } from '@tanstack/react-virtual';
import { memo, useCallback, useEffect, useMemo, useRef, useState, useSyncExternalStore } from 'react';
import type { KeyboardEvent } from 'react';
import { StagePill, TagPill } from '../../components/StagePill.tsx';
import { relative, shortDate } from '../../lib/format.ts';
import { useTags } from '../../lib/workspace-data.ts';
import { useApp } from '../../state/app-store.ts';
import type { SortBy } from '../../state/app-store.ts';
import type { LeadPager, LeadRow } from './lead-pager.ts';
import type { Selection } from './selection.ts';

const ROW_HEIGHT = 40;
/** The header sits inside the scrolling box (so it scrolls sideways with the rows): rows start below it. */
const HEADER_HEIGHT = 34;

type Column = { key: string; label: string; width: string; sort?: SortBy; num?: boolean; render: (r: LeadRow, ctx: { tagName: (id: string | null) => { name: string; color: string } | undefined }) => React.ReactNode };

const COLUMNS: Column[] = [
  {
    key: 'name', label: 'Name', width: 'minmax(180px, 2fr)', sort: 'fullName',
    render: (r) => (
      <>
        <div className="name">{r.fullName || r.email || r.leadIdentifier}</div>
        {r.email && <div className="sub">{r.email}</div>}
      </>
    ),
  },
  {
    key: 'company', label: 'Company', width: 'minmax(160px, 2fr)', sort: 'company',
    render: (r) => (
      <>
        <div>{r.company || <span className="faint">—</span>}</div>
        {r.jobTitle && <div className="sub">{r.jobTitle}</div>}
      </>
    ),
  },
  { key: 'stage', label: 'Stage', width: '130px', render: (r) => <StagePill stage={r.pipelineStage} /> },
  { key: 'tag', label: 'Tag', width: '110px', render: (r, c) => <TagPill tag={c.tagName(r.tagId)} /> },
  {
    key: 'sequence', label: 'Sequence', width: 'minmax(140px, 1.3fr)',
    render: (r) =>
      r.leadSequence ? (
        <>
          <span className={`status ${r.leadSequence.status}`}>{r.leadSequence.status.replace('_', ' ').toLowerCase()}</span>
          <div className="sub">{r.leadSequence.sdrProfile ? `${r.leadSequence.sdrProfile.firstName} ${r.leadSequence.sdrProfile.lastName}` : 'Unassigned'} · {r.campaigns.find((c) => c.id === r.leadSequence?.campaignId)?.name ?? ''}</div>
        </>
      ) : (
        <span className="faint">Not enrolled</span>
      ),
  },
  { key: 'score', label: 'Score', width: '64px', sort: 'rankingScore', num: true, render: (r) => Math.round(r.rankingScore) },
  { key: 'followUp', label: 'Catch-up', width: '96px', sort: 'followUpAt', render: (r) => (r.followUpAt ? <span className={new Date(r.followUpAt).getTime() < Date.now() ? 'due overdue' : ''}>{shortDate(r.followUpAt)}</span> : '') },
  { key: 'activity', label: 'Last activity', width: '104px', sort: 'lastActivityAt', render: (r) => <span title={r.lastActivityAt ?? ''}>{relative(r.lastActivityAt, Date.now(), 'short')}</span> },
  { key: 'created', label: 'Created', width: '90px', sort: 'createdAt', render: (r) => shortDate(r.createdAt) },
];

/** With the lead panel open the table keeps the columns that identify and place a lead, so it fits
 * beside the panel without scrolling sideways. */
const COMPACT_KEYS = new Set(['name', 'company', 'stage', 'tag', 'sequence']);
const LAYOUTS = {
  full: { columns: COLUMNS, grid: `40px ${COLUMNS.map((c) => c.width).join(' ')}`, minWidth: 1130 },
  compact: (() => {
    const columns = COLUMNS.filter((c) => COMPACT_KEYS.has(c.key));
    return { columns, grid: `40px ${columns.map((c) => c.width).join(' ')}`, minWidth: 700 };
  })(),
};
type Layout = (typeof LAYOUTS)['full'];

export function LeadsTable({ pager, selection, onSelection }: { pager: LeadPager; selection: Selection; onSelection: (s: Selection) => void }) {
  useSyncExternalStore(pager.subscribe, pager.getVersion);
  const { byId: tags } = useTags();
  const filters = useApp((s) => s.filters);
  const setFilters = useApp((s) => s.setFilters);
  const openLeadId = useApp((s) => s.leadId);
  const openLead = useApp((s) => s.openLead);
  const layout: Layout = openLeadId ? LAYOUTS.compact : LAYOUTS.full;
  const parentRef = useRef<HTMLDivElement>(null);
  const [cursorRow, setCursorRow] = useState(0);
  const lastClicked = useRef<number | null>(null);

  const count = pager.loadedCount + (pager.hasMore ? 1 : 0);
  const virtualizer = useVirtualizer({ count, getScrollElement: () => parentRef.current, estimateSize: () => ROW_HEIGHT, overscan: 12, scrollMargin: HEADER_HEIGHT });
  const items = virtualizer.getVirtualItems();
  const firstIndex = items[0]?.index ?? 0;
  const lastIndex = items[items.length - 1]?.index ?? 0;

  useEffect(() => {
    pager.setVisible(firstIndex, lastIndex);
  }, [pager, firstIndex, lastIndex, count]);

  const tagName = useCallback((id: string | null) => (id ? tags.get(id) : undefined), [tags]);

  function toggle(index: number, id: string, shift: boolean) {
    if (shift && lastClicked.current !== null) {
      const [a, b] = [Math.min(lastClicked.current, index), Math.max(lastClicked.current, index)];
      const ids: string[] = [];
      for (let i = a; i <= b; i++) {
        const r = pager.row(i);
        if (r) ids.push(r.id);
      }
      onSelection(selection.withAll(ids, !selection.has(id)));
    } else {
      onSelection(selection.toggle(id));
    }
    lastClicked.current = index;
  }

  function sortBy(col: Column) {
    if (!col.sort) return;
    if (filters.sortBy === col.sort) setFilters({ sortOrder: filters.sortOrder === 'asc' ? 'desc' : 'asc' });
    else setFilters({ sortBy: col.sort, sortOrder: col.sort === 'fullName' || col.sort === 'company' || col.sort === 'followUpAt' ? 'asc' : 'desc' });
  }

  function onKey(e: KeyboardEvent<HTMLDivElement>) {
    const move = (to: number) => {
      const next = Math.max(0, Math.min(pager.loadedCount - 1, to));
      setCursorRow(next);
      virtualizer.scrollToIndex(next, { align: 'auto' });
      e.preventDefault();
    };
    if (e.key === 'ArrowDown' || e.key === 'j') move(cursorRow + 1);
    else if (e.key === 'ArrowUp' || e.key === 'k') move(cursorRow - 1);
    else if (e.key === 'PageDown') move(cursorRow + 15);
    else if (e.key === 'PageUp') move(cursorRow - 15);
    else if (e.key === 'x' || e.key === ' ') {
      const r = pager.row(cursorRow);
      if (r) toggle(cursorRow, r.id, e.shiftKey);
      e.preventDefault();
    } else if (e.key === 'Enter') {
      const r = pager.row(cursorRow);
      if (r) openLead(r.id);
    }
  }

  // Row callbacks stay the same across renders (they read the latest state through a ref), so a
  // row re-renders only when its own data or flags change: scrolling draws just the rows that appear.
  const latest = useRef({ toggle, openLead, setCursorRow });
  latest.current = { toggle, openLead, setCursorRow };
  const rowActions = useMemo<RowActions>(() => ({
    toggle: (index, id, shift) => latest.current.toggle(index, id, shift),
    open: (index, id) => {
      latest.current.setCursorRow(index);
      latest.current.openLead(id);
    },
  }), []);

  // Counting the selection walks every loaded row: only worth it when something is selected.
  const loadedIds = selection.isEmpty ? [] : pager.loadedIds();
  const allLoadedSelected = selection.mode === 'all' || (loadedIds.length > 0 && loadedIds.every((id) => selection.has(id)));

  return (
    <div className="table" role="grid" aria-label="Leads" aria-rowcount={pager.hasMore ? -1 : pager.loadedCount}>
      <div className="viewport" ref={parentRef} tabIndex={0} onKeyDown={onKey} data-testid="leads-viewport">
        <div style={{ minWidth: layout.minWidth }}>
          <div className="thead" role="row" style={{ gridTemplateColumns: layout.grid, height: HEADER_HEIGHT }}>
            <div className="th" role="columnheader">
              <input
                type="checkbox"
                className="check"
                aria-label="Select all loaded leads"
                checked={allLoadedSelected}
                onChange={() => onSelection(allLoadedSelected ? selection.clear() : selection.withAll(pager.loadedIds(), true))}
              />
            </div>
            {layout.columns.map((c) => (
              <div
                key={c.key}
                role="columnheader"
                className={`th${c.sort ? ' sortable' : ''}`}
                style={c.num ? { justifyContent: 'flex-end' } : undefined}
                onClick={() => sortBy(c)}
                aria-sort={c.sort && filters.sortBy === c.sort ? (filters.sortOrder === 'asc' ? 'ascending' : 'descending') : undefined}
              >
                {c.label}
                {c.sort && filters.sortBy === c.sort && <span className="arrow">{filters.sortOrder === 'asc' ? '▲' : '▼'}</span>}
              </div>
            ))}
          </div>
          {pager.error && pager.loadedCount === 0 ? (
            <div className="empty"><div className="error-text" role="alert">{pager.error}</div></div>
          ) : !pager.loading && count === 0 ? (
            <div className="empty">No leads match these filters.</div>
          ) : (
            <div style={{ height: virtualizer.getTotalSize(), position: 'relative' }}>
              {items.map((item) => {
                const r = pager.row(item.index);
                if (!r) {
                  return (
                    <div key={item.key} className="tr" style={{ transform: `translateY(${item.start - HEADER_HEIGHT}px)`, gridTemplateColumns: layout.grid }} role="row">
                      <div className="td loading-row" style={{ gridColumn: '1 / -1' }}>{pager.error ?? 'Loading…'}</div>
                    </div>
                  );
                }
                return (
                  <LeadRowView
                    key={r.id}
                    row={r}
                    index={item.index}
                    top={item.start - HEADER_HEIGHT}
                    selected={selection.has(r.id)}
                    open={openLeadId === r.id}
                    cursor={cursorRow === item.index}
                    tagName={tagName}
                    actions={rowActions}
                    layout={layout}
                  />
                );
              })}
            </div>
          )}
        </div>
      </div>
    </div>
  );
}

type RowActions = { toggle: (index: number, id: string, shift: boolean) => void; open: (index: number, id: string) => void };
type TagLookup = (id: string | null) => { name: string; color: string } | undefined;

const LeadRowView = memo(function LeadRowView(props: { row: LeadRow; index: number; top: number; selected: boolean; open: boolean; cursor: boolean; tagName: TagLookup; actions: RowActions; layout: Layout }) {
  const { row: r, index, actions } = props;
  return (
    <div
      role="row"
      aria-selected={props.selected}
      data-lead-id={r.id}
      className={`tr${props.selected ? ' selected' : ''}${props.open ? ' open' : ''}${props.cursor ? ' cursor' : ''}`}
      style={{ transform: `translateY(${props.top}px)`, gridTemplateColumns: props.layout.grid }}
      onClick={() => actions.open(index, r.id)}
    >
      <div className="td" role="gridcell" onClick={(e) => e.stopPropagation()}>
        <input type="checkbox" className="check" aria-label={`Select ${r.fullName}`} checked={props.selected} onChange={(e) => actions.toggle(index, r.id, (e.nativeEvent as MouseEvent).shiftKey)} />
      </div>
      {props.layout.columns.map((c) => (
        <div key={c.key} role="gridcell" className={`td${c.num ? ' num' : ''}`}>{c.render(r, { tagName: props.tagName })}</div>
      ))}
    </div>
  );
});
