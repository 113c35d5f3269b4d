/** A message step as one of the campaign's leads would receive it: merge fields filled with the
 * lead's values; a fallback used because the lead has no value is highlighted and listed, and a
 * field that renders as nothing (no value, no fallback) is marked, from campaigns.previewMessage. */
import { useEffect, useState } from 'react';
import type { OpOutput } from '../../../../shared/ops/index.ts';
import { STEP_LABELS } from '../../../../shared/sequence.ts';
import { ErrorText } from '../../components/ErrorText.tsx';
import { useOp } from '../../lib/ops.ts';

type Part = OpOutput<'campaigns.previewMessage'>['textParts'][number];
const MESSAGE_TYPES = ['SEND_MESSAGE', 'CONNECTION_REQUEST', 'INMAIL', 'EMAIL'];

export function MessagePreview({ campaignId }: { campaignId: string }) {
  const sequence = useOp('campaigns.getSequence', { campaignId });
  const [query, setQuery] = useState('');
  const leads = useOp('campaigns.leads.search', { campaignId, query: query.trim() || undefined, limit: 50, sortBy: 'fullName', sortOrder: 'asc' });
  const steps = (sequence.data?.steps ?? []).filter((s) => MESSAGE_TYPES.includes(s.type));
  const [stepId, setStepId] = useState<string>('');
  const [leadId, setLeadId] = useState<string>('');
  const [variantId, setVariantId] = useState<string>('');
  const firstStep = steps[0]?.id ?? '';
  const firstLead = leads.data?.leads[0]?.id ?? '';
  const stepIds = steps.map((s) => s.id).join(' ');
  useEffect(() => {
    if (!stepIds.split(' ').includes(stepId)) setStepId(firstStep);
  }, [firstStep, stepId, stepIds]);
  useEffect(() => {
    if (leadId === '' && firstLead !== '') setLeadId(firstLead);
  }, [firstLead, leadId]);
  const step = steps.find((s) => s.id === stepId);
  const variants = step?.variants ?? [];
  const variant = variants.some((v) => v.id === variantId) ? variantId : '';
  const preview = useOp('campaigns.previewMessage', step && leadId ? { campaignId, stepId: step.id, leadId, variantId: variant || undefined } : null);
  const p = preview.data;
  const leadRows = leads.data?.leads ?? [];
  const chosenLead = leadRows.find((l) => l.id === leadId);

  return (
    <section className="card-box stack" aria-label="Message preview" data-testid="message-preview">
      <h3>Preview a message</h3>
      <ErrorText error={sequence.error?.message} />
      <ErrorText error={leads.error?.message} />
      {sequence.data && steps.length === 0 && <span className="muted">The sequence has no message step to preview.</span>}
      {steps.length > 0 && (
        <div className="preview-controls">
          <label>
            Step
            <select value={stepId} onChange={(e) => setStepId(e.target.value)} data-testid="preview-step">
              {steps.map((s) => (
                <option key={s.id} value={s.id}>{s.number}. {STEP_LABELS[s.type]}</option>
              ))}
            </select>
          </label>
          {variants.length > 0 && (
            <label>
              Variant
              <select value={variant} onChange={(e) => setVariantId(e.target.value)} data-testid="preview-variant">
                <option value="">The step's default</option>
                {variants.map((v) => (
                  <option key={v.id} value={v.id}>{v.name || 'Unnamed variant'}</option>
                ))}
              </select>
            </label>
          )}
          <label>
            Find a lead
            <input type="search" value={query} placeholder="Name, company, email…" onChange={(e) => setQuery(e.target.value)} data-testid="preview-lead-search" />
          </label>
          <label>
            Lead
            <select value={leadId} onChange={(e) => setLeadId(e.target.value)} data-testid="preview-lead">
              {leadId !== '' && !chosenLead && <option value={leadId}>(chosen lead)</option>}
              {leadRows.map((l) => (
                <option key={l.id} value={l.id}>{l.fullName || l.email || l.leadIdentifier}{l.company ? ` · ${l.company}` : ''}</option>
              ))}
            </select>
          </label>
        </div>
      )}
      {leads.data && leadRows.length === 0 && <span className="muted">{query.trim() ? 'No lead of this campaign matches.' : 'This campaign has no leads yet: add some to preview a message for one of them.'}</span>}
      <ErrorText error={preview.error?.message} />
      {p && (
        <div className="stack" data-testid="preview-result">
          {step?.type === 'EMAIL' && (
            <div><span className="faint">Subject: </span><strong data-testid="preview-subject"><Parts parts={p.subjectParts} /></strong></div>
          )}
          <div className="message-preview" data-testid="preview-text"><Parts parts={p.textParts} /></div>
          {p.usedFallbacks.length > 0 && (
            <p className="faint" data-testid="preview-fallbacks">
              <span className="merge-fallback">Highlighted</span> text is a fallback: this lead has no {p.usedFallbacks.join(', ')}.
            </p>
          )}
          {p.emptyFields.length > 0 && (
            <p className="error-text" data-testid="preview-empty">
              This lead has no {p.emptyFields.join(', ')} and the message gives no fallback, so it will read with a gap. Add a fallback, e.g. {'{{'}{p.emptyFields[0]}|there{'}}'}.
            </p>
          )}
          {p.usedFallbacks.length === 0 && p.emptyFields.length === 0 && <p className="faint">Every merge field has a value for this lead.</p>}
        </div>
      )}
    </section>
  );
}

function Parts({ parts }: { parts: readonly Part[] }) {
  return (
    <>
      {parts.map((part, i) =>
        part.kind === 'text' ? (
          <span key={i}>{part.text}</span>
        ) : part.kind === 'value' ? (
          <span key={i} className="merge-value" title={`${part.field ?? ''}: the lead's value`}>{part.text}</span>
        ) : part.kind === 'fallback' ? (
          <mark key={i} className="merge-fallback" title={`Fallback: the lead has no ${part.field ?? 'value'}`} data-fallback={part.field}>{part.text}</mark>
        ) : (
          <span key={i} className="merge-empty" title={`Empty: the lead has no ${part.field ?? 'value'} and there is no fallback`} data-empty={part.field}>{part.field}</span>
        ),
      )}
    </>
  );
}
