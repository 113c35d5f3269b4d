/** Move many leads to one stage; lost asks for a close reason and on hold for a wake date, once for all. */
import { useState } from 'react';
import { Dialog } from '../../components/Dialog.tsx';
import { ErrorText } from '../../components/ErrorText.tsx';
import { needsPrompt, StageMoveDialog } from '../../components/StageMoveDialog.tsx';
import type { StageExtras } from '../../components/StageMoveDialog.tsx';
import { errorText, run } from '../../lib/ops.ts';
import { leadState, offerUndo, restoreMany, restoreStage } from '../../lib/undo.ts';
import type { LeadState } from '../../lib/undo.ts';
import { useStages } from '../../lib/workspace-data.ts';
import type { LeadFilters } from '../../state/app-store.ts';
import { forEachRow, selectedRows } from './bulk-targets.ts';
import type { BulkProgress } from './bulk-targets.ts';
import { BulkProgressView } from './BulkProgressView.tsx';
import type { LeadPager } from './lead-pager.ts';
import type { Selection } from './selection.ts';

export function BulkStageDialog({ selection, filters, pager, onClose }: { selection: Selection; filters: LeadFilters; pager: LeadPager; onClose: () => void }) {
  const { stages } = useStages();
  const [stageId, setStageId] = useState('');
  const [prompt, setPrompt] = useState(false);
  const [progress, setProgress] = useState<BulkProgress | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const stage = stages.find((s) => s.id === stageId);

  async function move(extras: StageExtras) {
    const rows = await selectedRows(selection, filters, pager);
    const changed: LeadState[] = [];
    const result = await forEachRow(
      rows,
      async (r) => {
        await run('campaigns.leads.updateLeadStage', { leadId: r.id, pipelineStageId: stageId, ...extras });
        changed.push(leadState(r));
      },
      setProgress,
    );
    if (changed.length > 0) {
      offerUndo(`Moved ${changed.length.toLocaleString()} lead${changed.length === 1 ? '' : 's'} to ${stage?.name ?? 'the stage'}.`, () => restoreMany(changed, (b) => restoreStage(b, stages)));
    }
    if (result.failures.length > 0) {
      const reasons = [...new Set(result.failures.map((f) => f.message))].join(' ');
      throw new Error(`${result.failures.length} of ${result.total} leads were not moved: ${reasons}`);
    }
    onClose();
  }

  async function apply() {
    if (!stage) return;
    if (needsPrompt(stage)) {
      setPrompt(true);
      return;
    }
    setBusy(true);
    setError(null);
    try {
      await move({});
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  }

  if (prompt && stage) {
    return <StageMoveDialog stage={stage} what="the selected leads" onMove={move} onClose={() => (progress ? setPrompt(false) : onClose())} />;
  }

  return (
    <Dialog
      title="Move leads to a stage"
      onClose={onClose}
      footer={
        <>
          <button className="btn" onClick={onClose}>{progress ? 'Close' : 'Cancel'}</button>
          <button className="btn primary" disabled={busy || !stage} onClick={() => void apply()}>{busy ? 'Moving…' : 'Move'}</button>
        </>
      }
    >
      <label className="field">
        <span>Stage</span>
        <select value={stageId} onChange={(e) => setStageId(e.target.value)} aria-label="Stage">
          <option value="">Choose a stage…</option>
          {stages.map((s) => (
            <option key={s.id} value={s.id}>{s.name}</option>
          ))}
        </select>
      </label>
      <BulkProgressView progress={progress} />
      <ErrorText error={error} />
    </Dialog>
  );
}
