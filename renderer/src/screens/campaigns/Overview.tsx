/** A campaign's results (sent, accepted, replies, reply rate, meetings) with a two-week chart, how
 * many of its list's leads have not started and why, and the runner's activity: what it did lately
 * and what it will do next, with why each lead waits. */
import type { OpOutput } from '../../../../shared/ops/index.ts';
import { ErrorText } from '../../components/ErrorText.tsx';
import { dateTime, relative } from '../../lib/format.ts';
import { useOp } from '../../lib/ops.ts';
import { useApp } from '../../state/app-store.ts';
import { percent } from './format.ts';
import { NotStarted } from './NotStarted.tsx';
import { StepResults } from './StepResults.tsx';

type Activity = OpOutput<'campaigns.getActivity'>;
type Metrics = OpOutput<'campaigns.getMetrics'>['metrics'][number];

const REASON_LABELS: Record<string, string> = {
  due: 'Due now',
  scheduled: 'Waiting (sequence)',
  outside_window: 'Window closed',
  daily_limit: 'Limit reached',
  sender_limited: 'Sender backing off',
  sender_paused: 'Sender paused',
  sender_disconnected: 'Sender disconnected',
  sender_removed: 'Sender removed',
  unassigned: 'Unassigned',
  campaign_paused: 'Campaign paused',
};

const KIND_LABELS: Record<string, string> = {
  message: 'Message',
  inmail: 'InMail',
  email: 'Email',
  connection_request: 'Connection request',
  voice_note: 'Voice note',
  reaction: 'Reaction',
  profile_visit: 'Profile visit',
  connection_accepted: 'Connection accepted',
  meeting_booked: 'Meeting booked',
  email_opened: 'Email opened',
  sequence_completed: 'Sequence completed',
  sequence_stopped: 'Sequence stopped',
  enrolled: 'Enrolled',
  lead_unsubscribed: 'Unsubscribed',
};

export function Overview({ campaignId }: { campaignId: string }) {
  const metrics = useOp('campaigns.getMetrics', { campaignIds: [campaignId] });
  const activity = useOp('campaigns.getActivity', { campaignId, limit: 25 });
  const m = metrics.data?.metrics[0];
  return (
    <div className="stack overview">
      <ErrorText error={metrics.error?.message} />
      <div className="metric-cards" data-testid="campaign-metrics">
        <Metric id="enrolled" label="Enrolled" value={m?.enrolled} sub={m ? `${m.inProgress.toLocaleString()} in progress · ${m.completed.toLocaleString()} done` : undefined} />
        <Metric id="sent" label="Messages sent" value={m?.messagesSent} />
        <Metric id="requests" label="Connection requests" value={m?.connectionRequestsSent} />
        <Metric id="accepted" label="Accepted" value={m?.connectionsAccepted} />
        <Metric id="replies" label="Replies" value={m?.replies} />
        <Metric id="replyRate" label="Reply rate" text={m ? percent(m.replyRate) : undefined} sub="of people contacted" />
        <Metric id="positiveReplyRate" label="Positive reply rate" text={m ? percent(m.positiveReplyRate) : undefined} sub={m ? `${m.positiveReplies.toLocaleString()} interested of ${m.replies.toLocaleString()} replies` : undefined} />
        <Metric id="meetings" label="Meetings booked" value={m?.meetingsBooked} />
      </div>
      {m && m.replies > 0 && <ReplyLabels labels={m.replyLabels} confirmed={m.replyLabelsConfirmed} replies={m.replies} />}
      {activity.data && <NotStarted campaignId={campaignId} running={activity.data.running} groupLeads={activity.data.groupLeads} />}
      <StepResults campaignId={campaignId} />
      <ErrorText error={activity.error?.message} />
      {activity.data && <DailyChart daily={activity.data.daily} />}
      {activity.data && (
        <div className="activity-columns">
          <Queued activity={activity.data} />
          <Recent activity={activity.data} />
        </div>
      )}
    </div>
  );
}

const LABEL_NAMES: [keyof Metrics['replyLabels'], string][] = [
  ['interested', 'Interested'], ['not_interested', 'Not interested'], ['out_of_office', 'Out of office'], ['wrong_person', 'Wrong person'],
  ['unsubscribe', 'Unsubscribe'], ['other', 'Other'], ['unlabelled', 'Unlabelled'],
];

/** Replies by label: each replying person once, under the label confirmed in the inbox, else the suggested one. */
function ReplyLabels({ labels, confirmed, replies }: { labels: Metrics['replyLabels']; confirmed: number; replies: number }) {
  return (
    <div className="row" style={{ gap: 6, flexWrap: 'wrap' }} data-testid="reply-labels" aria-label="Replies by label">
      {LABEL_NAMES.filter(([k]) => labels[k] > 0).map(([k, name]) => (
        <span key={k} className="pill" data-label={k}>{name}: {labels[k].toLocaleString()}</span>
      ))}
      <span className="faint">{confirmed.toLocaleString()} of {replies.toLocaleString()} confirmed in the inbox; the rest as suggested from the text.</span>
    </div>
  );
}

function Metric({ id, label, value, text, sub }: { id: string; label: string; value?: number; text?: string; sub?: string }) {
  return (
    <div className="metric" data-metric={id}>
      <span className="label">{label}</span>
      <strong className="value">{text ?? (value === undefined ? '…' : value.toLocaleString())}</strong>
      {sub && <span className="faint">{sub}</span>}
    </div>
  );
}

/** Sends and replies per day of the last two weeks, as bars (inline SVG: no chart library). */
function DailyChart({ daily }: { daily: Activity['daily'] }) {
  const width = 1000;
  const height = 150;
  const pad = { left: 30, right: 8, top: 10, bottom: 22 };
  const max = Math.max(1, ...daily.map((d) => Math.max(d.sent, d.replies + d.accepted)));
  const slot = (width - pad.left - pad.right) / Math.max(1, daily.length);
  const bar = Math.max(2, slot / 2 - 2);
  const y = (v: number) => pad.top + (height - pad.top - pad.bottom) * (1 - v / max);
  const total = daily.reduce((a, d) => ({ sent: a.sent + d.sent, replies: a.replies + d.replies, accepted: a.accepted + d.accepted }), { sent: 0, replies: 0, accepted: 0 });
  return (
    <section className="card-box chart" aria-label="Sends and replies per day">
      <div className="row">
        <h3 className="grow">Last 14 days</h3>
        <span className="legend"><i className="sent" /> Sent {total.sent}</span>
        <span className="legend"><i className="replies" /> Replies {total.replies}</span>
        <span className="legend"><i className="accepted" /> Accepted {total.accepted}</span>
      </div>
      <svg viewBox={`0 0 ${width} ${height}`} className="chart-svg" role="img" aria-label={`Sent ${total.sent}, replies ${total.replies}, accepted ${total.accepted} in the last 14 days`}>
        <line x1={pad.left} x2={width - pad.right} y1={y(0)} y2={y(0)} className="axis" />
        <text x={pad.left - 4} y={y(max) + 4} textAnchor="end" className="tick">{max}</text>
        <text x={pad.left - 4} y={y(0)} textAnchor="end" className="tick">0</text>
        {daily.map((d, i) => {
          const x = pad.left + i * slot + 1;
          return (
            <g key={d.day}>
              <title>{`${d.day}: ${d.sent} sent, ${d.replies} replies, ${d.accepted} accepted`}</title>
              <rect x={x} y={y(d.sent)} width={bar} height={y(0) - y(d.sent)} className="sent" />
              <rect x={x + bar + 1} y={y(d.replies)} width={bar} height={y(0) - y(d.replies)} className="replies" />
              <rect x={x + bar + 1} y={y(d.replies + d.accepted)} width={bar} height={y(d.replies) - y(d.replies + d.accepted)} className="accepted" />
              {i % 2 === 0 && <text x={x + bar} y={height - 5} textAnchor="middle" className="tick">{d.day.slice(5)}</text>}
            </g>
          );
        })}
      </svg>
    </section>
  );
}

function Queued({ activity }: { activity: Activity }) {
  const openLead = useApp((s) => s.openLead);
  const reasons = Object.entries(activity.waiting.byReason).sort((a, b) => b[1] - a[1]);
  return (
    <section className="card-box" aria-label="Queued next actions" data-testid="queued-actions">
      <div className="row">
        <h3 className="grow">Next actions</h3>
        <span className="muted">{activity.waiting.total.toLocaleString()} lead{activity.waiting.total === 1 ? '' : 's'} in progress</span>
      </div>
      {reasons.length > 0 && (
        <div className="row wrap" data-testid="waiting-summary">
          {reasons.map(([reason, n]) => (
            <span key={reason} className={`reason ${reason}`}>{REASON_LABELS[reason] ?? reason}: {n.toLocaleString()}</span>
          ))}
        </div>
      )}
      {activity.queued.length === 0 && <span className="muted">No lead is waiting for a step. Enroll leads from the Leads screen.</span>}
      <ul className="activity-list">
        {activity.queued.map((q) => (
          <li key={q.enrollmentId} data-reason={q.reason}>
            <div className="row">
              <a href="#" onClick={(e) => { e.preventDefault(); openLead(q.leadId); }} className="grow">{q.leadName}</a>
              <span className={`reason ${q.reason}`}>{REASON_LABELS[q.reason] ?? q.reason}</span>
            </div>
            <div className="faint">
              {q.stepLabel ?? 'No step'}
              {q.senderName ? ` · ${q.senderName}` : ''}
              {q.until ? ` · ${relative(q.until)} (${dateTime(q.until)})` : q.nextActionAt && q.reason === 'due' ? ` · due since ${dateTime(q.nextActionAt)}` : ''}
            </div>
            <div className="why">{q.explanation}</div>
          </li>
        ))}
      </ul>
    </section>
  );
}

function Recent({ activity }: { activity: Activity }) {
  const openLead = useApp((s) => s.openLead);
  return (
    <section className="card-box" aria-label="Recent activity" data-testid="recent-activity">
      <h3>Recent activity</h3>
      {activity.recent.length === 0 && <span className="muted">Nothing sent yet.</span>}
      <ul className="activity-list">
        {activity.recent.map((r) => (
          <li key={r.id} className={`recent ${r.type}`} data-type={r.type}>
            <div className="row">
              <span className={`kind-badge ${r.type}`}>{r.type === 'reply' ? 'Reply' : r.type === 'event' ? (KIND_LABELS[r.kind] ?? r.kind) : `${KIND_LABELS[r.kind] ?? r.kind}${r.type === 'sent' ? '' : ` ${r.type}`}`}</span>
              <a href="#" onClick={(e) => { e.preventDefault(); openLead(r.leadId); }} className="grow">{r.leadName}</a>
              <span className="faint" title={dateTime(r.at)}>{relative(r.at)}</span>
            </div>
            {(r.stepLabel || r.senderName) && <div className="faint">{[r.stepLabel, r.senderName].filter(Boolean).join(' · ')}</div>}
            {r.text && r.type !== 'event' && <div className="snippet">{r.text}</div>}
            {r.error && <ErrorText error={r.error} />}
          </li>
        ))}
      </ul>
    </section>
  );
}
