/** How the campaign picks leads: newest first or not, and company relay (try a colleague when someone
 * does not answer). Allowed while running. */
import { useState } from 'react';
import type { OpOutput } from '../../../../shared/ops/index.ts';
import { ErrorText } from '../../components/ErrorText.tsx';
import { run, useAction } from '../../lib/ops.ts';
import { useApp } from '../../state/app-store.ts';

type Settings = OpOutput<'campaigns.get'>['settings'];

/** The seniority values leads carry (imports and the demo use these; matching ignores case). */
const SENIORITY_SUGGESTIONS = ['owner', 'c_level', 'vp', 'director', 'head', 'manager', 'senior', 'entry'];

export function LeadPicking({ campaignId, settings }: { campaignId: string; settings: Settings }) {
  const toast = useApp((s) => s.toast);
  const [draft, setDraft] = useState<Settings>(settings);
  const [seniority, setSeniority] = useState('');
  const action = useAction();
  const changed = JSON.stringify(draft) !== JSON.stringify(settings);
  const relay = draft.companyRelay;
  const setRelay = (patch: Partial<Settings['companyRelay']>) => setDraft({ ...draft, companyRelay: { ...relay, ...patch } });

  function addSeniority(value: string) {
    const v = value.trim();
    if (v && !relay.seniorities.includes(v)) setRelay({ seniorities: [...relay.seniorities, v] });
    setSeniority('');
  }

  async function save() {
    const r = await action.act(() => run('campaigns.updateSettings', { campaignId, preferNewLeads: draft.preferNewLeads, companyRelay: draft.companyRelay }));
    if (r) {
      setDraft(r.after);
      toast('Lead picking saved.');
    }
  }

  return (
    <section className="card-box picking" aria-label="Lead picking" data-testid="lead-picking">
      <label className="row check-row">
        <input type="checkbox" className="check" checked={draft.preferNewLeads} onChange={(e) => setDraft({ ...draft, preferNewLeads: e.target.checked })} aria-label="Prefer new leads" />
        <span><strong>Prefer new leads</strong> <span className="muted">— start the most recently added leads first.</span></span>
      </label>
      <label className="row check-row">
        <input type="checkbox" className="check" checked={relay.enabled} onChange={(e) => setRelay({ enabled: e.target.checked })} aria-label="Company relay" />
        <span><strong>Company relay</strong> <span className="muted">— when someone does not answer, try a colleague at the same company.</span></span>
      </label>
      <fieldset className="relay" disabled={!relay.enabled}>
        <label className="field" style={{ maxWidth: 260 }}>
          <span>At most this many people per company</span>
          <input className="input" type="number" min={1} max={50} value={relay.maxPersonsPerCompany} onChange={(e) => setRelay({ maxPersonsPerCompany: Math.max(1, Math.min(50, Math.floor(Number(e.target.value) || 1))) })} aria-label="Max persons per company" />
        </label>
        <div className="field">
          <span>Only these seniority levels (none: anyone)</span>
          <div className="row wrap">
            {relay.seniorities.map((s) => (
              <span key={s} className="tag">
                {s} <button type="button" className="link-x" aria-label={`Remove ${s}`} onClick={() => setRelay({ seniorities: relay.seniorities.filter((x) => x !== s) })}>✕</button>
              </span>
            ))}
            <input
              className="input"
              list="seniorities"
              value={seniority}
              placeholder="Add a level…"
              onChange={(e) => setSeniority(e.target.value)}
              onKeyDown={(e) => {
                if (e.key === 'Enter') {
                  e.preventDefault();
                  addSeniority(seniority);
                }
              }}
              aria-label="Add a seniority level"
            />
            <button type="button" className="btn small" onClick={() => addSeniority(seniority)} disabled={!seniority.trim()}>Add</button>
            <datalist id="seniorities">
              {SENIORITY_SUGGESTIONS.map((s) => (
                <option key={s} value={s} />
              ))}
            </datalist>
          </div>
        </div>
      </fieldset>
      <div className="row">
        <button className="btn primary" disabled={!changed || action.busy} onClick={() => void save()}>{action.busy ? 'Saving…' : 'Save lead picking'}</button>
        <button className="btn" disabled={!changed || action.busy} onClick={() => setDraft(settings)}>Undo changes</button>
      </div>
      <ErrorText error={action.error} />
    </section>
  );
}
