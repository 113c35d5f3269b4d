/** The reply inbox: every reply across campaigns and senders, newest first. Keyboard driven: j/k
 * move, r replies (opens the lead's conversation, whose composer asks the confirmation direct
 * messages need), e marks done (or waiting again), Enter opens the lead, 1-6 confirm or change the
 * reply's label (0 clears it back to the suggestion). Labels filter the list. */
import { useMemo, useState } from 'react';
import type { ReplyLabel } from '../../../../shared/model/index.ts';
import { ErrorText } from '../../components/ErrorText.tsx';
import { errorText, run, useOp } from '../../lib/ops.ts';
import { useCampaigns, useSenders } from '../../lib/workspace-data.ts';
import { inTextField, useWindowKeydown } from '../../lib/window-keys.ts';
import { useApp } from '../../state/app-store.ts';

type Tab = 'waiting' | 'done';

/** The labels in key order: the key confirms (or changes to) that label. */
export const LABELS: readonly { label: ReplyLabel; key: string; name: string }[] = [
  { label: 'interested', key: '1', name: 'Interested' },
  { label: 'not_interested', key: '2', name: 'Not interested' },
  { label: 'out_of_office', key: '3', name: 'Out of office' },
  { label: 'wrong_person', key: '4', name: 'Wrong person' },
  { label: 'unsubscribe', key: '5', name: 'Unsubscribe' },
  { label: 'other', key: '6', name: 'Other' },
];
const LABEL_NAME = new Map<string, string>(LABELS.map((l) => [l.label, l.name]));
type LabelFilter = ReplyLabel | 'unlabelled' | '';

let lastG = 0;

/** Puts the cursor in the lead panel's reply box once the panel shows it (a few frames at most). */
function focusComposer(tries = 60): void {
  const box = document.querySelector<HTMLTextAreaElement>('[data-testid="conversation"] [aria-label="Direct message"]');
  if (box) box.focus();
  else if (tries > 0) requestAnimationFrame(() => focusComposer(tries - 1));
}

export function InboxScreen() {
  const [tab, setTab] = useState<Tab>('waiting');
  const [senderId, setSenderId] = useState('');
  const [campaignId, setCampaignId] = useState('');
  const [label, setLabelFilter] = useState<LabelFilter>('');
  const [current, setCurrent] = useState(0);
  const [problem, setProblem] = useState<string | null>(null);
  const openLead = useApp((s) => s.openLead);
  const toast = useApp((s) => s.toast);
  const { senders } = useSenders();
  const { campaigns } = useCampaigns();
  const input = useMemo(
    () => ({ done: tab === 'done', limit: 200, ...(senderId ? { sdrProfileId: senderId } : {}), ...(campaignId ? { campaignId } : {}), ...(label ? { label } : {}) }),
    [tab, senderId, campaignId, label],
  );
  const live = useOp('inbox.list', input);
  const counts = useOp('inbox.counts', {});
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

  async function setLabel(messageId: string, next: ReplyLabel | null, leadName: string): Promise<void> {
    setProblem(null);
    try {
      const out = await run('inbox.setLabel', { messageIds: [messageId], label: next });
      if (out.unsubscribedLeadIds.length > 0) toast(`${leadName} unsubscribed: marked Do Not Contact, sequences stopped.`);
      else toast(next ? `Labelled ${LABEL_NAME.get(next) ?? next}.` : 'Label cleared: back to the suggestion.');
    } catch (e) {
      setProblem(errorText(e));
    }
  }

  useWindowKeydown((e) => {
    if (e.ctrlKey || e.metaKey || e.altKey || inTextField(e.target)) return;
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
    } else if (item && e.key === '0') {
      e.preventDefault();
      void setLabel(item.messageId, null, item.leadName);
    } else if (item) {
      const byKey = LABELS.find((l) => l.key === e.key);
      if (byKey) {
        e.preventDefault();
        void setLabel(item.messageId, byKey.label, item.leadName);
      }
    }
  });

  return (
    <>
      <div className="screen-header">
        <h1>Inbox</h1>
        <span className="sub">Replies from every campaign and sender, newest first · j/k move · r reply · e done · Enter open · 1-6 label · 0 clear label</span>
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
          <label>
            Label{' '}
            <select aria-label="Filter by label" value={label} onChange={(e) => { setLabelFilter(e.target.value as LabelFilter); setCurrent(0); }}>
              <option value="">All labels</option>
              {LABELS.map((l) => (
                <option key={l.label} value={l.label}>{l.name}{counts.data ? ` (${counts.data.byLabel[l.label]} waiting)` : ''}</option>
              ))}
              <option value="unlabelled">Unlabelled{counts.data ? ` (${counts.data.byLabel.unlabelled} waiting)` : ''}</option>
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
              <div className="row" style={{ gap: 6, marginTop: 6, alignItems: 'center', flexWrap: 'wrap' }} data-testid="reply-label">
                {it.label && it.labelConfirmed && <span className="pill" data-label={it.label}>{LABEL_NAME.get(it.label)}</span>}
                {it.label && !it.labelConfirmed && <span className="pill muted" data-label={it.label} title="Suggested from the reply's text: press its key to confirm">Suggested: {LABEL_NAME.get(it.label)}</span>}
                {!it.label && <span className="muted">No label yet</span>}
                <span role="group" aria-label="Label" className="row" style={{ gap: 4 }}>
                  {LABELS.map((l) => (
                    <button
                      key={l.label}
                      className="btn"
                      aria-pressed={it.labelConfirmed && it.label === l.label}
                      style={it.labelConfirmed && it.label === l.label ? { background: 'var(--accent-soft)', borderColor: 'var(--accent)' } : undefined}
                      title={`Label ${l.name} (key ${l.key})`}
                      onClick={(e) => { e.stopPropagation(); void setLabel(it.messageId, l.label, it.leadName); }}
                    >
                      <kbd>{l.key}</kbd> {l.name}
                    </button>
                  ))}
                </span>
              </div>
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
