/** The campaign's list leads that have not started, and why: "412 of 500 not started: 322 waiting
 * their turn, 60 Do Not Contact, 30 in another campaign". Each reason opens the leads it holds (the
 * runner's own rules, campaigns.getActivity groupLeads); the waiting ones are the list's "not
 * enrolled" rows on the Leads screen. */
import { useState } from 'react';
import type { OpOutput } from '../../../../shared/ops/index.ts';
import { ErrorText } from '../../components/ErrorText.tsx';
import { useOp } from '../../lib/ops.ts';
import { useApp } from '../../state/app-store.ts';

type GroupLeads = OpOutput<'campaigns.getActivity'>['groupLeads'];
type SkipReason = GroupLeads['skipped'][number]['reason'];

/** Words after a count: "60 Do Not Contact". */
const SKIP_LABELS: Record<SkipReason, string> = {
  do_not_contact: 'Do Not Contact',
  blocklisted: 'blocklisted',
  closed_stage: 'won or lost',
  running_elsewhere: 'in another campaign',
  company_relay: 'waiting for company relay',
};
const ORDER: readonly SkipReason[] = ['do_not_contact', 'blocklisted', 'closed_stage', 'running_elsewhere', 'company_relay'];
/** Leads listed for one reason. */
const SHOWN = 100;

export function NotStarted({ campaignId, running, groupLeads }: { campaignId: string; running: boolean; groupLeads: GroupLeads }) {
  const [open, setOpen] = useState<SkipReason | null>(null);
  const go = useApp((s) => s.go);
  const setFilters = useApp((s) => s.setFilters);
  const g = groupLeads;
  const notStarted = g.notStarted + g.skippedTotal;
  const reasons = ORDER.flatMap((r) => {
    const n = g.skippedByReason[r] ?? 0;
    return n > 0 ? [{ reason: r, n }] : [];
  });
  const showList = () => {
    setFilters({ campaignId, query: '', tagId: 'all', pipelineStage: '' });
    go('leads');
  };

  return (
    <section className="card-box not-started" aria-label="Leads not started" data-testid="not-started">
      <div className="row wrap">
        <h3 className="grow">Lead list</h3>
        <button className="btn small" onClick={showList}>Show the list's leads</button>
      </div>
      <p className="not-started-summary" data-testid="not-started-summary">
        {notStarted === 0 ? (
          <>Every one of the list's {g.total.toLocaleString()} leads has started.</>
        ) : (
          <>
            <strong>{notStarted.toLocaleString()} of {g.total.toLocaleString()}</strong> not started:{' '}
            {g.notStarted > 0 && (
              <span data-reason="waiting">
                {g.notStarted.toLocaleString()} {running ? 'waiting their turn' : 'start when the campaign runs'}
                {reasons.length > 0 ? ', ' : '.'}
              </span>
            )}
            {reasons.map(({ reason, n }, i) => (
              <span key={reason}>
                <button
                  className={`link-button${open === reason ? ' active' : ''}`}
                  aria-expanded={open === reason}
                  aria-controls="not-started-leads"
                  data-reason={reason}
                  onClick={() => setOpen(open === reason ? null : reason)}
                >
                  {n.toLocaleString()} {SKIP_LABELS[reason]}
                </button>
                {i < reasons.length - 1 ? ', ' : '.'}
              </span>
            ))}
          </>
        )}
      </p>
      {open && <SkippedLeads id="not-started-leads" campaignId={campaignId} reason={open} count={g.skippedByReason[open] ?? 0} />}
    </section>
  );
}

function SkippedLeads({ id, campaignId, reason, count }: { id: string; campaignId: string; reason: SkipReason; count: number }) {
  const openLead = useApp((s) => s.openLead);
  const list = useOp('campaigns.getActivity', { campaignId, limit: SHOWN, skippedReason: reason });
  const skipped = list.data?.groupLeads.skipped ?? [];
  return (
    <div id={id} className="stack" role="region" aria-label={`Leads not started: ${SKIP_LABELS[reason]}`}>
      <ErrorText error={list.error?.message} />
      {skipped[0] && <span className="muted">{skipped[0].explanation}</span>}
      {list.loading && !list.data && <span className="muted">Loading…</span>}
      <ul className="skipped-leads">
        {skipped.map((s) => (
          <li key={s.leadId}>
            <a href="#" onClick={(e) => { e.preventDefault(); openLead(s.leadId); }}>{s.leadName}</a>
          </li>
        ))}
      </ul>
      {count > skipped.length && list.data && <span className="muted">and {(count - skipped.length).toLocaleString()} more.</span>}
    </div>
  );
}
