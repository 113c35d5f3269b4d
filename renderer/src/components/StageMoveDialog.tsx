/** Moving a lead into a lost stage asks for a close reason, into an on-hold stage for a wake date.
 * Move stays disabled, with the reason beside it, until what the stage needs is given; a refusal of
 * the operation itself (a rule, a conflict) is shown here in its own words. */
import { useState } from 'react';
import { CLOSE_REASONS } from '../../../shared/model/common.ts';
import type { CloseReason } from '../../../shared/model/common.ts';
import { CLOSE_REASON_LABELS, fromLocalInput } from '../lib/format.ts';
import { errorText } from '../lib/ops.ts';
import { Dialog } from './Dialog.tsx';
import { ErrorText } from './ErrorText.tsx';

export type StageChoice = { id: string; name: string; category: string };
export type StageExtras = { closeReason?: CloseReason; wakeAt?: string };

/** Whether moving into this stage needs more than the stage itself. */
export const needsPrompt = (s: { category: string }) => s.category === 'LOST' || s.category === 'ON_HOLD';

function defaultWake(): string {
  const d = new Date(Date.now() + 14 * 86_400_000);
  return d.toISOString().slice(0, 10);
}

export function StageMoveDialog(props: { stage: StageChoice; what: string; onMove: (extras: StageExtras) => Promise<void>; onClose: () => void }) {
  const { stage } = props;
  const [reason, setReason] = useState<CloseReason | ''>('');
  const [wake, setWake] = useState(defaultWake());
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const lost = stage.category === 'LOST';
  const onHold = stage.category === 'ON_HOLD';

  const missing = lost && !reason ? 'Choose why it was lost to move it.' : onHold && !fromLocalInput(wake) ? 'Choose the day to pick it back up.' : null;

  async function submit() {
    if (missing) return;
    setBusy(true);
    setError(null);
    try {
      const wakeAt = onHold ? fromLocalInput(wake) : null;
      await props.onMove({ closeReason: lost && reason ? reason : undefined, wakeAt: wakeAt ?? undefined });
      props.onClose();
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  }

  return (
    <Dialog
      title={`Move ${props.what} to ${stage.name}`}
      onClose={props.onClose}
      footer={
        <>
          {missing && <span className="faint" data-testid="move-blocked">{missing}</span>}
          <button className="btn" onClick={props.onClose}>Cancel</button>
          <button className="btn primary" disabled={busy || missing !== null} title={missing ?? undefined} onClick={() => void submit()}>{busy ? 'Moving…' : `Move to ${stage.name}`}</button>
        </>
      }
    >
      <form className="stack" onSubmit={(e) => { e.preventDefault(); void submit(); }}>
        {lost && (
          <label className="field">
            <span>Why was it lost? (required)</span>
            <select value={reason} onChange={(e) => setReason(e.target.value as CloseReason | '')} aria-label="Close reason">
              <option value="">Choose a close reason…</option>
              {CLOSE_REASONS.map((r) => (
                <option key={r} value={r}>{CLOSE_REASON_LABELS[r] ?? r}</option>
              ))}
            </select>
            <span className="faint">Any sequence still running for this lead stops.</span>
          </label>
        )}
        {onHold && (
          <label className="field">
            <span>Wake up on (required)</span>
            <input className="input" type="date" value={wake} onChange={(e) => setWake(e.target.value)} aria-label="Wake date" />
            <span className="faint">The lead shows up in Triage on that day.</span>
          </label>
        )}
        <ErrorText error={error} />
      </form>
    </Dialog>
  );
}
