/** Triage: leads whose catch-up date has passed, oldest first, with quick ways to deal with each. */
import { useEffect, useState } from 'react';
import { ErrorText } from '../../components/ErrorText.tsx';
import { StagePill } from '../../components/StagePill.tsx';
import { relative, shortDate } from '../../lib/format.ts';
import { errorText, run, useOp } from '../../lib/ops.ts';
import { useApp } from '../../state/app-store.ts';
import type { LeadRow } from '../leads/lead-pager.ts';

const MAX = 500;

/** Leads with a catch-up date in the past. Search sorts by followUpAt (latest first, empty dates
 * last), so the page walk skips future dates and stops at the first lead without one. */
async function dueLeads(now: number): Promise<LeadRow[]> {
  const out: LeadRow[] = [];
  let cursor: string | undefined;
  for (;;) {
    const r = await run('campaigns.leads.search', { sortBy: 'followUpAt', sortOrder: 'desc', limit: 200, cursor });
    for (const l of r.leads) {
      if (l.followUpAt === null) return out.reverse();
      if (new Date(l.followUpAt).getTime() <= now) out.push(l);
    }
    if (!r.nextCursor || out.length >= MAX) return out.reverse();
    cursor = r.nextCursor;
  }
}

export function TriageScreen() {
  const openLead = useApp((s) => s.openLead);
  // The first page changes whenever a catch-up date changes; it is the signal to look again.
  const trigger = useOp('campaigns.leads.search', { sortBy: 'followUpAt', sortOrder: 'desc', limit: 200 });
  const [rows, setRows] = useState<LeadRow[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [rowError, setRowError] = useState<{ id: string; text: string } | null>(null);

  useEffect(() => {
    if (!trigger.data) return;
    let stale = false;
    dueLeads(Date.now()).then(
      (r) => !stale && (setRows(r), setError(null)),
      (e: unknown) => !stale && setError(errorText(e)),
    );
    return () => {
      stale = true;
    };
  }, [trigger.data]);

  async function setFollowUp(lead: LeadRow, at: string | null) {
    setRowError(null);
    try {
      await run('campaigns.leads.setLeadFollowUp', { leadId: lead.id, followUpAt: at });
    } catch (e) {
      setRowError({ id: lead.id, text: errorText(e) });
    }
  }
  const later = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();

  return (
    <>
      <div className="screen-header">
        <h1>Triage</h1>
        <span className="sub">Leads whose catch-up date has come. Messaging a lead clears it.</span>
      </div>
      <div className="screen-body">
        <ErrorText error={trigger.error?.message ?? error} />
        <div className="list" data-testid="triage-list">
          {rows === null && <div className="list-empty">Loading…</div>}
          {rows?.length === 0 && <div className="list-empty">No catch-ups due. Set a catch-up date on a lead to see it here when the day comes.</div>}
          {rows?.map((l) => (
            <div key={l.id}>
              <div className="list-row" data-lead-id={l.id}>
                <div className="grow">
                  <a href="#" onClick={(e) => { e.preventDefault(); openLead(l.id); }}><strong>{l.fullName || l.email}</strong></a>
                  <div className="muted">{[l.jobTitle, l.company].filter(Boolean).join(' · ')}</div>
                </div>
                <StagePill stage={l.pipelineStage} />
                <span className="due overdue" title={l.followUpAt ?? ''}>due {shortDate(l.followUpAt)} ({relative(l.followUpAt)})</span>
                <button className="btn small" onClick={() => void setFollowUp(l, later(1))}>Tomorrow</button>
                <button className="btn small" onClick={() => void setFollowUp(l, later(7))}>In a week</button>
                <button className="btn small" onClick={() => void setFollowUp(l, null)}>Done</button>
              </div>
              {rowError?.id === l.id && <div style={{ padding: '0 12px 8px' }}><ErrorText error={rowError.text} /></div>}
            </div>
          ))}
        </div>
      </div>
    </>
  );
}
