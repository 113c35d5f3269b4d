/** Adds or edits one step of a sequence: the fields of its type, message variants, voice note mode,
 * merge fields from the campaign's list only, and its problems shown while typing. */
import { useEffect, useRef, useState } from 'react';
import type { OpOutput } from '../../../../shared/ops/index.ts';
import { CONDITION_TESTS, CONNECTION_NOTE_MAX_LENGTH, STEP_TYPES } from '../../../../shared/model/common.ts';
import type { StepType } from '../../../../shared/model/common.ts';
import { STEP_LABELS } from '../../../../shared/sequence.ts';
import { Dialog } from '../../components/Dialog.tsx';
import { ErrorText } from '../../components/ErrorText.tsx';
import { run, useAction } from '../../lib/ops.ts';
import { useApp } from '../../state/app-store.ts';
import { CONDITION_LABELS } from './format.ts';
import { MergeTextField } from './MergeTextField.tsx';
import { draftProblems, hasSubject, hasText } from './step-validation.ts';
import type { DraftField, SenderAbilities, StepDraft, VariantDraft } from './step-validation.ts';

type Summary = OpOutput<'campaigns.getSequence'>;
type SummaryStep = Summary['steps'][number];

export type Placement = { afterStepId: string | null; branch: 'yes' | 'no' | null; where: string };

const TYPE_HINTS: Record<StepType, string> = {
  SEND_MESSAGE: 'A direct message (as text or as a voice note).',
  CONNECTION_REQUEST: 'An invitation to connect, with an optional note.',
  INMAIL: 'A message to someone you are not connected with (Premium accounts).',
  EMAIL: 'An email, in a new thread or the same one as before.',
  WAIT: 'Wait before the next step.',
  PROFILE_VISIT: "Visit the person's profile (they may see it).",
  REACT_TO_POST: "React to the person's latest post.",
  CONDITION: 'Branch: a yes path and a no path.',
};

export function emptyDraft(type: StepType): StepDraft {
  return {
    type,
    content: '',
    subject: '',
    waitTimeSeconds: type === 'WAIT' ? 86_400 : 0,
    sendCondition: type === 'CONDITION' ? 'CONNECTED' : '',
    stopIfSkipped: false,
    emailThreading: 'same_thread',
    voiceNote: { mode: 'none', recordingId: '' },
    variants: [],
    variantMode: 'default',
    defaultVariantId: null,
  };
}

export function draftOf(s: SummaryStep): StepDraft {
  return {
    type: s.type,
    content: s.content,
    subject: s.subject,
    waitTimeSeconds: s.waitTimeSeconds,
    sendCondition: s.sendCondition,
    stopIfSkipped: s.stopIfSkipped,
    emailThreading: s.emailThreading === 'new_thread' ? 'new_thread' : 'same_thread',
    voiceNote: { mode: s.voiceNote.mode, recordingId: s.voiceNote.recordingId ?? '' },
    variants: s.variants.map((v) => ({ ...v })),
    variantMode: s.variantAssignment.mode,
    defaultVariantId: s.variantAssignment.defaultVariantId,
  };
}

type Props = {
  campaignId: string;
  running: boolean;
  fields: readonly { name: string; kind: string }[];
  senders: readonly SenderAbilities[];
  /** Editing this step, or adding one at `placement`. */
  step?: SummaryStep;
  placement?: Placement;
  onClose: () => void;
};

export function StepForm(props: Props) {
  const toast = useApp((s) => s.toast);
  const editing = props.step !== undefined;
  const [draft, setDraft] = useState<StepDraft>(() => (props.step ? draftOf(props.step) : emptyDraft('SEND_MESSAGE')));
  const action = useAction();
  // A refusal is about what was saved; once the text changes it no longer describes it.
  const set = (patch: Partial<StepDraft>) => {
    action.clear();
    setDraft((d) => ({ ...d, ...patch }));
  };
  const errorRef = useRef<HTMLDivElement>(null);
  // The refusal is at the bottom of a long form: bring it into view where the user looks.
  useEffect(() => {
    if (action.error) errorRef.current?.scrollIntoView({ block: 'nearest' });
  }, [action.error]);
  const problems = draftProblems(draft, props.fields.map((f) => f.name), props.senders);
  const problemsOf = (field: DraftField) => problems.filter((p) => p.field === field);
  const t = draft.type;

  async function save() {
    const base = props.step;
    const voiceNote = { mode: draft.voiceNote.mode, recordingId: draft.voiceNote.recordingId.trim() || null };
    const variants = draft.variants.map((v) => ({ ...(v.id ? { id: v.id } : {}), name: v.name, text: v.text, subject: v.subject }));
    const done = await action.act(async () => {
      if (!base) {
        const placement = props.placement ?? { afterStepId: null, branch: null, where: '' };
        const before = await run('campaigns.getSequence', { campaignId: props.campaignId });
        const known = new Set(before.steps.map((s) => s.id));
        const summary = await run('campaigns.addSequenceStep', {
          campaignId: props.campaignId,
          ...(placement.afterStepId ? { afterStepId: placement.afterStepId } : {}),
          ...(placement.branch ? { branch: placement.branch } : {}),
          step: {
            type: t,
            ...(hasText(t) ? { content: draft.content } : {}),
            ...(hasSubject(t) ? { subject: draft.subject } : {}),
            ...(t === 'WAIT' ? { waitTimeSeconds: draft.waitTimeSeconds } : {}),
            ...(draft.sendCondition ? { sendCondition: draft.sendCondition, stopIfSkipped: draft.stopIfSkipped } : {}),
            ...(t === 'EMAIL' ? { emailThreading: draft.emailThreading } : {}),
            ...(t === 'SEND_MESSAGE' ? { voiceNote } : {}),
          },
        });
        const added = summary.steps.find((s) => !known.has(s.id) && s.type === t);
        if (added && hasText(t) && variants.length > 0) {
          await run('campaigns.updateSequenceMessage', { campaignId: props.campaignId, stepId: added.id, variants, variantAssignment: { mode: draft.variantMode } });
        }
        for (const note of summary.notes) toast(note.charAt(0).toUpperCase() + note.slice(1));
        return true;
      }
      const before = draftOf(base);
      const patch: Record<string, unknown> = {};
      if (draft.content !== before.content) patch.content = draft.content;
      if (draft.subject !== before.subject) patch.subject = draft.subject;
      if (draft.waitTimeSeconds !== before.waitTimeSeconds) patch.waitTimeSeconds = draft.waitTimeSeconds;
      if (draft.sendCondition !== before.sendCondition) patch.sendCondition = draft.sendCondition;
      if (draft.stopIfSkipped !== before.stopIfSkipped) patch.stopIfSkipped = draft.stopIfSkipped;
      if (draft.emailThreading !== before.emailThreading) patch.emailThreading = draft.emailThreading;
      if (JSON.stringify(draft.voiceNote) !== JSON.stringify(before.voiceNote)) patch.voiceNote = voiceNote;
      const variantsChanged = JSON.stringify([draft.variants, draft.variantMode, draft.defaultVariantId]) !== JSON.stringify([before.variants, before.variantMode, before.defaultVariantId]);
      if (Object.keys(patch).length > 0) await run('campaigns.editSequenceStep', { campaignId: props.campaignId, stepId: base.id, ...patch });
      if (variantsChanged) {
        const ids = new Set(variants.flatMap((v) => (v.id ? [v.id] : [])));
        await run('campaigns.updateSequenceMessage', {
          campaignId: props.campaignId,
          stepId: base.id,
          variants,
          // A default that is not saved yet cannot be named; it falls back to the step's text.
          variantAssignment: { mode: draft.variantMode, defaultVariantId: draft.defaultVariantId && ids.has(draft.defaultVariantId) ? draft.defaultVariantId : null },
        });
      }
      return true;
    });
    if (done) props.onClose();
  }

  function setVariant(i: number, patch: Partial<VariantDraft>) {
    set({ variants: draft.variants.map((v, j) => (j === i ? { ...v, ...patch } : v)) });
  }

  const title = editing ? `Edit ${STEP_LABELS[t].toLowerCase()} step` : `Add a step${props.placement?.where ? ` ${props.placement.where}` : ''}`;
  return (
    <Dialog
      title={title}
      onClose={props.onClose}
      wide
      footer={
        <>
          {problems.length > 0 && <span className="faint grow">Fix the problems above, or save to let the campaign judge it.</span>}
          <button className="btn" onClick={props.onClose}>Cancel</button>
          <button className="btn primary" disabled={action.busy} onClick={() => void save()} data-testid="save-step">{action.busy ? 'Saving…' : editing ? 'Save step' : 'Add step'}</button>
        </>
      }
    >
      {props.running && (
        <div className="notice warn" data-testid="running-notice">This campaign is running: its sequence can change only while it is paused. Pause it first; saving now is refused.</div>
      )}
      {!editing && (
        <div className="type-grid" role="radiogroup" aria-label="Step type">
          {STEP_TYPES.map((type) => (
            <button
              key={type}
              type="button"
              role="radio"
              aria-checked={t === type}
              className={`type-choice${t === type ? ' on' : ''}`}
              onClick={() => set({ ...emptyDraft(type), content: draft.content, subject: draft.subject, variants: hasText(type) ? draft.variants : [] })}
            >
              <strong>{STEP_LABELS[type]}</strong>
              <span className="faint">{TYPE_HINTS[type]}</span>
            </button>
          ))}
        </div>
      )}

      {problemsOf('senders').length > 0 && (
        <div className="stack" data-testid="capability-problems">
          {problemsOf('senders').map((p) => <ErrorText key={p.message} error={p.message} />)}
        </div>
      )}

      {hasSubject(t) && (
        <MergeTextField label="Subject" value={draft.subject} onChange={(subject) => set({ subject })} fields={props.fields} invalid={problemsOf('subject').length > 0} placeholder={t === 'EMAIL' ? 'Quick question, {{First name|}}' : ''} />
      )}
      {problemsOf('subject').map((p) => <ErrorText key={p.message} error={p.message} />)}

      {hasText(t) && (
        <MergeTextField
          label={t === 'CONNECTION_REQUEST' ? 'Note (optional)' : 'Text'}
          value={draft.content}
          onChange={(content) => set({ content })}
          fields={props.fields}
          multiline
          rows={t === 'CONNECTION_REQUEST' ? 3 : 5}
          maxHint={t === 'CONNECTION_REQUEST' ? CONNECTION_NOTE_MAX_LENGTH : undefined}
          invalid={problemsOf('content').length > 0}
          placeholder={t === 'CONNECTION_REQUEST' ? 'Hi {{First name|there}}, …' : 'Hi {{First name|there}}, …'}
        />
      )}
      {problemsOf('content').map((p) => <ErrorText key={p.message} error={p.message} />)}

      {t === 'WAIT' && <WaitInput seconds={draft.waitTimeSeconds} onChange={(waitTimeSeconds) => set({ waitTimeSeconds })} />}
      {problemsOf('wait').map((p) => <ErrorText key={p.message} error={p.message} />)}

      {t === 'CONDITION' && (
        <label className="field">
          <span>Go down the yes path when the lead…</span>
          <select value={draft.sendCondition} onChange={(e) => set({ sendCondition: e.target.value })} aria-label="Condition test">
            {CONDITION_TESTS.map((c) => (
              <option key={c} value={c}>{CONDITION_LABELS[c] ?? c}</option>
            ))}
          </select>
          {!editing && <span className="faint">Both paths start with a one-day wait; edit or add steps on each path after.</span>}
        </label>
      )}
      {problemsOf('condition').map((p) => <ErrorText key={p.message} error={p.message} />)}

      {t === 'SEND_MESSAGE' && (
        <div className="controls">
          <label className="field">
            <span>Send as</span>
            <select value={draft.voiceNote.mode} onChange={(e) => set({ voiceNote: { ...draft.voiceNote, mode: e.target.value as StepDraft['voiceNote']['mode'] } })} aria-label="Voice note mode">
              <option value="none">Written text</option>
              <option value="ai_voice">AI voice note (the sender's cloned voice reads the text)</option>
              <option value="recorded">Pre-recorded voice note from the library</option>
            </select>
          </label>
          {draft.voiceNote.mode === 'recorded' && (
            <label className="field">
              <span>Recording id</span>
              <input className="input" value={draft.voiceNote.recordingId} onChange={(e) => set({ voiceNote: { ...draft.voiceNote, recordingId: e.target.value } })} aria-label="Recording id" />
            </label>
          )}
        </div>
      )}
      {problemsOf('voice').map((p) => <ErrorText key={p.message} error={p.message} />)}

      {t === 'EMAIL' && (
        <label className="field">
          <span>Thread</span>
          <select value={draft.emailThreading} onChange={(e) => set({ emailThreading: e.target.value as StepDraft['emailThreading'] })} aria-label="Email threading">
            <option value="same_thread">Reply in the same thread as the previous email</option>
            <option value="new_thread">Start a new thread</option>
          </select>
        </label>
      )}

      {t !== 'CONDITION' && t !== 'WAIT' && (
        <div className="controls">
          <label className="field">
            <span>Send only if the lead…</span>
            <select value={draft.sendCondition} onChange={(e) => set({ sendCondition: e.target.value })} aria-label="Send condition">
              <option value="">(always)</option>
              {CONDITION_TESTS.map((c) => (
                <option key={c} value={c}>{CONDITION_LABELS[c] ?? c}</option>
              ))}
            </select>
          </label>
          {draft.sendCondition && (
            <label className="row check-row">
              <input type="checkbox" className="check" checked={draft.stopIfSkipped} onChange={(e) => set({ stopIfSkipped: e.target.checked })} />
              <span>Stop the sequence when skipped</span>
            </label>
          )}
        </div>
      )}

      {hasText(t) && (
        <section className="variants" aria-label="Message variants">
          <div className="row">
            <h3 className="grow">Variants</h3>
            {draft.variants.length > 0 && (
              <select value={draft.variantMode} onChange={(e) => set({ variantMode: e.target.value as StepDraft['variantMode'] })} aria-label="Variant assignment">
                <option value="default">Send the default variant (else the text above)</option>
                <option value="random">Pick one at random per lead</option>
                <option value="round_robin">Rotate through them</option>
              </select>
            )}
            <button type="button" className="btn small" onClick={() => set({ variants: [...draft.variants, { name: `Variant ${String.fromCharCode(65 + draft.variants.length)}`, text: draft.content, subject: draft.subject }] })}>
              + Add variant
            </button>
          </div>
          {draft.variants.length === 0 && <span className="faint">One text for everyone. Add variants to test other wordings.</span>}
          {draft.variants.map((v, i) => (
            <div key={v.id ?? `new-${i}`} className="variant" data-testid="variant">
              <div className="row">
                <input className="input" value={v.name} onChange={(e) => setVariant(i, { name: e.target.value })} aria-label={`Variant ${i + 1} name`} />
                {draft.variantMode === 'default' && v.id && (
                  <label className="row check-row">
                    <input type="radio" name="default-variant" checked={draft.defaultVariantId === v.id} onChange={() => set({ defaultVariantId: v.id ?? null })} />
                    <span>Default</span>
                  </label>
                )}
                <div className="grow" />
                <button type="button" className="btn small danger" onClick={() => set({ variants: draft.variants.filter((_, j) => j !== i), defaultVariantId: draft.defaultVariantId === v.id ? null : draft.defaultVariantId })}>
                  Remove
                </button>
              </div>
              {hasSubject(t) && <MergeTextField label={`Variant ${i + 1} subject`} value={v.subject} onChange={(subject) => setVariant(i, { subject })} fields={props.fields} />}
              <MergeTextField label={`Variant ${i + 1} text`} value={v.text} onChange={(text) => setVariant(i, { text })} fields={props.fields} multiline rows={3} maxHint={t === 'CONNECTION_REQUEST' ? CONNECTION_NOTE_MAX_LENGTH : undefined} />
            </div>
          ))}
          {problemsOf('variants').map((p) => <ErrorText key={p.message} error={p.message} />)}
        </section>
      )}

      {action.error && <div data-testid="step-error" ref={errorRef}><ErrorText error={action.error} /></div>}
    </Dialog>
  );
}

function WaitInput({ seconds, onChange }: { seconds: number; onChange: (s: number) => void }) {
  const days = Math.floor(seconds / 86_400);
  const hours = Math.floor((seconds % 86_400) / 3600);
  const num = (v: string) => Math.max(0, Math.floor(Number(v) || 0));
  return (
    <div className="row">
      <label className="field">
        <span>Days</span>
        <input className="input" type="number" min={0} max={365} value={days} onChange={(e) => onChange(num(e.target.value) * 86_400 + hours * 3600)} aria-label="Wait days" style={{ width: 90 }} />
      </label>
      <label className="field">
        <span>Hours</span>
        <input className="input" type="number" min={0} max={23} value={hours} onChange={(e) => onChange(days * 86_400 + Math.min(23, num(e.target.value)) * 3600)} aria-label="Wait hours" style={{ width: 90 }} />
      </label>
    </div>
  );
}
