/** One stage of the board: its most recently active leads, plus the leads just moved into it (they
 * may not be among the most recently active, and the user wants to see where the card went). */
import { useState } from 'react';
import { ErrorText } from '../../components/ErrorText.tsx';
import { relative } from '../../lib/format.ts';
import { TagPill } from '../../components/StagePill.tsx';
import { useOp } from '../../lib/ops.ts';
import { useTags } from '../../lib/workspace-data.ts';
import { leadState } from '../../lib/undo.ts';
import type { LeadState } from '../../lib/undo.ts';
import { useApp } from '../../state/app-store.ts';
import type { DragLead } from './PipelineBoard.tsx';

/** Only our cards are accepted: a file or text dragged in from elsewhere is not a lead. */
const DRAG_TYPE = 'application/x-outreach-lead';

type Stage = { id: string; name: string; colorHex: string; category: string };
type CardLead = {
  id: string;
  fullName: string;
  email: string;
  jobTitle: string;
  company: string;
  lastActivityAt: string | null;
  pipelineStageId: string | null;
  leadGroupId: string;
  closeReason: LeadState['closeReason'];
  followUpAt: string | null;
  tagId: string | null;
  sequenceStatus?: string | null;
  leadSequence?: { sdrProfile: { firstName: string; lastName: string } | null } | null;
};

/** The board's share of the lead filters: campaign, tag and search (the stage is the column). */
export type BoardFilter = { campaignId: string; tagId: string; query: string };

/** A sequence state in the words a rep uses. */
const SEQUENCE_WORDS: Record<string, string> = {
  IN_PROGRESS: 'In sequence',
  PAUSED: 'Sequence paused',
  COMPLETED: 'Sequence done',
  STOPPED: 'Sequence stopped',
  REPLIED: 'Replied',
};

type DragProps = {
  dragging: DragLead | null;
  onDragStart: (l: DragLead) => void;
  onDragEnd: () => void;
};

export function PipelineColumn(props: DragProps & {
  stage: Stage;
  filters: BoardFilter;
  collapsed: boolean;
  onToggleCollapsed: () => void;
  /** Leads moved on this board, most recent first: shown in the column of their current stage. */
  pinnedIds: readonly string[];
  getDragging: () => DragLead | null;
  onDrop: (l: DragLead) => void;
  error: string | null;
}) {
  const { stage } = props;
  const [limit, setLimit] = useState(50);
  const [over, setOver] = useState(false);
  const filter = {
    pipelineStage: stage.name,
    campaignId: props.filters.campaignId || undefined,
    tagId: props.filters.tagId === 'all' ? undefined : props.filters.tagId,
    query: props.filters.query || undefined,
  };
  const live = useOp('campaigns.leads.search', { ...filter, limit, sortBy: 'lastActivityAt', sortOrder: 'desc' });
  const counted = useOp('campaigns.leads.count', filter);
  const leads = live.data?.leads ?? [];
  const listed = new Set(leads.map((l) => l.id));
  const more = Boolean(live.data?.nextCursor);
  const count = counted.data?.count;
  const countText = count === undefined ? '…' : count.toLocaleString();
  if (props.collapsed) {
    return (
      <section className="column collapsed" aria-label={`${stage.name} column (folded)`} data-stage={stage.name}>
        <button className="column-fold" onClick={props.onToggleCollapsed} title={`Show ${stage.name} (${countText} leads)`} aria-label={`Show ${stage.name}`} aria-expanded="false">
          <span className="dot" style={{ background: stage.colorHex }} />
          <span className="vertical">{stage.name}</span>
          <span className="n" data-testid="column-count">{countText}</span>
        </button>
      </section>
    );
  }
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
        <button className="column-fold" onClick={props.onToggleCollapsed} title={`Fold ${stage.name}`} aria-label={`Fold ${stage.name}`} aria-expanded="true">
          <span className="dot" style={{ background: stage.colorHex }} />
          <span className="column-name">{stage.name}</span>
        </button>
        <span className="n" data-testid="column-count" title={`${countText} leads in ${stage.name}`}>{countText}</span>
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
        {more && (
          <button className="btn small ghost" onClick={() => setLimit(Math.min(200, limit + 50))} disabled={limit >= 200}>
            {limit >= 200 ? `Showing the 200 most recent of ${countText}; search to find others` : `Show more (${leads.length} of ${countText})`}
          </button>
        )}
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
  const { byId: tagsById } = useTags();
  const tag = l.tagId ? tagsById.get(l.tagId) : undefined;
  const sender = l.leadSequence?.sdrProfile;
  const senderName = sender ? `${sender.firstName} ${sender.lastName}`.trim() : '';
  const sequence = l.sequenceStatus ? SEQUENCE_WORDS[l.sequenceStatus] ?? l.sequenceStatus : null;
  const d: DragLead = { id: l.id, name: l.fullName || l.email || 'this lead', stageId: l.pipelineStageId, before: leadState(l) };
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
      <div className="name" title={d.name}>{d.name}</div>
      <div className="sub" title={[l.jobTitle, l.company].filter(Boolean).join(' · ')}>{[l.jobTitle, l.company].filter(Boolean).join(' · ')}</div>
      {(sequence || senderName) && (
        <div className="sub card-sequence" title={[sequence, senderName && `sender ${senderName}`].filter(Boolean).join(', ')}>
          {sequence && <span className={`seq seq-${(l.sequenceStatus ?? '').toLowerCase()}`}>{sequence}</span>}
          {senderName && <span>{sequence ? ' · ' : ''}{senderName}</span>}
        </div>
      )}
      <div className="card-foot">
        {tag && <TagPill tag={tag} />}
        {l.lastActivityAt && <span className="sub" title={new Date(l.lastActivityAt).toLocaleString()}>{relative(l.lastActivityAt)}</span>}
      </div>
    </div>
  );
}
