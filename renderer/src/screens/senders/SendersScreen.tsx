/** Sender profiles: each connected account with its daily limits against the plan maximums, today's
 * usage per action, the search budget, and pause/resume; and connecting a new one. */
import { useState } from 'react';
import { ErrorText } from '../../components/ErrorText.tsx';
import { useOp } from '../../lib/ops.ts';
import { ConnectSenderDialog } from './ConnectSenderDialog.tsx';
import { SenderCard } from './SenderCard.tsx';
import './senders.css';

export function SendersScreen() {
  const list = useOp('sdrProfiles.list', {});
  const [connecting, setConnecting] = useState(false);
  const senders = list.data?.sdrProfiles ?? [];
  return (
    <>
      <div className="screen-header">
        <h1>Senders</h1>
        <span className="sub">{list.data ? `${senders.length} connected account${senders.length === 1 ? '' : 's'}` : 'Loading…'}</span>
        <div className="grow" />
        <button className="btn primary" onClick={() => setConnecting(true)}>Connect a sender</button>
      </div>
      <div className="screen-body">
        <ErrorText error={list.error?.message} />
        <div className="sender-list" data-testid="sender-list">
          {senders.map((s) => (
            <SenderCard key={s.id} sender={s} />
          ))}
          {list.data && senders.length === 0 && (
            <div className="list list-empty">No sender yet. Connect the sandbox network to try campaigns safely, a mailbox over SMTP, or a social network through an HTTP connector.</div>
          )}
        </div>
      </div>
      {connecting && <ConnectSenderDialog onClose={() => setConnecting(false)} />}
    </>
  );
}
