/** The lead's fields and custom columns (each edited in place), and its campaign enrollments. */
import type { OpOutput } from '../../../../shared/ops/index.ts';
import { dateTime, shortDate } from '../../lib/format.ts';
import { run } from '../../lib/ops.ts';
import { useSenders } from '../../lib/workspace-data.ts';
import { EditableField } from './EditableField.tsx';
import { customFields } from './custom-fields.ts';

type LeadDetail = OpOutput<'campaigns.leads.get'>;

/** The lead's own fields, edited in place (stage, tag and dates have controls of their own). */
const TEXT_FIELDS = [
  ['firstName', 'First name'], ['lastName', 'Last name'], ['email', 'Email'], ['jobTitle', 'Job title'], ['company', 'Company'],
  ['phone', 'Phone'], ['location', 'Location'], ['socialUrl', 'Profile URL'],
] as const;

export function LeadFields({ lead }: { lead: LeadDetail }) {
  const { senders } = useSenders();
  const senderName = (id: string | null) => (id ? (senders.find((s) => s.id === id)?.name ?? 'Unknown sender') : 'Unassigned');
  const custom = customFields(lead.variables);
  return (
    <>
      <section className="section" aria-label="Fields">
        <h3>Details</h3>
        <dl className="kv">
          {TEXT_FIELDS.map(([field, label]) => (
            <EditableField key={field} label={label} value={lead[field]} save={(v) => run('campaigns.leads.update', { leadId: lead.id, [field]: v })}>
              {field === 'email' && lead.emailBouncedAt && (
                <span className="notice warn" role="status" style={{ display: 'inline-block', marginLeft: 8, padding: '0 6px', fontSize: 12 }} title={`Bounced ${dateTime(lead.emailBouncedAt)}: email steps to this lead stop`}>
                  Email bounced: {lead.emailBounceReason ?? 'the address does not work'}
                </span>
              )}
            </EditableField>
          ))}
          <dt>Ranking score</dt><dd>{Math.round(lead.rankingScore)}</dd>
          <dt>Lead fit</dt><dd>{Math.round(lead.leadFitScore)}</dd>
          <dt>Created</dt><dd>{shortDate(lead.createdAt)}</dd>
          {lead.lastActivityAt && (<><dt>Last activity</dt><dd>{dateTime(lead.lastActivityAt)}</dd></>)}
          {lead.meetingBookedAt && (<><dt>Meeting booked</dt><dd>{dateTime(lead.meetingBookedAt)}</dd></>)}
          {custom.map((v) => (
            <EditableField key={v.variableTypeId} label={v.name} value={v.value} save={(value) => run('campaigns.leads.update', { leadId: lead.id, variables: { [v.name]: value } })}>
              {v.otherValues.length > 0 && (
                <span className="faint" style={{ marginLeft: 8 }} title="A list this lead is also on has its own column of this name; saving sets them all.">
                  another list has: {v.otherValues.join(', ')}
                </span>
              )}
            </EditableField>
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
