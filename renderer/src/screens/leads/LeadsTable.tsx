/** The leads table: virtualized rows (only what is on screen is in the DOM), sortable headers,
 * checkboxes with shift-click ranges, keyboard movement (j/k, arrows, x, Enter). */
import { useVirtualizer } from '@tanstack/react-virtual';
import { createElement, memo, useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState, useSyncExternalStore } from 'react';
import type { KeyboardEvent, ReactNode } from 'react';
import { firstScreenShown } from '../../app/first-screen.ts';
import { useTags } from '../../lib/workspace-data.ts';
import { useApp } from '../../state/app-store.ts';
import { ariaSort, COLUMNS, HEADER_HEIGHT, layoutOf, parseHidden, readHidden, ROW_HEIGHT, setHidden, sortAfterClick, sortArrow, subscribeHidden } from './columns.ts';
import type { CellNode, Column, Layout, TagLookup } from './columns.ts';
import { firstRowsScrollTop, takeOverFirstRows } from './first-rows.ts';
import type { LeadPager, LeadRow } from './lead-pager.ts';
import type { Selection } from './selection.ts';

/** A cell's elements (columns.ts) as React elements. */
function cellNodes(nodes: CellNode[]): ReactNode[] {
  return nodes.map((n, i) => (typeof n === 'string' ? n : createElement(n.tag, { key: i, className: n.cls, title: n.title, style: n.style }, ...cellNodes(n.children))));
}

function useHiddenColumns(): Set<string> {
  const raw = useSyncExternalStore(subscribeHidden, readHidden);
  return useMemo(() => parseHidden(raw), [raw]);
}

/** "Columns" button: show or hide the table's columns (Name always shows), remembered on this
 * machine. A menu of checkboxes: Tab and Space work in it, Escape closes it. */
export function ColumnChooser() {
  const hidden = useHiddenColumns();
  const [open, setOpen] = useState(false);
  const box = useRef<HTMLDivElement>(null);
  const button = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (!open) return;
    box.current?.querySelector<HTMLInputElement>('input:not(:disabled)')?.focus();
    const onDown = (e: MouseEvent) => {
      if (box.current && !box.current.contains(e.target as Node) && e.target !== button.current) setOpen(false);
    };
    window.addEventListener('mousedown', onDown);
    return () => window.removeEventListener('mousedown', onDown);
  }, [open]);
  const shown = COLUMNS.length - hidden.size;
  return (
    <div className="column-chooser" style={{ position: 'relative' }} onKeyDown={(e) => { if (e.key === 'Escape' && open) { e.stopPropagation(); setOpen(false); button.current?.focus(); } }}>
      <button ref={button} className="btn" aria-haspopup="true" aria-expanded={open} onClick={() => setOpen(!open)} data-testid="column-chooser" title="Show or hide columns">
        Columns{hidden.size > 0 ? ` (${shown} of ${COLUMNS.length})` : ''}
      </button>
      {open && (
        <div
          className="menu column-menu"
          ref={box}
          role="group"
          aria-label="Columns to show"
          style={{ position: 'absolute', right: 0, top: 'calc(100% + 4px)', zIndex: 30, minWidth: 200, display: 'flex', flexDirection: 'column', gap: 6, padding: 10, background: 'var(--panel)', border: '1px solid var(--border)', borderRadius: 'var(--radius)', boxShadow: '0 6px 18px rgba(0,0,0,0.12)' }}
        >
          {COLUMNS.map((c) => (
            <label key={c.key} className="row">
              <input
                type="checkbox"
                className="check"
                checked={!hidden.has(c.key)}
                disabled={c.key === 'name'}
                onChange={(e) => {
                  const next = new Set(hidden);
                  if (e.target.checked) next.delete(c.key);
                  else next.add(c.key);
                  setHidden(next);
                }}
              />
              <span>{c.label}{c.key === 'name' ? ' (always shown)' : ''}</span>
            </label>
          ))}
          {hidden.size > 0 && <button className="btn small" onClick={() => setHidden(new Set())}>Show all</button>}
        </div>
      )}
    </div>
  );
}

export function LeadsTable({ pager, selection, onSelection }: { pager: LeadPager; selection: Selection; onSelection: (s: Selection) => void }) {
  useSyncExternalStore(pager.subscribe, pager.getVersion);
  const { byId: tags } = useTags();
  const filters = useApp((s) => s.filters);
  const setFilters = useApp((s) => s.setFilters);
  const openLeadId = useApp((s) => s.leadId);
  const openLead = useApp((s) => s.openLead);
  const hidden = useHiddenColumns();
  const compact = Boolean(openLeadId);
  const layout: Layout = useMemo(() => layoutOf(compact, hidden), [compact, hidden]);
  const parentRef = useRef<HTMLDivElement>(null);
  const [cursorRow, setCursorRow] = useState(0);
  const lastClicked = useRef<number | null>(null);

  const count = pager.loadedCount + (pager.hasMore ? 1 : 0);
  const virtualizer = useVirtualizer({ count, getScrollElement: () => parentRef.current, estimateSize: () => ROW_HEIGHT, overscan: 12, scrollMargin: HEADER_HEIGHT, initialOffset: firstRowsScrollTop });
  const items = virtualizer.getVirtualItems();
  const firstIndex = items[0]?.index ?? 0;
  const lastIndex = items[items.length - 1]?.index ?? 0;

  useEffect(() => {
    pager.setVisible(firstIndex, lastIndex);
  }, [pager, firstIndex, lastIndex, count]);

  const shown = pager.loadedCount > 0;
  useEffect(() => {
    if (shown) firstScreenShown();
  }, [shown]);
  // The page may have drawn this table's first rows before React loaded (first-rows.ts): once this
  // table shows what it will show (rows, none, or an error), it takes their place before the
  // browser paints, with their scroll position, focus, checked boxes and the clicks and keys the
  // person gave them meanwhile.
  const settled = shown || !pager.loading;
  const tookOver = useRef(false);
  useLayoutEffect(() => {
    if (!settled || tookOver.current || !parentRef.current) return;
    tookOver.current = true;
    const early = takeOverFirstRows(parentRef.current);
    if (early.length > 0) onSelection(selection.withAll(early, true));
    // Only the first settled state takes over; the selection and callbacks of that moment.
  }, [settled]);

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
    const patch = sortAfterClick(filters, col);
    if (patch) setFilters(patch);
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
                aria-sort={ariaSort(filters, c)}
              >
                {c.label}
                {sortArrow(filters, c) && <span className="arrow">{sortArrow(filters, c)}</span>}
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
        <div key={c.key} role="gridcell" className={`td${c.num ? ' num' : ''}`} title={c.title?.(r) || undefined}>{cellNodes(c.cell(r, props.tagName))}</div>
      ))}
    </div>
  );
});
