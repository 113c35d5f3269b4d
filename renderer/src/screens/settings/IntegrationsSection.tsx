/** Settings → Integrations: the workspace's webhook endpoints (kept and delivered by the sync server;
 * the desktop forwards the webhooks.* operations to it), the event choice, the signing secret shown
 * once at creation and rotation, and each endpoint's delivery log. */
import { useCallback, useState } from 'react';
import type { OpOutput } from '../../../../shared/ops/index.ts';
import { WEBHOOK_EVENT_LABELS, WEBHOOK_EVENT_TYPES } from '../../../../shared/webhooks/events.ts';
import type { WebhookEventType } from '../../../../shared/webhooks/events.ts';
import { ErrorText } from '../../components/ErrorText.tsx';
import { dateTime } from '../../lib/format.ts';
import { run, useAction } from '../../lib/ops.ts';
import { useApp } from '../../state/app-store.ts';
import { useServerRead } from './use-server-read.ts';
import { WebhookDeliveryLog } from './WebhookDeliveryLog.tsx';

type Endpoint = OpOutput<'webhooks.list'>['endpoints'][number];

export function IntegrationsSection() {
  const demo = useApp((s) => s.session?.state === 'open' && s.session.kind === 'demo');
  const role = useApp((s) => (s.session?.state === 'open' ? s.session.member.role : 'member'));
  return (
    <section className="card-box" aria-labelledby="integrations-title" data-testid="integrations-section">
      <h2 id="integrations-title">Integrations: webhooks</h2>
      <p className="muted" style={{ margin: 0 }}>
        Webhooks tell your CRM, Slack or automations (Make, n8n, Zapier) the moment something happens: a reply, a booked meeting, a stage change.
        Each request is signed as the Standard Webhooks specification says, so the receiver can check it came from here.
      </p>
      {demo ? (
        <div className="notice">Webhooks need a sync server: they are kept and sent by your team's server, and this demo workspace is local to this machine. Connect to a sync server above to add endpoints.</div>
      ) : role === 'member' ? (
        <span className="muted">Only the workspace's owners and admins manage webhooks.</span>
      ) : (
        <Endpoints />
      )}
    </section>
  );
}

function Endpoints() {
  const [revision, setRevision] = useState(0);
  const [secret, setSecret] = useState<{ url: string; secret: string; rotated: boolean } | null>(null);
  const [logFor, setLogFor] = useState<string | null>(null);
  const refresh = useCallback(() => setRevision((r) => r + 1), []);
  const { data, error } = useServerRead('webhooks.list', {}, revision);
  const endpoints = data?.endpoints ?? [];
  return (
    <>
      <ErrorText error={error} />
      {secret && <SecretNotice {...secret} onDone={() => setSecret(null)} />}
      {endpoints.length === 0 ? (
        <span className="muted">No endpoint yet. Add one below.</span>
      ) : (
        <ul className="webhook-endpoints" aria-label="Webhook endpoints" style={{ listStyle: 'none', margin: 0, padding: 0, display: 'grid', gap: 10 }}>
          {endpoints.map((e) => (
            <EndpointItem
              key={e.id}
              endpoint={e}
              logOpen={logFor === e.id}
              onToggleLog={() => setLogFor(logFor === e.id ? null : e.id)}
              onChanged={refresh}
              onSecret={(s) => setSecret({ url: e.url, secret: s, rotated: true })}
            />
          ))}
        </ul>
      )}
      <AddEndpoint
        onCreated={(url, s) => {
          setSecret({ url, secret: s, rotated: false });
          refresh();
        }}
      />
    </>
  );
}

function SecretNotice({ url, secret, rotated, onDone }: { url: string; secret: string; rotated: boolean; onDone: () => void }) {
  const [copied, setCopied] = useState(false);
  return (
    <div className="notice ok" role="status" data-testid="webhook-secret">
      <div>
        {rotated ? 'New signing secret' : 'Signing secret'} for <span className="mono">{url}</span> (shown once: copy it into the receiver now).
        {rotated && ' The previous secret keeps signing for 24 hours beside this one, so the receiver can switch without missing an event.'}
      </div>
      <div className="row wrap">
        <code className="mono" aria-label="Signing secret" style={{ userSelect: 'all', wordBreak: 'break-all' }}>{secret}</code>
        <button
          className="btn small"
          type="button"
          onClick={() => {
            void navigator.clipboard?.writeText(secret).then(() => setCopied(true), () => setCopied(false));
          }}
        >
          {copied ? 'Copied' : 'Copy'}
        </button>
        <button className="btn small ghost" type="button" onClick={onDone}>Done</button>
      </div>
    </div>
  );
}

function EndpointItem({ endpoint: e, logOpen, onToggleLog, onChanged, onSecret }: { endpoint: Endpoint; logOpen: boolean; onToggleLog: () => void; onChanged: () => void; onSecret: (secret: string) => void }) {
  const action = useAction();
  const [tested, setTested] = useState<string | null>(null);
  const logId = `webhook-log-${e.id}`;
  return (
    <li className="card-box" style={{ padding: '10px 12px' }} data-testid="webhook-endpoint" aria-label={`Endpoint ${e.url}`}>
      <div className="row wrap" style={{ justifyContent: 'space-between' }}>
        <span className="mono" style={{ wordBreak: 'break-all' }}>{e.url}</span>
        <span className="pill">{e.enabled ? (e.failingSince ? `Failing since ${dateTime(e.failingSince)}` : 'Enabled') : 'Disabled'}</span>
      </div>
      {e.description && <span className="muted">{e.description}</span>}
      {!e.enabled && e.disabledReason && <div className="notice warn">{e.disabledReason}</div>}
      <span className="muted">
        Events: {e.events.join(', ')}
        {e.pendingDeliveries > 0 && ` · ${e.pendingDeliveries} waiting`}
        {e.lastSuccessAt && ` · last delivered ${dateTime(e.lastSuccessAt)}`}
        {e.previousSecretExpiresAt && ` · previous secret signs until ${dateTime(e.previousSecretExpiresAt)}`}
      </span>
      <div className="row wrap" role="group" aria-label={`Actions for ${e.url}`}>
        <button className="btn small" type="button" disabled={action.busy || !e.enabled} onClick={() => void action.act(async () => {
          const r = await run('webhooks.sendTest', { endpointId: e.id });
          setTested(r.eventId);
          if (!logOpen) onToggleLog();
        })}>Send test event</button>
        <button className="btn small" type="button" aria-expanded={logOpen} aria-controls={logId} onClick={onToggleLog}>{logOpen ? 'Hide delivery log' : 'Delivery log'}</button>
        <button className="btn small" type="button" disabled={action.busy} onClick={() => void action.act(async () => {
          await run('webhooks.update', { endpointId: e.id, enabled: !e.enabled });
          onChanged();
        })}>{e.enabled ? 'Disable' : 'Enable'}</button>
        <button className="btn small" type="button" disabled={action.busy} onClick={() => {
          if (!confirm('Make a new signing secret? The current one keeps signing for 24 hours beside the new one.')) return;
          void action.act(async () => {
            const r = await run('webhooks.rotateSecret', { endpointId: e.id });
            onSecret(r.secret);
            onChanged();
          });
        }}>Rotate secret</button>
        <button className="btn small danger" type="button" disabled={action.busy} onClick={() => {
          if (!confirm(`Delete the endpoint ${e.url} with its delivery log?`)) return;
          void action.act(async () => {
            await run('webhooks.delete', { endpointId: e.id });
            onChanged();
          });
        }}>Delete</button>
      </div>
      {tested && <span className="muted" role="status">Test event {tested} queued.</span>}
      <ErrorText error={action.error} />
      {logOpen && <WebhookDeliveryLog id={logId} endpointId={e.id} onChanged={onChanged} />}
    </li>
  );
}

function AddEndpoint({ onCreated }: { onCreated: (url: string, secret: string) => void }) {
  const create = useAction();
  const [url, setUrl] = useState('');
  const [description, setDescription] = useState('');
  const [events, setEvents] = useState<WebhookEventType[]>(['lead.replied', 'lead.meeting_booked']);
  const toggle = (t: WebhookEventType) => setEvents(events.includes(t) ? events.filter((x) => x !== t) : [...events, t]);
  return (
    <form
      aria-labelledby="add-webhook-title"
      onSubmit={(ev) => {
        ev.preventDefault();
        void create.act(async () => {
          const r = await run('webhooks.create', { url, events, ...(description.trim() ? { description } : {}) });
          onCreated(r.url, r.secret);
          setUrl('');
          setDescription('');
        });
      }}
      style={{ display: 'grid', gap: 8 }}
    >
      <h3 id="add-webhook-title" style={{ margin: 0 }}>Add an endpoint</h3>
      <div className="row wrap">
        <input className="input" style={{ flex: '1 1 320px' }} type="url" placeholder="https://hooks.example.com/outreach" value={url} onChange={(ev) => setUrl(ev.target.value)} required aria-label="Endpoint URL" />
        <input className="input" style={{ flex: '0 1 220px' }} placeholder="What it is for (optional)" value={description} onChange={(ev) => setDescription(ev.target.value)} aria-label="Endpoint description" maxLength={200} />
      </div>
      <fieldset style={{ border: '1px solid var(--border)', borderRadius: 'var(--radius)', padding: '6px 10px', margin: 0 }}>
        <legend>Events to send</legend>
        <div style={{ display: 'grid', gridTemplateColumns: 'repeat(auto-fill, minmax(260px, 1fr))', gap: 4 }}>
          {WEBHOOK_EVENT_TYPES.map((t) => (
            <label key={t} className="row" style={{ gap: 6 }}>
              <input type="checkbox" checked={events.includes(t)} onChange={() => toggle(t)} />
              <span>{WEBHOOK_EVENT_LABELS[t]} <span className="mono muted">{t}</span></span>
            </label>
          ))}
        </div>
      </fieldset>
      <div className="row">
        <button className="btn primary" type="submit" disabled={create.busy || events.length === 0}>Add endpoint</button>
        {events.length === 0 && <span className="muted">Choose at least one event.</span>}
      </div>
      <ErrorText error={create.error} />
    </form>
  );
}
