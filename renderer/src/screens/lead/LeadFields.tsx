/** The lead's fields, variables and campaign enrollments. */
import type { OpOutput } from '../../../../shared/ops/index.ts';
import { dateTime, shortDate } from '../../lib/format.ts';
import { useSenders } from '../../lib/workspace-data.ts';

type LeadDetail = OpOutput<'campaigns.leads.get'>;

export function LeadFields({ lead }: { lead: LeadDetail }) {
  const { senders } = useSenders();
  const senderName = (id: string | null) => (id ? (senders.find((s) => s.id === id)?.name ?? 'Unknown sender') : 'Unassigned');
  const custom = lead.variables.filter((v) => !v.builtInType);
  return (
    <>
      <section className="section" aria-label="Fields">
        <h3>Details</h3>
        <dl className="kv">
          <dt>Email</dt><dd>{lead.email || '—'}</dd>
          <dt>Phone</dt><dd>{lead.phone || '—'}</dd>
          <dt>Location</dt><dd>{lead.location || '—'}</dd>
          <dt>Ranking score</dt><dd>{Math.round(lead.rankingScore)}</dd>
          <dt>Lead fit</dt><dd>{Math.round(lead.leadFitScore)}</dd>
          <dt>Created</dt><dd>{shortDate(lead.createdAt)}</dd>
          {lead.lastActivityAt && (<><dt>Last activity</dt><dd>{dateTime(lead.lastActivityAt)}</dd></>)}
          {lead.meetingBookedAt && (<><dt>Meeting booked</dt><dd>{dateTime(lead.meetingBookedAt)}</dd></>)}
          {custom.map((v) => (
            <FieldRow key={v.variableTypeId} label={v.name} value={v.value} />
          ))}
        </dl>
      </section>
      <section className="section" aria-label="Campaigns">
        <h3>Campaigns</h3>
        {lead.enrollments.length === 0 && <span className="muted">Not enrolled in any campaign.</span>}
        {lead.enrollments.map((e) => (
          <div key={e.id} className="row">
            <span className={`status ${e.status}`}>{e.status.replace('_', ' ').toLowerCase()}</span>
            <span className="grow">{e.campaignName}</span>
            <span className="muted">{senderName(e.sdrProfileId)}</span>
            {e.status === 'IN_PROGRESS' && e.nextActionAt && <span className="faint" title="Next action">{shortDate(e.nextActionAt)}</span>}
          </div>
        ))}
      </section>
    </>
  );
}

function FieldRow({ label, value }: { label: string; value: string }) {
  return (
    <>
      <dt>{label}</dt>
      <dd>{value || '—'}</dd>
    </>
  );
}
