/** The sequence as it runs: the main path top to bottom, each condition with its yes and no paths
 * side by side. Steps are added, edited and removed only while the campaign is paused; while it runs
 * the buttons stay, and the refusal says why. */
import { useState } from 'react';
import type { OpOutput } from '../../../../shared/ops/index.ts';
import { STEP_LABELS } from '../../../../shared/sequence.ts';
import { ErrorText } from '../../components/ErrorText.tsx';
import { run, useAction, useOp } from '../../lib/ops.ts';
import { useSenders } from '../../lib/workspace-data.ts';
import { CONDITION_LABELS, waitLength } from './format.ts';
import { StepForm } from './StepForm.tsx';
import type { Placement } from './StepForm.tsx';
import type { SenderAbilities } from './step-validation.ts';

type Summary = OpOutput<'campaigns.getSequence'>;
type SummaryStep = Summary['steps'][number];

type Ctx = {
  campaignId: string;
  summary: Summary;
  add: (p: Placement) => void;
  edit: (s: SummaryStep) => void;
};

const pathOf = (steps: readonly SummaryStep[], parentStepId: string | null, branch: 'yes' | 'no' | null) =>
  steps.filter((s) => s.parentStepId === parentStepId && s.branch === branch);

export function SequenceEditor({ campaignId }: { campaignId: string }) {
  const sequence = useOp('campaigns.getSequence', { campaignId });
  const mergeFields = useOp('campaigns.getMergeFields', { campaignId });
  const campaignSenders = useOp('campaigns.listSenders', { campaignId });
  const { senders } = useSenders();
  const [form, setForm] = useState<{ step?: SummaryStep; placement?: Placement } | null>(null);
  const summary = sequence.data;

  // The senders that must be able to perform every step: the campaign's, with what their accounts can do.
  const onCampaign = new Set((campaignSenders.data?.senders ?? []).map((s) => s.sdrProfileId));
  const abilities: SenderAbilities[] = senders.filter((s) => onCampaign.has(s.id)).map((s) => ({ name: s.name, capabilities: s.capabilities, premium: s.premium }));
  const fields = mergeFields.data?.mergeFields ?? [];

  if (!summary) {
    return (
      <>
        <ErrorText error={sequence.error?.message} />
        {sequence.loading && <p className="muted">Loading the sequence…</p>}
      </>
    );
  }
  const ctx: Ctx = { campaignId, summary, add: (placement) => setForm({ placement }), edit: (step) => setForm({ step }) };
  const main = pathOf(summary.steps, null, null);
  const last = main[main.length - 1];
  const problems = summary.readiness.problems;
  return (
    <div className="sequence-editor" data-testid="sequence-editor">
      <ErrorText error={sequence.error?.message} />
      <ErrorText error={mergeFields.error?.message} />
      {summary.running && (
        <div className="notice warn" data-testid="sequence-running">
          The campaign is running, so its sequence is locked: pause it to add, edit or remove a step. Schedule, senders and lead picking can change while it runs.
        </div>
      )}
      <div className="row">
        <span className="muted grow">{summary.stepCount} step{summary.stepCount === 1 ? '' : 's'} · merge fields: {fields.map((f) => f.name).join(', ') || 'none'}</span>
        {summary.running ? (
          <span className="reason due" data-testid="sequence-state">Running</span>
        ) : summary.readiness.ready ? (
          <span className="reason due" data-testid="sequence-state">Ready to start</span>
        ) : (
          <span className="reason daily_limit" data-testid="sequence-state">Not ready to start</span>
        )}
      </div>
      {problems.length > 0 && (
        <ul className="problems" data-testid="sequence-problems">
          {problems.map((p) => (
            <li key={p.message} className={p.severity}>{p.message}</li>
          ))}
        </ul>
      )}
      <PathView ctx={ctx} steps={main} />
      {(!last || last.type !== 'CONDITION') && (
        <button className="btn add-step" disabled={summary.running} title={summary.running ? LOCKED : undefined} onClick={() => ctx.add({ afterStepId: last?.id ?? null, branch: null, where: last ? `after step ${last.number}` : 'as the first step' })}>
          + {last ? 'Add a step at the end' : 'Add the first step'}
        </button>
      )}
      {form && (
        <StepForm
          campaignId={campaignId}
          running={summary.running}
          fields={fields}
          senders={abilities}
          step={form.step}
          placement={form.placement}
          onClose={() => setForm(null)}
        />
      )}
    </div>
  );
}

/** Why the sequence's edit buttons are disabled while the campaign runs. */
const LOCKED = 'Pause the campaign to change its sequence.';

function PathView({ ctx, steps }: { ctx: Ctx; steps: readonly SummaryStep[] }) {
  return (
    <ol className="path">
      {steps.map((s, i) => (
        <li key={s.id}>
          <StepCard ctx={ctx} step={s} />
          {s.type !== 'CONDITION' && i < steps.length - 1 && <InsertHere ctx={ctx} after={s} />}
        </li>
      ))}
    </ol>
  );
}

function InsertHere({ ctx, after }: { ctx: Ctx; after: SummaryStep }) {
  return (
    <button className="insert" disabled={ctx.summary.running} onClick={() => ctx.add({ afterStepId: after.id, branch: null, where: `after step ${after.number}` })} aria-label={`Add a step after step ${after.number}`} title={ctx.summary.running ? LOCKED : 'Add a step here'}>
      +
    </button>
  );
}

function summaryLine(s: SummaryStep): string {
  switch (s.type) {
    case 'WAIT':
      return `Wait ${waitLength(s.waitTimeSeconds)}`;
    case 'CONDITION':
      return `If the lead: ${CONDITION_LABELS[s.sendCondition] ?? (s.sendCondition || '(no test chosen)')}`;
    case 'PROFILE_VISIT':
      return "Visit the lead's profile";
    case 'REACT_TO_POST':
      return "React to the lead's latest post";
    case 'CONNECTION_REQUEST':
      return s.content ? s.content : 'Without a note';
    default:
      return s.voiceNote.mode === 'recorded' ? 'Pre-recorded voice note' : s.content || '(no text yet)';
  }
}

function StepCard({ ctx, step }: { ctx: Ctx; step: SummaryStep }) {
  const remove = useAction();
  const isCondition = step.type === 'CONDITION';
  const inside = isCondition ? ctx.summary.steps.filter((s) => s.number > step.number && isDescendant(ctx.summary.steps, s, step.id)).length : 0;
  const stepProblems = ctx.summary.readiness.problems.filter((p) => p.stepId === step.id && p.severity === 'error');

  function doRemove() {
    if (isCondition && !confirm(`Remove this condition and both of its paths (${inside} step${inside === 1 ? '' : 's'})? Leads waiting inside them finish the sequence.`)) return;
    void remove.act(() => run('campaigns.removeSequenceStep', { campaignId: ctx.campaignId, stepId: step.id, ...(isCondition ? { removeBranches: true } : {}) }));
  }

  const lastOfPath = (parent: string, branch: 'yes' | 'no') => {
    const p = pathOf(ctx.summary.steps, parent, branch);
    return p[p.length - 1];
  };

  return (
    <div className={`step-card type-${step.type}${stepProblems.length > 0 ? ' has-problem' : ''}`} data-step-id={step.id} data-step-type={step.type} data-step-number={step.number}>
      <div className="step-head">
        <span className="step-no">{step.number}</span>
        <strong>{STEP_LABELS[step.type]}</strong>
        {step.subject && <span className="muted ellipsis" title={`Subject: ${step.subject}`}>“{step.subject}”</span>}
        <div className="grow" />
        <button className="btn small" disabled={ctx.summary.running} title={ctx.summary.running ? LOCKED : undefined} onClick={() => ctx.edit(step)}>Edit</button>
        <button className="btn small danger" disabled={remove.busy || ctx.summary.running} title={ctx.summary.running ? LOCKED : undefined} onClick={doRemove} aria-label={`Remove step ${step.number}`}>Remove</button>
      </div>
      <div className="step-body">
        <div className="step-text">{summaryLine(step)}</div>
        <div className="row wrap step-tags">
          {step.variants.length > 0 && <span className="tag">{step.variants.length} variant{step.variants.length === 1 ? '' : 's'} · {step.variantAssignment.mode.replace('_', ' ')}</span>}
          {step.voiceNote.mode === 'ai_voice' && <span className="tag">AI voice note</span>}
          {step.voiceNote.mode === 'recorded' && <span className="tag">Recorded voice note</span>}
          {step.sendCondition && !isCondition && <span className="tag">Only if: {CONDITION_LABELS[step.sendCondition] ?? step.sendCondition}{step.stopIfSkipped ? ' (else stop)' : ''}</span>}
          {step.type === 'EMAIL' && <span className="tag">{step.emailThreading === 'new_thread' ? 'New thread' : 'Same thread'}</span>}
        </div>
        {stepProblems.map((p) => (
          <div key={p.message} className="faint step-problem">⚠ {p.message}</div>
        ))}
      </div>
      <div data-testid="step-card-error"><ErrorText error={remove.error} /></div>
      {isCondition && (
        <div className="branches">
          {(['yes', 'no'] as const).map((branch) => {
            const steps = pathOf(ctx.summary.steps, step.id, branch);
            const tail = lastOfPath(step.id, branch);
            return (
              <div key={branch} className={`branch ${branch}`} data-branch={branch}>
                <div className="branch-head">
                  <span className={`branch-label ${branch}`}>{branch === 'yes' ? 'Yes' : 'No'}</span>
                  <button className="btn small ghost" onClick={() => ctx.add({ afterStepId: step.id, branch, where: `first on the ${branch} path of step ${step.number}` })}>
                    + First
                  </button>
                </div>
                <PathView ctx={ctx} steps={steps} />
                {tail && tail.type !== 'CONDITION' && (
                  <button className="btn small add-step" onClick={() => ctx.add({ afterStepId: tail.id, branch: null, where: `at the end of the ${branch} path` })}>
                    + Add to the {branch} path
                  </button>
                )}
              </div>
            );
          })}
        </div>
      )}
    </div>
  );
}

function isDescendant(steps: readonly SummaryStep[], s: SummaryStep, ancestorId: string): boolean {
  const byId = new Map(steps.map((x) => [x.id, x]));
  for (let p = s.parentStepId; p !== null; p = byId.get(p)?.parentStepId ?? null) if (p === ancestorId) return true;
  return false;
}
