/** The pipeline: a column per stage; drag a card to another column to move the lead (lost asks for a
 * close reason, on hold for a wake date, as everywhere). */
import { useRef, useState } from 'react';
import { ErrorText } from '../../components/ErrorText.tsx';
import { needsPrompt, StageMoveDialog } from '../../components/StageMoveDialog.tsx';
import type { StageChoice } from '../../components/StageMoveDialog.tsx';
import { errorText, run } from '../../lib/ops.ts';
import { offerUndo, restoreStage } from '../../lib/undo.ts';
import type { LeadState } from '../../lib/undo.ts';
import type { StageExtras } from '../../components/StageMoveDialog.tsx';
import { useStages } from '../../lib/workspace-data.ts';
import { useApp } from '../../state/app-store.ts';
import { BoardFilters } from './BoardFilters.tsx';
import { PipelineColumn } from './PipelineColumn.tsx';

/** A card being dragged, with what a move replaces (for Undo). */
export type DragLead = { id: string; name: string; stageId: string | null; before: LeadState };

const COLLAPSED_KEY = 'outreach.board.collapsedStages';

/** Which columns the user folded away, remembered on this machine. */
function useCollapsedStages(): [string[], (ids: string[]) => void] {
  const [ids, setIds] = useState<string[]>(() => {
    try {
      const v: unknown = JSON.parse(localStorage.getItem(COLLAPSED_KEY) ?? '[]');
      return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
    } catch {
      return [];
    }
  });
  const save = (next: string[]) => {
    setIds(next);
    localStorage.setItem(COLLAPSED_KEY, JSON.stringify(next));
  };
  return [ids, save];
}

export function PipelineBoard() {
  const { stages, error } = useStages();
  const filters = useApp((s) => s.filters);
  const [collapsed, setCollapsed] = useCollapsedStages();
  const [dragging, setDragging] = useState<DragLead | null>(null);
  // Read by drag events synchronously: the state above only re-renders (card styling) later.
  const draggingRef = useRef<DragLead | null>(null);
  const [prompt, setPrompt] = useState<{ lead: DragLead; stage: StageChoice } | null>(null);
  const [moveError, setMoveError] = useState<{ stageId: string; text: string } | null>(null);
  const [pinned, setPinned] = useState<string[]>([]);
  const pin = (leadId: string) => setPinned((p) => [leadId, ...p.filter((id) => id !== leadId)].slice(0, 10));

  async function moveAndOfferUndo(lead: DragLead, stage: StageChoice, extras: StageExtras) {
    await run('campaigns.leads.updateLeadStage', { leadId: lead.id, pipelineStageId: stage.id, ...extras });
    pin(lead.id);
    offerUndo(`Moved ${lead.name} to ${stage.name}.`, async () => {
      await restoreStage(lead.before, stages);
      return `${lead.name} is back in ${stages.find((s) => s.id === lead.before.pipelineStageId)?.name ?? 'New'}.`;
    });
  }

  async function move(lead: DragLead, stage: StageChoice) {
    setMoveError(null);
    if (lead.stageId === stage.id) return;
    if (needsPrompt(stage)) {
      setPrompt({ lead, stage });
      return;
    }
    try {
      await moveAndOfferUndo(lead, stage, {});
    } catch (e) {
      setMoveError({ stageId: stage.id, text: `${lead.name} was not moved: ${errorText(e)}` });
    }
  }

  return (
    <>
      <div className="screen-header">
        <h1>Pipeline</h1>
        <span className="sub">Drag a card to move a lead to another stage. Click a column's name to fold it.</span>
      </div>
      <BoardFilters />
      <ErrorText error={error?.message} />
      <div
        className="board"
        data-testid="board"
        onDragOver={(e) => {
          // Near an edge while dragging, the board scrolls so far columns can be reached.
          const box = e.currentTarget.getBoundingClientRect();
          if (e.clientX > box.right - 60) e.currentTarget.scrollLeft += 24;
          else if (e.clientX < box.left + 60) e.currentTarget.scrollLeft -= 24;
        }}
      >
        {stages.map((s) => (
          <PipelineColumn
            key={s.id}
            stage={s}
            filters={{ campaignId: filters.campaignId, tagId: filters.tagId, query: filters.query }}
            collapsed={collapsed.includes(s.id)}
            onToggleCollapsed={() => setCollapsed(collapsed.includes(s.id) ? collapsed.filter((id) => id !== s.id) : [...collapsed, s.id])}
            pinnedIds={pinned}
            dragging={dragging}
            getDragging={() => draggingRef.current}
            onDragStart={(lead) => {
              draggingRef.current = lead;
              setDragging(lead);
            }}
            onDragEnd={() => {
              draggingRef.current = null;
              setDragging(null);
            }}
            onDrop={(lead) => void move(lead, s)}
            error={moveError?.stageId === s.id ? moveError.text : null}
          />
        ))}
      </div>
      {prompt && (
        <StageMoveDialog
          stage={prompt.stage}
          what={prompt.lead.name}
          onClose={() => setPrompt(null)}
          onMove={async (extras) => {
            await moveAndOfferUndo(prompt.lead, prompt.stage, extras);
          }}
        />
      )}
    </>
  );
}
