import { useState } from 'react';
import { ErrorText } from '../../components/ErrorText.tsx';
import { relative } from '../../lib/format.ts';
import { useOp } from '../../lib/ops.ts';
import { useApp } from '../../state/app-store.ts';
import type { DragLead } from './PipelineBoard.tsx';

type Stage = { id: string; name: string; colorHex: string; category: string };

export function PipelineColumn(props: {
  stage: Stage;
  campaignId: string;
  dragging: DragLead | null;
  onDragStart: (l: DragLead) => void;
  onDragEnd: () => void;
  onDrop: (l: DragLead) => void;
  error: string | null;
}) {
  const { stage } = props;
  const [limit, setLimit] = useState(50);
  const [over, setOver] = useState(false);
  const openLead = useApp((s) => s.openLead);
  const live = useOp('campaigns.leads.search', { pipelineStage: stage.name, campaignId: props.campaignId || undefined, limit, sortBy: 'lastActivityAt', sortOrder: 'desc' });
  const leads = live.data?.leads ?? [];
  const more = Boolean(live.data?.nextCursor);
  return (
    <section
      className={`column${over ? ' drop' : ''}`}
      aria-label={`${stage.name} column`}
      data-stage={stage.name}
      onDragOver={(e) => {
        if (!props.dragging) return;
        e.preventDefault();
        e.dataTransfer.dropEffect = 'move';
        if (!over) setOver(true);
      }}
      onDragLeave={(e) => {
        if (!e.currentTarget.contains(e.relatedTarget as Node | null)) setOver(false);
      }}
      onDrop={(e) => {
        e.preventDefault();
        setOver(false);
        if (props.dragging) props.onDrop(props.dragging);
      }}
    >
      <div className="column-head">
        <span className="pill" style={{ background: 'transparent', padding: 0 }}><span className="dot" style={{ background: stage.colorHex }} /></span>
        {stage.name}
        <span className="n">{live.loading && !live.data ? '…' : `${leads.length}${more ? '+' : ''}`}</span>
      </div>
      <div className="column-body">
        <ErrorText error={props.error} />
        <ErrorText error={live.error?.message} />
        {leads.map((l) => {
          const drag: DragLead = { id: l.id, name: l.fullName || l.email || 'this lead', stageId: l.pipelineStageId };
          return (
            <div
              key={l.id}
              className={`card${props.dragging?.id === l.id ? ' dragging' : ''}`}
              draggable
              data-lead-id={l.id}
              onDragStart={(e) => {
                e.dataTransfer.setData('text/plain', l.id);
                e.dataTransfer.effectAllowed = 'move';
                props.onDragStart(drag);
              }}
              onDragEnd={props.onDragEnd}
              onClick={() => openLead(l.id)}
            >
              <div className="name">{drag.name}</div>
              <div className="sub">{[l.jobTitle, l.company].filter(Boolean).join(' · ')}</div>
              {l.lastActivityAt && <div className="sub">{relative(l.lastActivityAt)}</div>}
            </div>
          );
        })}
        {more && <button className="btn small ghost" onClick={() => setLimit(Math.min(200, limit + 50))} disabled={limit >= 200}>{limit >= 200 ? 'Showing the 200 most recent; search to find others' : 'Show more'}</button>}
        {!live.loading && leads.length === 0 && <span className="faint" style={{ padding: 8 }}>No leads</span>}
      </div>
    </section>
  );
}
