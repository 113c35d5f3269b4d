/** The reply inbox: every reply across campaigns and senders, newest first. Keyboard driven: j/k
 * move, r replies (opens the lead's conversation, whose composer asks the confirmation direct
 * messages need), e marks done (or waiting again), Enter opens the lead. */
import { useEffect, useMemo, useState } from 'react';
import { ErrorText } from '../../components/ErrorText.tsx';
import { errorText, run, useOp } from '../../lib/ops.ts';
import { useCampaigns, useSenders } from '../../lib/workspace-data.ts';
import { useApp } from '../../state/app-store.ts';

type Tab = 'waiting' | 'done';

let lastG = 0;

/** Puts the cursor in the lead panel's reply box once the panel shows it (a few frames at most). */
function focusComposer(tries = 60): void {
  const box = document.querySelector<HTMLTextAreaElement>('[data-testid="conversation"] [aria-label="Direct message"]');
  if (box) box.focus();
  else if (tries > 0) requestAnimationFrame(() => focusComposer(tries - 1));
}

const typing = (t: EventTarget | null): boolean => t instanceof HTMLElement && (t.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(t.tagName));

export function InboxScreen() {
  const [tab, setTab] = useState<Tab>('waiting');
  const [senderId, setSenderId] = useState('');
  const [campaignId, setCampaignId] = useState('');
  const [current, setCurrent] = useState(0);
  const [problem, setProblem] = useState<string | null>(null);
  const openLead = useApp((s) => s.openLead);
  const toast = useApp((s) => s.toast);
  const { senders } = useSenders();
  const { campaigns } = useCampaigns();
  const input = useMemo(
    () => ({ done: tab === 'done', limit: 200, ...(senderId ? { sdrProfileId: senderId } : {}), ...(campaignId ? { campaignId } : {}) }),
    [tab, senderId, campaignId],
  );
  const live = useOp('inbox.list', input);
  const items = useMemo(() => live.data?.items ?? [], [live.data]);
  const at = Math.min(current, Math.max(0, items.length - 1));

  async function toggleDone(messageId: string, done: boolean): Promise<void> {
    setProblem(null);
    try {
      await run('inbox.setDone', { messageIds: [messageId], done });
      toast(done ? 'Marked done.' : 'Back in the inbox.');
    } catch (e) {
      setProblem(errorText(e));
    }
  }

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.ctrlKey || e.metaKey || e.altKey || typing(e.target)) return;
      if (document.querySelector('[role="dialog"]') || useApp.getState().leadId) return;
      // "g" starts a go-to shortcut (g r, g e...): its second key is not an inbox command.
      if (e.key === 'g') {
        lastG = Date.now();
        return;
      }
      if (Date.now() - lastG < 1500) return;
      const item = items[at];
      if (e.key === 'j' || e.key === 'ArrowDown') {
        e.preventDefault();
        setCurrent(Math.min(items.length - 1, at + 1));
      } else if (e.key === 'k' || e.key === 'ArrowUp') {
        e.preventDefault();
        setCurrent(Math.max(0, at - 1));
      } else if (item && e.key === 'Enter') {
        e.preventDefault();
        openLead(item.leadId);
      } else if (item && e.key === 'r') {
        e.preventDefault();
        openLead(item.leadId);
        focusComposer();
      } else if (item && e.key === 'e') {
        e.preventDefault();
        void toggleDone(item.messageId, tab === 'waiting');
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  });

  return (
    <>
      <div className="screen-header">
        <h1>Inbox</h1>
        <span className="sub">Replies from every campaign and sender, newest first · j/k move · r reply · e done · Enter open</span>
      </div>
      <div className="tabs" role="tablist">
        <button role="tab" aria-selected={tab === 'waiting'} onClick={() => { setTab('waiting'); setCurrent(0); }}>Waiting</button>
        <button role="tab" aria-selected={tab === 'done'} onClick={() => { setTab('done'); setCurrent(0); }}>Done</button>
      </div>
      <div className="screen-body">
        <div className="row" style={{ gap: 8, marginBottom: 8 }}>
          <label>
            Sender{' '}
            <select aria-label="Filter by sender" value={senderId} onChange={(e) => { setSenderId(e.target.value); setCurrent(0); }}>
              <option value="">All senders</option>
              {senders.map((s) => <option key={s.id} value={s.id}>{s.name}</option>)}
            </select>
          </label>
          <label>
            Campaign{' '}
            <select aria-label="Filter by campaign" value={campaignId} onChange={(e) => { setCampaignId(e.target.value); setCurrent(0); }}>
              <option value="">All campaigns</option>
              {campaigns.map((c) => <option key={c.id} value={c.id}>{c.name}</option>)}
            </select>
          </label>
        </div>
        <ErrorText error={live.error?.message ?? problem} />
        {items.length === 0 && !live.loading && <p className="muted">{tab === 'waiting' ? 'No replies waiting. Replies to every campaign and sender arrive here.' : 'Nothing marked done yet.'}</p>}
        <div className="stack" role="list" aria-label="Replies" data-testid="inbox-list">
          {items.map((it, i) => (
            <div
              key={it.messageId}
              role="listitem"
              className="item message in"
              aria-current={i === at ? 'true' : undefined}
              style={i === at ? { outline: '2px solid var(--accent, #2563eb)' } : undefined}
              onClick={() => setCurrent(i)}
            >
              <div className="meta">
                <strong>{it.leadName}</strong>
                {it.company && <span>{it.company}</span>}
                <span>to {it.senderName}</span>
                {it.campaignName && <span>· {it.campaignName}</span>}
                <span>· {new Date(it.receivedAt).toLocaleString()}</span>
              </div>
              {it.subject && <div><strong>{it.subject}</strong></div>}
              <div>{it.text}</div>
              <div className="row" style={{ gap: 6, marginTop: 6 }}>
                <button className="btn" onClick={() => { openLead(it.leadId); focusComposer(); }}>Reply</button>
                <button className="btn" onClick={() => void toggleDone(it.messageId, tab === 'waiting')}>{tab === 'waiting' ? 'Mark done' : 'Back to inbox'}</button>
              </div>
            </div>
          ))}
        </div>
      </div>
    </>
  );
}
