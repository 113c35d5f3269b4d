/** One stage of the board: its most recently active leads, plus the leads just moved into it (they
 * may not be among the most recently active, and the user wants to see where the card went). */
import { useState } from 'react';
import { ErrorText } from '../../components/ErrorText.tsx';
import { relative } from '../../lib/format.ts';
import { useOp } from '../../lib/ops.ts';
import { useApp } from '../../state/app-store.ts';
import type { DragLead } from './PipelineBoard.tsx';

/** Only our cards are accepted: a file or text dragged in from elsewhere is not a lead. */
const DRAG_TYPE = 'application/x-outreach-lead';

type Stage = { id: string; name: string; colorHex: string; category: string };
type CardLead = { id: string; fullName: string; email: string; jobTitle: string; company: string; lastActivityAt: string | null; pipelineStageId: string | null };

type DragProps = {
  dragging: DragLead | null;
  onDragStart: (l: DragLead) => void;
  onDragEnd: () => void;
};

export function PipelineColumn(props: DragProps & {
  stage: Stage;
  campaignId: string;
  /** Leads moved on this board, most recent first: shown in the column of their current stage. */
  pinnedIds: readonly string[];
  getDragging: () => DragLead | null;
  onDrop: (l: DragLead) => void;
  error: string | null;
}) {
  const { stage } = props;
  const [limit, setLimit] = useState(50);
  const [over, setOver] = useState(false);
  const live = useOp('campaigns.leads.search', { pipelineStage: stage.name, campaignId: props.campaignId || undefined, limit, sortBy: 'lastActivityAt', sortOrder: 'desc' });
  const leads = live.data?.leads ?? [];
  const listed = new Set(leads.map((l) => l.id));
  const more = Boolean(live.data?.nextCursor);
  return (
    <section
      className={`column${over ? ' drop' : ''}`}
      aria-label={`${stage.name} column`}
      data-stage={stage.name}
      onDragOver={(e) => {
        if (!e.dataTransfer.types.includes(DRAG_TYPE)) return;
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
        const lead = props.getDragging();
        if (lead && e.dataTransfer.getData(DRAG_TYPE) === lead.id) props.onDrop(lead);
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
        {props.pinnedIds.filter((id) => !listed.has(id)).map((id) => (
          <PinnedCard key={id} leadId={id} stage={stage} drag={props} />
        ))}
        {leads.map((l) => (
          <Card key={l.id} lead={l} drag={props} />
        ))}
        {more && <button className="btn small ghost" onClick={() => setLimit(Math.min(200, limit + 50))} disabled={limit >= 200}>{limit >= 200 ? 'Showing the 200 most recent; search to find others' : 'Show more'}</button>}
        {!live.loading && leads.length === 0 && <span className="faint" style={{ padding: 8 }}>No leads</span>}
      </div>
    </section>
  );
}

/** A lead moved on this board: live, so it shows in the column of wherever it is now. */
function PinnedCard({ leadId, stage, drag }: { leadId: string; stage: Stage; drag: DragProps }) {
  const live = useOp('campaigns.leads.get', { leadId });
  const lead = live.data;
  if (!lead) return null;
  const here = lead.pipelineStageId === stage.id || (lead.pipelineStageId === null && stage.category === 'NEW');
  return here ? <Card lead={lead} drag={drag} /> : null;
}

function Card({ lead: l, drag }: { lead: CardLead; drag: DragProps }) {
  const openLead = useApp((s) => s.openLead);
  const d: DragLead = { id: l.id, name: l.fullName || l.email || 'this lead', stageId: l.pipelineStageId };
  return (
    <div
      className={`card${drag.dragging?.id === l.id ? ' dragging' : ''}`}
      draggable
      data-lead-id={l.id}
      onDragStart={(e) => {
        e.dataTransfer.setData(DRAG_TYPE, l.id);
        e.dataTransfer.effectAllowed = 'move';
        drag.onDragStart(d);
      }}
      onDragEnd={drag.onDragEnd}
      onClick={() => openLead(l.id)}
    >
      <div className="name">{d.name}</div>
      <div className="sub">{[l.jobTitle, l.company].filter(Boolean).join(' · ')}</div>
      {l.lastActivityAt && <div className="sub">{relative(l.lastActivityAt)}</div>}
    </div>
  );
}
