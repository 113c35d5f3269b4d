/** What can be done to the selected leads, and how many that is. */
import { useSyncExternalStore } from 'react';
import type { LeadPager } from './lead-pager.ts';
import { Selection } from './selection.ts';

export type BulkAction = 'enroll' | 'sender' | 'tag' | 'stage';

export function BulkBar({ selection, pager, onSelection, onAction }: { selection: Selection; pager: LeadPager; onSelection: (s: Selection) => void; onAction: (a: BulkAction) => void }) {
  useSyncExternalStore(pager.subscribe, pager.getVersion);
  const loaded = pager.loadedIds();
  const allLoaded = selection.mode === 'ids' && loaded.length > 0 && loaded.every((id) => selection.has(id));
  const label =
    selection.mode === 'all'
      ? `All leads matching the filters${selection.excludedList.length ? ` except ${selection.excludedList.length}` : ''}`
      : `${(selection.size ?? 0).toLocaleString()} selected`;
  return (
    <div className="bulkbar" role="toolbar" aria-label="Bulk actions">
      <strong data-testid="selection-count">{label}</strong>
      {allLoaded && pager.hasMore && (
        <button className="link" onClick={() => onSelection(Selection.allMatching())}>Select all leads matching the filters</button>
      )}
      <div className="grow" />
      <button className="btn small" onClick={() => onAction('enroll')}>Enroll in campaign…</button>
      <button className="btn small" onClick={() => onAction('sender')}>Change sender…</button>
      <button className="btn small" onClick={() => onAction('tag')}>Tag…</button>
      <button className="btn small" onClick={() => onAction('stage')}>Move to stage…</button>
      <button className="btn small" onClick={() => onSelection(Selection.none())}>Clear</button>
    </div>
  );
}
