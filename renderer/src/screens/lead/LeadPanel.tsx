/** The lead detail panel: who the person is, where they stand, and everything that happened. */
import { useEffect } from 'react';
import { bridge } from '../../bridge/index.ts';
import { ErrorText } from '../../components/ErrorText.tsx';
import { initials } from '../../lib/format.ts';
import { useOp } from '../../lib/ops.ts';
import { useApp } from '../../state/app-store.ts';
import { Composer } from './Composer.tsx';
import { LeadControls } from './LeadControls.tsx';
import { LeadFields } from './LeadFields.tsx';
import { Conversation } from '../conversation/Conversation.tsx';
import { Timeline } from './Timeline.tsx';

export function LeadPanel({ leadId, overlay }: { leadId: string; overlay: boolean }) {
  const openLead = useApp((s) => s.openLead);
  const lead = useOp('campaigns.leads.get', { leadId });
  const d = lead.data;
  // A lead merged into another (here or on another desktop) answers with its survivor: show that one.
  const survivorId = lead.error?.code === 'NOT_FOUND' ? lead.error.details.mergedIntoId : undefined;
  useEffect(() => {
    if (typeof survivorId === 'string' && survivorId !== leadId) openLead(survivorId);
  }, [survivorId, leadId, openLead]);
  return (
    <aside className={`panel${overlay ? ' overlay' : ''}`} aria-label="Lead detail" data-testid="lead-panel">
      <div className="panel-head">
        <div className="title">
          <div className="avatar" aria-hidden="true">{initials(d?.fullName || d?.email || '?')}</div>
          <div className="grow" style={{ minWidth: 0 }}>
            <h2>{d ? d.fullName || d.email || d.leadIdentifier : lead.loading ? 'Loading…' : 'Lead'}</h2>
            {d && <div className="muted">{[d.jobTitle, d.company].filter(Boolean).join(' at ')}</div>}
            {d && (
              <div className="row wrap" style={{ marginTop: 4 }}>
                {d.email && <a href={`mailto:${d.email}`} onClick={(e) => { e.preventDefault(); bridge.openExternal(`mailto:${d.email}`); }}>{d.email}</a>}
                {d.socialUrl && <a href={d.socialUrl} onClick={(e) => { e.preventDefault(); bridge.openExternal(d.socialUrl); }}>Profile ↗</a>}
                {d.doNotContact && <span className="status STOPPED">Do not contact</span>}
                {d.blocklisted && <span className="status STOPPED">Blocklisted</span>}
              </div>
            )}
          </div>
          <button className="btn ghost small" onClick={() => openLead(null)} aria-label="Close lead">✕</button>
        </div>
      </div>
      <div className="panel-body">
        <ErrorText error={lead.error?.message} />
        {d && (
          <>
            <LeadControls lead={d} />
            <LeadFields lead={d} />
            <Conversation leadId={d.id} leadName={d.fullName || d.email || 'this lead'} />
            <section className="section" aria-label="Timeline">
              <h3>Timeline</h3>
              <Composer leadId={d.id} />
              <Timeline leadId={d.id} />
            </section>
          </>
        )}
      </div>
    </aside>
  );
}
