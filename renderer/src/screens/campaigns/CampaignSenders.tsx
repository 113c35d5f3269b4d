/** The campaign's senders: add one, pause one on this campaign, remove one (previewed: its quiet leads
 * go back to the other senders, the ones already in conversation with it stay until moved), and move
 * leads between senders with a preview of what changes. */
import { useEffect, useState } from 'react';
import type { OpOutput } from '../../../../shared/ops/index.ts';
import { Dialog } from '../../components/Dialog.tsx';
import { ErrorText } from '../../components/ErrorText.tsx';
import { errorText, run, useAction, useOp } from '../../lib/ops.ts';
import { useSenders } from '../../lib/workspace-data.ts';
import { useApp } from '../../state/app-store.ts';
import { MoveLeadsDialog } from './MoveLeadsDialog.tsx';

type Removal = OpOutput<'campaigns.updateSenders'>;

export function CampaignSenders({ campaignId }: { campaignId: string }) {
  const toast = useApp((s) => s.toast);
  const go = useApp((s) => s.go);
  const listed = useOp('campaigns.listSenders', { campaignId });
  const load = useOp('campaigns.getEnrollments', { campaignId, limit: 1 });
  const { senders: all } = useSenders();
  const [adding, setAdding] = useState('');
  const [removing, setRemoving] = useState<{ id: string; name: string } | null>(null);
  const [moving, setMoving] = useState<{ from: string | null } | null>(null);
  const add = useAction();
  const pause = useAction();
  const senders = listed.data?.senders ?? [];
  const on = new Set(senders.map((s) => s.sdrProfileId));
  const candidates = all.filter((s) => !on.has(s.id));
  const loadOf = new Map((load.data?.senders ?? []).map((s) => [s.sdrProfileId, s]));
  const removedHolding = (load.data?.senders ?? []).filter((s) => !s.onCampaign && s.active > 0);
  const [warnings, setWarnings] = useState<string[]>([]);
  // The state asked for, shown until the campaign's live data catches up (or the change is refused).
  const [pausing, setPausing] = useState<Map<string, boolean>>(new Map());

  const forget = (ids: (id: string, wanted: boolean) => boolean) =>
    setPausing((m) => {
      const next = new Map([...m].filter(([id, wanted]) => !ids(id, wanted)));
      return next.size === m.size ? m : next;
    });
  useEffect(() => {
    const now = new Map((listed.data?.senders ?? []).map((s) => [s.sdrProfileId, s.paused]));
    forget((id, wanted) => now.get(id) === wanted);
  }, [listed.data]);

  async function setPaused(id: string, paused: boolean) {
    setPausing((m) => new Map(m).set(id, paused));
    const done = await pause.act(() => run('campaigns.setSendersPaused', { campaignId, sdrProfileIds: [id], paused }));
    // Refused: show the stored state again (the reason is shown below the table).
    if (!done) forget((x) => x === id);
  }

  async function doAdd() {
    if (!adding) return;
    const r = await add.act(() => run('campaigns.updateSenders', { campaignId, add: [adding] }));
    if (r) {
      setAdding('');
      setWarnings(r.warnings.cannotSend);
      toast(`${r.added.map((s) => s.name).join(', ') || 'Nobody'} added${r.running ? ' and sending from now on' : ''}.`);
    }
  }

  return (
    <div className="stack" data-testid="campaign-senders">
      <section className="card-box">
        <div className="row">
          <h3 className="grow">Senders of this campaign</h3>
          <button className="btn" onClick={() => setMoving({ from: null })} disabled={senders.length === 0}>Move leads between senders…</button>
        </div>
        <ErrorText error={listed.error?.message} />
        {senders.length === 0 && !listed.loading && <div className="notice warn">No sender yet: a campaign needs at least one to start.</div>}
        <table className="plain">
          <thead>
            <tr>
              <th>Sender</th>
              <th>Account</th>
              <th>On this campaign</th>
              <th className="num">Leads held</th>
              <th className="num">In conversation</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {senders.map((s) => {
              const l = loadOf.get(s.sdrProfileId);
              return (
                <tr key={s.sdrProfileId} data-sender-id={s.sdrProfileId}>
                  <td><strong>{s.name}</strong></td>
                  <td><span className={`sender-status ${s.status}`}>{s.status}</span></td>
                  <td>
                    <label className="row check-row">
                      <input
                        type="checkbox"
                        className="check"
                        checked={!(pausing.get(s.sdrProfileId) ?? s.paused)}
                        disabled={pause.busy}
                        onChange={(e) => void setPaused(s.sdrProfileId, !e.target.checked)}
                        aria-label={`${s.name} sends on this campaign`}
                      />
                      <span>{(pausing.get(s.sdrProfileId) ?? s.paused) ? 'Paused here (its leads wait)' : 'Sending'}</span>
                    </label>
                  </td>
                  <td className="num">{l?.active ?? 0}</td>
                  <td className="num">{l?.inConversation ?? 0}</td>
                  <td className="row">
                    <button className="btn small" onClick={() => setMoving({ from: s.sdrProfileId })} disabled={(l?.active ?? 0) === 0}>Move leads…</button>
                    <button className="btn small danger" onClick={() => setRemoving({ id: s.sdrProfileId, name: s.name })}>Remove…</button>
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
        {(load.data?.unassigned ?? 0) > 0 && <p className="muted">{load.data?.unassigned.toLocaleString()} lead(s) are unassigned: the campaign's senders pick them up as they go.</p>}
        <ErrorText error={pause.error} />
        <div className="row">
          <select value={adding} onChange={(e) => setAdding(e.target.value)} aria-label="Sender to add">
            <option value="">Add a sender…</option>
            {candidates.map((s) => (
              <option key={s.id} value={s.id}>{s.name} ({s.channel})</option>
            ))}
          </select>
          <button className="btn" disabled={!adding || add.busy} onClick={() => void doAdd()}>Add to campaign</button>
          {candidates.length === 0 && (
            <span className="faint">
              Every sender is on this campaign. <a href="#" onClick={(e) => { e.preventDefault(); go('senders'); }}>Connect another</a>
            </span>
          )}
        </div>
        <ErrorText error={add.error} />
        {warnings.length > 0 && (
          <div className="notice warn">
            <strong>The sender was added, but:</strong>
            <ul className="problems">
              {warnings.map((w) => (
                <li key={w} className="warning">{w}</li>
              ))}
            </ul>
          </div>
        )}
      </section>
      {removedHolding.length > 0 && (
        <section className="card-box" data-testid="removed-senders">
          <h3>Removed senders still in conversation</h3>
          <p className="muted">These senders left the campaign, but leads already talking with them stayed with them: a conversation belongs to the account it started on. Move them to another sender to continue the sequence.</p>
          {removedHolding.map((s) => (
            <div key={s.sdrProfileId} className="row">
              <span className="grow"><strong>{s.name}</strong> holds {s.active} lead{s.active === 1 ? '' : 's'} ({s.inConversation} in conversation)</span>
              <button className="btn small" onClick={() => setMoving({ from: s.sdrProfileId })}>Move them…</button>
            </div>
          ))}
        </section>
      )}
      {removing && <RemoveSenderDialog campaignId={campaignId} sender={removing} onClose={() => setRemoving(null)} />}
      {moving && <MoveLeadsDialog campaignId={campaignId} from={moving.from} onClose={() => setMoving(null)} />}
    </div>
  );
}

function RemoveSenderDialog({ campaignId, sender, onClose }: { campaignId: string; sender: { id: string; name: string }; onClose: () => void }) {
  const toast = useApp((s) => s.toast);
  const [preview, setPreview] = useState<Removal | null>(null);
  const [previewError, setPreviewError] = useState<string | null>(null);
  const action = useAction();

  useEffect(() => {
    let stale = false;
    run('campaigns.updateSenders', { campaignId, remove: [sender.id], dryRun: true }).then(
      (r) => !stale && setPreview(r),
      (e: unknown) => !stale && setPreviewError(errorText(e)),
    );
    return () => {
      stale = true;
    };
  }, [campaignId, sender.id]);

  async function confirm() {
    const r = await action.act(() => run('campaigns.updateSenders', { campaignId, remove: [sender.id] }));
    if (r) {
      toast(`${sender.name} removed: ${r.leads.assigned} lead(s) go to the other senders${r.leads.inFlight ? `, ${r.leads.inFlight} in conversation stay with ${sender.name} until moved` : ''}.`);
      onClose();
    }
  }

  return (
    <Dialog
      title={`Remove ${sender.name} from this campaign?`}
      onClose={onClose}
      footer={
        <>
          <button className="btn" onClick={onClose}>Cancel</button>
          <button className="btn primary danger-fill" disabled={!preview || action.busy} onClick={() => void confirm()}>{action.busy ? 'Removing…' : 'Remove sender'}</button>
        </>
      }
    >
      {!preview && !previewError && <p className="muted">Checking what this changes…</p>}
      {previewError && <div data-testid="remove-preview-error"><ErrorText error={previewError} /></div>}
      {preview && (
        <div className="stack" data-testid="remove-preview">
          <p>
            <strong>{preview.leads.assigned.toLocaleString()}</strong> lead{preview.leads.assigned === 1 ? '' : 's'} {sender.name} holds but has not talked with yet go back to the campaign: the remaining senders ({preview.senders.map((s) => s.name).join(', ')}) pick them up.
          </p>
          {preview.leads.inFlight > 0 ? (
            <div className="notice warn" data-testid="in-conversation">
              <strong>{preview.leads.inFlight.toLocaleString()}</strong> lead{preview.leads.inFlight === 1 ? ' is' : 's are'} already in conversation with {sender.name} (they replied or accepted a request). A conversation belongs to the account it started on, so they stay with {sender.name} and wait until you move them with “Move leads between senders”.
            </div>
          ) : (
            <p className="muted">No lead is in conversation with {sender.name}.</p>
          )}
          {preview.running && <p className="muted">The campaign keeps running with the other senders.</p>}
        </div>
      )}
      <ErrorText error={action.error} />
    </Dialog>
  );
}
