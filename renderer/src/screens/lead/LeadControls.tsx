/** Stage, tag and catch-up date of one lead, each with its own error line. */
import { useState } from 'react';
import type { OpOutput } from '../../../../shared/ops/index.ts';
import { ErrorText } from '../../components/ErrorText.tsx';
import { needsPrompt, StageMoveDialog } from '../../components/StageMoveDialog.tsx';
import type { StageChoice } from '../../components/StageMoveDialog.tsx';
import { CLOSE_REASON_LABELS, fromLocalInput, shortDate, toLocalInput } from '../../lib/format.ts';
import { run, useAction } from '../../lib/ops.ts';
import { useStages, useTags } from '../../lib/workspace-data.ts';

type LeadDetail = OpOutput<'campaigns.leads.get'>;

export function LeadControls({ lead }: { lead: LeadDetail }) {
  const { stages } = useStages();
  const { tags } = useTags();
  const stage = useAction();
  const tag = useAction();
  const follow = useAction();
  const [prompt, setPrompt] = useState<StageChoice | null>(null);
  const [followDraft, setFollowDraft] = useState<string | null>(null);

  function pickStage(id: string) {
    const s = stages.find((x) => x.id === id);
    if (!s) return;
    if (needsPrompt(s)) setPrompt(s);
    else void stage.act(() => run('campaigns.leads.updateLeadStage', { leadId: lead.id, pipelineStageId: s.id }));
  }

  const followValue = followDraft ?? toLocalInput(lead.followUpAt);
  return (
    <section className="section" aria-label="Pipeline">
      <div className="controls">
        <label className="field">
          <span>Stage</span>
          <select aria-label="Stage" value={lead.pipelineStageId ?? stages.find((s) => s.category === 'NEW')?.id ?? ''} onChange={(e) => pickStage(e.target.value)} disabled={stage.busy}>
            {!lead.pipelineStageId && !stages.some((s) => s.category === 'NEW') && <option value="">No stage</option>}
            {stages.map((s) => (
              <option key={s.id} value={s.id}>{s.name}</option>
            ))}
          </select>
        </label>
        <label className="field">
          <span>Tag</span>
          <select aria-label="Tag" value={lead.tagId ?? ''} disabled={tag.busy} onChange={(e) => void tag.act(() => run('campaigns.leads.updateTag', { leadGroupId: lead.leadGroupId, leadId: lead.id, tagId: e.target.value || null }))}>
            <option value="">No tag</option>
            {tags.map((t) => (
              <option key={t.id} value={t.id}>{t.name}</option>
            ))}
          </select>
        </label>
      </div>
      {lead.pipelineStage?.category === 'LOST' && lead.closeReason && <div className="muted">Lost: {CLOSE_REASON_LABELS[lead.closeReason] ?? lead.closeReason}</div>}
      <ErrorText error={stage.error} />
      <ErrorText error={tag.error} />
      <form
        className="row"
        onSubmit={(e) => {
          e.preventDefault();
          void follow.act(async () => {
            await run('campaigns.leads.setLeadFollowUp', { leadId: lead.id, followUpAt: fromLocalInput(followValue) });
            setFollowDraft(null);
          });
        }}
      >
        <label className="field grow">
          <span>Catch-up date {lead.followUpAt && new Date(lead.followUpAt).getTime() < Date.now() ? <span className="due overdue">(due since {shortDate(lead.followUpAt)})</span> : null}</span>
          <input className="input" type="datetime-local" aria-label="Catch-up date" value={followValue} onChange={(e) => setFollowDraft(e.target.value)} />
        </label>
        <button className="btn" type="submit" disabled={follow.busy || followDraft === null} style={{ alignSelf: 'flex-end' }}>Save</button>
        {lead.followUpAt && (
          <button className="btn ghost" type="button" style={{ alignSelf: 'flex-end' }} disabled={follow.busy} onClick={() => void follow.act(async () => { await run('campaigns.leads.setLeadFollowUp', { leadId: lead.id, followUpAt: null }); setFollowDraft(null); })}>
            Clear
          </button>
        )}
      </form>
      <ErrorText error={follow.error} />
      {prompt && (
        <StageMoveDialog
          stage={prompt}
          what={lead.fullName || 'this lead'}
          onClose={() => setPrompt(null)}
          onMove={async (extras) => {
            await run('campaigns.leads.updateLeadStage', { leadId: lead.id, pipelineStageId: prompt.id, ...extras });
          }}
        />
      )}
    </section>
  );
}
