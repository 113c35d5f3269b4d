/** Stage, tag and catch-up date of one lead, each with its own error line. */
import { useEffect, useState } from 'react';
import type { OpOutput } from '../../../../shared/ops/index.ts';
import { ErrorText } from '../../components/ErrorText.tsx';
import { needsPrompt, StageMoveDialog } from '../../components/StageMoveDialog.tsx';
import type { StageChoice, StageExtras } from '../../components/StageMoveDialog.tsx';
import { CLOSE_REASON_LABELS, fromLocalInput, shortDate, toLocalInput } from '../../lib/format.ts';
import { errorText, run, useAction } from '../../lib/ops.ts';
import { leadState, offerUndo, restoreFollowUp, restoreStage, restoreTag } from '../../lib/undo.ts';
import { useStages, useTags } from '../../lib/workspace-data.ts';
import { useApp } from '../../state/app-store.ts';

type LeadDetail = OpOutput<'campaigns.leads.get'>;

export function LeadControls({ lead }: { lead: LeadDetail }) {
  const { stages } = useStages();
  const { tags } = useTags();
  const stage = useAction();
  const tag = useAction();
  const follow = useAction();
  const [prompt, setPrompt] = useState<StageChoice | null>(null);
  const [followDraft, setFollowDraft] = useState<string | null>(null);
  const remove = useAction();
  const toast = useApp((s) => s.toast);
  const openLead = useApp((s) => s.openLead);

  async function deleteLead() {
    const name = lead.fullName || lead.email || 'The lead';
    const ok = await remove.act(async () => {
      await run('campaigns.leads.delete', { leadIds: [lead.id] });
      return true;
    });
    if (!ok) return;
    openLead(null);
    toast(`Deleted ${name}.`, 'info', {
      label: 'Undo',
      run: () => {
        restoreLead(lead).then(
          (id) => {
            toast(`${name} is back (as a new record: notes, tasks and campaign history stay deleted).`);
            openLead(id);
          },
          (e: unknown) => toast(`${name} could not be brought back: ${errorText(e)}`, 'error'),
        );
      },
    });
  }

  function pickStage(id: string) {
    const s = stages.find((x) => x.id === id);
    if (!s) return;
    if (needsPrompt(s)) setPrompt(s);
    else void stage.act(() => moveStage(s));
  }

  const who = lead.fullName || lead.email || 'the lead';

  /** Moves the lead and offers to put it back where it was. */
  async function moveStage(s: StageChoice, extras: StageExtras = {}) {
    const before = leadState(lead);
    await run('campaigns.leads.updateLeadStage', { leadId: lead.id, pipelineStageId: s.id, ...extras });
    offerUndo(`Moved ${who} to ${s.name}.`, async () => {
      await restoreStage(before, stages);
      return `${who} is back in ${stages.find((x) => x.id === before.pipelineStageId)?.name ?? 'New'}.`;
    });
  }

  async function changeTag(tagId: string | null) {
    const before = leadState(lead);
    await run('campaigns.leads.updateTag', { leadGroupId: lead.leadGroupId, leadId: lead.id, tagId });
    const name = tagId ? tags.find((t) => t.id === tagId)?.name ?? 'the tag' : null;
    offerUndo(name ? `Tagged ${who} ${name}.` : `Cleared ${who}'s tag.`, async () => {
      await restoreTag(before);
      return `${who}'s tag is back.`;
    });
  }

  async function changeFollowUp(followUpAt: string | null) {
    const before = leadState(lead);
    await run('campaigns.leads.setLeadFollowUp', { leadId: lead.id, followUpAt });
    setFollowDraft(null);
    offerUndo(followUpAt ? `Catch-up date set for ${who}.` : `Cleared ${who}'s catch-up date.`, async () => {
      await restoreFollowUp(before);
      return `${who}'s catch-up date is back.`;
    });
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
          <select aria-label="Tag" value={lead.tagId ?? ''} disabled={tag.busy} onChange={(e) => void tag.act(() => changeTag(e.target.value || null))}>
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
          void follow.act(() => changeFollowUp(fromLocalInput(followValue)));
        }}
      >
        <label className="field grow">
          <span>Catch-up date {lead.followUpAt && new Date(lead.followUpAt).getTime() < Date.now() ? <span className="due overdue">(due since {shortDate(lead.followUpAt)})</span> : null}</span>
          <input className="input" type="datetime-local" aria-label="Catch-up date" value={followValue} onChange={(e) => setFollowDraft(e.target.value)} />
        </label>
        <button className="btn" type="submit" disabled={follow.busy || followDraft === null} style={{ alignSelf: 'flex-end' }}>Save</button>
        {lead.followUpAt && (
          <button className="btn ghost" type="button" style={{ alignSelf: 'flex-end' }} disabled={follow.busy} onClick={() => void follow.act(() => changeFollowUp(null))}>
            Clear
          </button>
        )}
      </form>
      <ErrorText error={follow.error} />
      <div className="row wrap" style={{ marginTop: 6 }}>
        <FlagToggle label="Do not contact" title="No sequence or message reaches this person; a running sequence stops" value={lead.doNotContact} set={(v) => run('campaigns.leads.setDoNotContact', { leadIds: [lead.id], doNotContact: v })} />
        <FlagToggle label="Blocklisted" title="Blocked for every campaign; a running sequence stops" value={lead.blocklisted} set={(v) => run('campaigns.leads.setBlocklisted', { leadIds: [lead.id], blocklisted: v })} />
        <div className="grow" />
        <button className="btn small danger" disabled={remove.busy} onClick={() => void deleteLead()}>Delete lead</button>
      </div>
      <ErrorText error={remove.error} />
      {prompt && (
        <StageMoveDialog
          stage={prompt}
          what={lead.fullName || 'this lead'}
          onClose={() => setPrompt(null)}
          onMove={(extras) => moveStage(prompt, extras)}
        />
      )}
    </section>
  );
}

/** A flag of the lead, switched at once; the switch shows the new state until the lead does. */
function FlagToggle({ label, title, value, set }: { label: string; title: string; value: boolean; set: (v: boolean) => Promise<unknown> }) {
  const [pending, setPending] = useState<boolean | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => setPending(null), [value]);
  const shown = pending ?? value;
  return (
    <label className="row" title={title}>
      <input
        type="checkbox"
        checked={shown}
        onChange={(e) => {
          const v = e.target.checked;
          setError(null);
          setPending(v);
          set(v).catch((err: unknown) => {
            setPending(null);
            setError(`${label} was not ${v ? 'set' : 'cleared'}: ${errorText(err)}`);
          });
        }}
      />
      <span>{label}</span>
      <ErrorText error={error} />
    </label>
  );
}

/** Undo of a delete: the lead again, with its fields, custom column values, flags and tag, in its
 * own list, through the import operation (a deleted lead cannot be read back). Returns its id. */
async function restoreLead(lead: LeadDetail): Promise<string> {
  const row: Record<string, string> = {};
  const mapping: Record<string, string> = {};
  for (const f of ['firstName', 'lastName', 'email', 'company', 'jobTitle', 'location', 'phone', 'socialUrl', 'websiteUrl', 'companySocialUrl'] as const) {
    row[f] = lead[f];
    mapping[f] = f;
  }
  row.doNotContact = lead.doNotContact ? 'yes' : 'no';
  row.blocklisted = lead.blocklisted ? 'yes' : 'no';
  mapping.doNotContact = 'doNotContact';
  mapping.blocklisted = 'blocklisted';
  for (const v of lead.variables) {
    if (v.builtInType || !v.value) continue;
    row[`column ${v.name}`] = v.value;
    mapping[`column ${v.name}`] = `custom:${v.name}`;
  }
  const out = await run('campaigns.leads.import', { leadGroupId: lead.leadGroupId, rows: [row], mapping, onExisting: 'skip', onPossibleDuplicate: 'create' });
  const result = out.results[0];
  if (!result?.leadId) throw new Error(result?.message ?? 'the lead was not created again');
  if (lead.tagId) await run('campaigns.leads.updateTag', { leadGroupId: lead.leadGroupId, leadId: result.leadId, tagId: lead.tagId });
  return result.leadId;
}
