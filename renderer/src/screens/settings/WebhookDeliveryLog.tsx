/** One webhook endpoint's delivery log (webhooks.deliveries.list): each event sent, its status and
 * attempts, the request as sent and the first bytes of each answer; "Send again" redelivers it with
 * the same webhook-id. Refreshes by itself while a delivery is waiting. */
import { useCallback, useEffect, useState } from 'react';
import type { OpOutput } from '../../../../shared/ops/index.ts';
import { ErrorText } from '../../components/ErrorText.tsx';
import { dateTime } from '../../lib/format.ts';
import { run, useAction } from '../../lib/ops.ts';
import { useServerRead } from './use-server-read.ts';

type Delivery = OpOutput<'webhooks.deliveries.list'>['deliveries'][number];

const STATUS_WORDS: Record<Delivery['status'], string> = { pending: 'Waiting', succeeded: 'Delivered', failed: 'Failed' };

export function WebhookDeliveryLog({ id, endpointId, onChanged }: { id: string; endpointId: string; onChanged: () => void }) {
  const [revision, setRevision] = useState(0);
  const [open, setOpen] = useState<string | null>(null);
  const redeliver = useAction();
  const refresh = useCallback(() => setRevision((r) => r + 1), []);
  const { data, error } = useServerRead('webhooks.deliveries.list', { endpointId, limit: 25 }, revision);
  const deliveries = data?.deliveries ?? null;
  // While something waits (a test just sent, a retry due), look again every 2 s.
  const waiting = deliveries?.some((d) => d.status === 'pending') ?? true;
  useEffect(() => {
    if (!waiting) return;
    const t = setInterval(refresh, 2_000);
    return () => clearInterval(t);
  }, [waiting, refresh]);

  return (
    <div id={id} role="region" aria-label="Delivery log" data-testid="webhook-log" style={{ display: 'grid', gap: 6 }}>
      <div className="row">
        <h3 style={{ margin: 0 }}>Delivery log</h3>
        <button className="btn small ghost" type="button" onClick={refresh}>Refresh</button>
      </div>
      <ErrorText error={error} />
      {deliveries === null ? (
        <span className="muted">Loading…</span>
      ) : deliveries.length === 0 ? (
        <span className="muted">Nothing sent yet. Send a test event to try the endpoint.</span>
      ) : (
        <table className="plain">
          <thead>
            <tr><th>When</th><th>Event</th><th>Status</th><th>Attempts</th><th>Answer</th><th /></tr>
          </thead>
          <tbody>
            {deliveries.map((d) => {
              const last = d.attemptLog[d.attemptLog.length - 1];
              const detailsId = `delivery-${d.id}`;
              return [
                <tr key={d.id} data-testid="webhook-delivery">
                  <td>{dateTime(last?.at ?? d.createdAt)}</td>
                  <td className="mono">{d.type}</td>
                  <td>
                    <span className="pill">{STATUS_WORDS[d.status]}</span>
                    {d.status === 'pending' && d.nextAttemptAt && <span className="muted"> next try {dateTime(d.nextAttemptAt)}</span>}
                  </td>
                  <td>{d.attempts}</td>
                  <td>{last ? (last.responseStatus !== null ? `HTTP ${last.responseStatus}` : (last.error ?? 'no answer')) : ''}{last ? ` · ${last.durationMs} ms` : ''}</td>
                  <td>
                    <div className="row">
                    <button className="btn small ghost" type="button" aria-expanded={open === d.id} aria-controls={detailsId} onClick={() => setOpen(open === d.id ? null : d.id)}>Details</button>
                    {d.status !== 'pending' && (
                      <button className="btn small" type="button" disabled={redeliver.busy} onClick={() => void redeliver.act(async () => {
                        await run('webhooks.deliveries.redeliver', { deliveryId: d.id });
                        refresh();
                        onChanged();
                      })}>Send again</button>
                    )}
                    </div>
                  </td>
                </tr>,
                open === d.id && (
                  <tr key={`${d.id}-details`} id={detailsId}>
                    <td colSpan={6}>
                      <div style={{ display: 'grid', gap: 6 }}>
                        <span>webhook-id <span className="mono">{d.eventId}</span>{d.redeliveryOf && ' (sent again on request)'}</span>
                        <pre className="mono" style={{ whiteSpace: 'pre-wrap', wordBreak: 'break-all', margin: 0 }} aria-label="Request body">{d.body}</pre>
                        {d.attemptLog.map((a) => (
                          <div key={a.attempt} className="notice">
                            <strong>Attempt {a.attempt}</strong> {dateTime(a.at)} · {a.responseStatus !== null ? `HTTP ${a.responseStatus}` : (a.error ?? 'no answer')} · {a.durationMs} ms
                            <pre className="mono" style={{ whiteSpace: 'pre-wrap', wordBreak: 'break-all', margin: 0 }}>
                              {Object.entries(a.requestHeaders).map(([k, v]) => `${k}: ${v}`).join('\n')}
                            </pre>
                            {a.responseExcerpt && <pre className="mono" style={{ whiteSpace: 'pre-wrap', margin: 0 }} aria-label="Answer">{a.responseExcerpt}</pre>}
                          </div>
                        ))}
                      </div>
                    </td>
                  </tr>
                ),
              ];
            })}
          </tbody>
        </table>
      )}
      <ErrorText error={redeliver.error} />
    </div>
  );
}
