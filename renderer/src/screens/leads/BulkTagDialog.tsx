/** Tag many leads at once (one tag per lead: this replaces their tag), or clear their tags. */
import { useState } from 'react';
import { Dialog } from '../../components/Dialog.tsx';
import { ErrorText } from '../../components/ErrorText.tsx';
import { errorText, run } from '../../lib/ops.ts';
import { leadState, offerUndo, restoreMany, restoreTag } from '../../lib/undo.ts';
import type { LeadState } from '../../lib/undo.ts';
import { useTags } from '../../lib/workspace-data.ts';
import type { LeadFilters } from '../../state/app-store.ts';
import { forEachRow, selectedRows } from './bulk-targets.ts';
import type { BulkProgress } from './bulk-targets.ts';
import { BulkProgressView } from './BulkProgressView.tsx';
import type { LeadPager } from './lead-pager.ts';
import type { Selection } from './selection.ts';

export function BulkTagDialog({ selection, filters, pager, onClose }: { selection: Selection; filters: LeadFilters; pager: LeadPager; onClose: () => void }) {
  const { tags } = useTags();
  const [tagId, setTagId] = useState('');
  const [newTag, setNewTag] = useState('');
  const [progress, setProgress] = useState<BulkProgress | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  async function apply() {
    setBusy(true);
    setError(null);
    try {
      let target: string | null = tagId === '__none__' ? null : tagId;
      if (tagId === '__new__') target = (await run('tags.create', { name: newTag.trim() })).id;
      const rows = await selectedRows(selection, filters, pager);
      const changed: LeadState[] = [];
      const result = await forEachRow(
        rows,
        async (r) => {
          await run('campaigns.leads.updateTag', { leadGroupId: r.leadGroupId, leadId: r.id, tagId: target });
          changed.push(leadState(r));
        },
        setProgress,
      );
      if (changed.length > 0) {
        offerUndo(`${target ? 'Tagged' : 'Cleared the tag of'} ${changed.length.toLocaleString()} lead${changed.length === 1 ? '' : 's'}.`, () => restoreMany(changed, restoreTag));
      }
      if (result.failures.length === 0) onClose();
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  }

  return (
    <Dialog
      title="Tag leads"
      onClose={onClose}
      footer={
        <>
          <button className="btn" onClick={onClose}>{progress ? 'Close' : 'Cancel'}</button>
          <button className="btn primary" disabled={busy || !tagId || (tagId === '__new__' && !newTag.trim())} onClick={() => void apply()}>{busy ? 'Tagging…' : 'Apply'}</button>
        </>
      }
    >
      <label className="field">
        <span>Tag (replaces the lead's current tag)</span>
        <select value={tagId} onChange={(e) => setTagId(e.target.value)} aria-label="Tag">
          <option value="">Choose a tag…</option>
          {tags.map((t) => (
            <option key={t.id} value={t.id}>{t.name}</option>
          ))}
          <option value="__new__">New tag…</option>
          <option value="__none__">No tag (clear)</option>
        </select>
      </label>
      {tagId === '__new__' && (
        <label className="field">
          <span>New tag name</span>
          <input className="input" value={newTag} onChange={(e) => setNewTag(e.target.value)} />
        </label>
      )}
      <BulkProgressView progress={progress} />
      <ErrorText error={error} />
    </Dialog>
  );
}
