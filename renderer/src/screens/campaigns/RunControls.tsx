/** Start and pause. Starting messages real people, so it is confirmed, and everything that stands in
 * its way (readiness problems, the subscription, the caller's role) is listed before and after. */
import { useState } from 'react';
import { Dialog } from '../../components/Dialog.tsx';
import { ErrorText } from '../../components/ErrorText.tsx';
import { OpError, run, useAction, useOp } from '../../lib/ops.ts';
import { useApp } from '../../state/app-store.ts';

type Problem = { severity: 'error' | 'warning'; message: string };

/** The refusal of a start in words, with what to do about it. */
function startRefusal(e: unknown): { text: string; problems: Problem[] } | null {
  if (!(e instanceof OpError)) return null;
  const problems = Array.isArray(e.details.problems) ? (e.details.problems as Problem[]) : [];
  switch (e.code) {
    case 'SUBSCRIPTION_INACTIVE':
      return { text: `${e.message} Campaigns message real people only on an active or trialing plan: ask the workspace owner to renew the subscription, then start again.`, problems: [] };
    case 'PERMISSION_DENIED':
      return { text: `${e.message} Ask an owner or admin of the workspace to start it.`, problems: [] };
    case 'READINESS_FAILED':
      return { text: 'Refused: the campaign is not ready to start. Fix the problems listed above first.', problems };
    default:
      return { text: e.message, problems };
  }
}

export function RunControls({ campaignId, running, name }: { campaignId: string; running: boolean; name: string }) {
  const role = useApp((s) => (s.session?.state === 'open' ? s.session.member.role : 'member'));
  const toast = useApp((s) => s.toast);
  const [confirming, setConfirming] = useState(false);
  const pause = useAction();
  const canStart = role === 'owner' || role === 'admin';

  if (running) {
    return (
      <div className="row">
        <ErrorText error={pause.error} />
        <button className="btn" disabled={pause.busy} onClick={() => void pause.act(async () => { await run('campaigns.pause', { campaignId }); toast(`Paused ${name}. Its leads wait where they are.`); })}>
          {pause.busy ? 'Pausing…' : 'Pause campaign'}
        </button>
      </div>
    );
  }
  return (
    <div className="row">
      {!canStart && <span className="faint" title="Starting a campaign needs the campaigns.launch permission">Only an owner or admin can start it</span>}
      <button className="btn primary" onClick={() => setConfirming(true)}>Start campaign…</button>
      {confirming && <StartDialog campaignId={campaignId} name={name} onClose={() => setConfirming(false)} />}
    </div>
  );
}

function StartDialog({ campaignId, name, onClose }: { campaignId: string; name: string; onClose: () => void }) {
  const toast = useApp((s) => s.toast);
  const sequence = useOp('campaigns.getSequence', { campaignId });
  const metrics = useOp('campaigns.getMetrics', { campaignIds: [campaignId] });
  const [busy, setBusy] = useState(false);
  const [refusal, setRefusal] = useState<{ text: string; problems: Problem[] } | null>(null);
  const problems = sequence.data?.readiness.problems ?? [];
  const errors = problems.filter((p) => p.severity === 'error');
  const warnings = problems.filter((p) => p.severity === 'warning');
  const m = metrics.data?.metrics[0];

  async function start() {
    setBusy(true);
    setRefusal(null);
    try {
      await run('campaigns.start', { campaignId });
      toast(`${name} is running: its senders message enrolled leads inside the sending window.`);
      onClose();
    } catch (e) {
      setRefusal(startRefusal(e) ?? { text: String(e), problems: [] });
    } finally {
      setBusy(false);
    }
  }

  return (
    <Dialog
      title={`Start ${name}?`}
      onClose={onClose}
      footer={
        <>
          <button className="btn" onClick={onClose}>Cancel</button>
          <button className="btn primary" disabled={busy || sequence.loading} onClick={() => void start()}>{busy ? 'Starting…' : 'Start and message people'}</button>
        </>
      }
    >
      <div className="notice warn">
        Starting messages real people
        {m && m.inProgress > 0 ? `: ${m.inProgress.toLocaleString()} enrolled lead${m.inProgress === 1 ? ' is' : 's are'} waiting for their next step` : ''}. Sent messages cannot be taken back; you can pause at any time.
        {m && m.inProgress === 0 && ' No lead is enrolled yet: it sends nothing until you enroll leads from the Leads screen.'}
      </div>
      <ErrorText error={sequence.error?.message} />
      {sequence.data && errors.length === 0 && <div className="notice ok" data-testid="readiness-ok">The sequence passes the readiness checks.</div>}
      {errors.length > 0 && (
        <div className="stack" data-testid="readiness-problems">
          <strong>Not ready to start:</strong>
          <ul className="problems">
            {errors.map((p) => (
              <li key={p.message} className="error">{p.message}</li>
            ))}
          </ul>
        </div>
      )}
      {warnings.length > 0 && (
        <ul className="problems">
          {warnings.map((p) => (
            <li key={p.message} className="warning">{p.message}</li>
          ))}
        </ul>
      )}
      <p className="faint">Starting needs an owner or admin and an active (or trialing) subscription of the workspace.</p>
      {refusal && (
        <div className="stack" data-testid="start-refusal">
          <ErrorText error={refusal.text} />
          {refusal.problems.some((p) => !errors.some((e) => e.message === p.message)) && (
            <ul className="problems">
              {refusal.problems.filter((p) => !errors.some((e) => e.message === p.message)).map((p) => (
                <li key={p.message} className={p.severity}>{p.message}</li>
              ))}
            </ul>
          )}
        </div>
      )}
    </Dialog>
  );
}
