/** A lead's message thread(s) and a composer for a direct message. A sent message cannot be taken
 * back, so sending asks for confirmation first. A reply goes into the chosen existing thread (chatId),
 * through the sender already on that conversation. Mounted by the lead panel. */
import { useEffect, useRef, useState } from 'react';
import type { OpOutput } from '../../../../shared/ops/index.ts';
import { Dialog } from '../../components/Dialog.tsx';
import { ErrorText } from '../../components/ErrorText.tsx';
import { dateTime } from '../../lib/format.ts';
import { errorText, run, useOp } from '../../lib/ops.ts';
import { useSenders } from '../../lib/workspace-data.ts';
import { useApp } from '../../state/app-store.ts';
import './conversation.css';

type Conversation = OpOutput<'campaigns.leads.getConversation'>;
type Message = Conversation['messages'][number];

const KIND_WORDS: Record<string, string> = {
  message: 'Message',
  inmail: 'InMail',
  email: 'Email',
  connection_request: 'Connection request',
  voice_note: 'Voice note',
  reaction: 'Reaction',
  profile_visit: 'Profile visit',
};

const STATUS_WORDS: Record<string, string> = { queued: 'Queued', sent: 'Sent', failed: 'Failed', received: 'Received' };

export function Conversation({ leadId, leadName }: { leadId: string; leadName: string }) {
  const live = useOp('campaigns.leads.getConversation', { leadId });
  const { senders } = useSenders();
  const toast = useApp((s) => s.toast);
  const [chatId, setChatId] = useState<string | null>(null);
  const [text, setText] = useState('');
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const end = useRef<HTMLDivElement>(null);
  const chats = live.data?.chats ?? [];
  // The newest thread by default: that is where a message without chatId goes too.
  const newest = [...chats].sort((a, b) => (a.lastMessageAt < b.lastMessageAt ? 1 : -1))[0];
  const current = chats.find((c) => c.chatId === chatId) ?? newest;
  const messages = (live.data?.messages ?? []).filter((m) => !current || m.chatId === current.chatId);
  const senderName = (id: string) => senders.find((s) => s.id === id)?.name ?? 'a removed sender';
  const conversational = messages.filter((m) => m.kind !== 'profile_visit' && m.kind !== 'reaction');

  useEffect(() => {
    end.current?.scrollIntoView({ block: 'nearest' });
  }, [conversational.length]);

  async function send() {
    setBusy(true);
    setError(null);
    try {
      const r = await run('campaigns.leads.sendMessage', { leadId, text, ...(current ? { chatId: current.chatId } : {}) });
      setText('');
      setConfirming(false);
      setChatId(r.chatId);
      toast(r.status === 'sent' ? `Sent to ${leadName}.` : `Queued for ${leadName}: ${senderName(r.sdrProfileId)} sends it on the runner's next pass.`);
    } catch (e) {
      setError(errorText(e));
      setConfirming(false);
    } finally {
      setBusy(false);
    }
  }

  return (
    <section className="section conversation" aria-label="Conversation" data-testid="conversation">
      <div className="row">
        <h3 className="grow">Conversation</h3>
        {chats.length > 1 && (
          <select value={current?.chatId ?? ''} onChange={(e) => setChatId(e.target.value)} aria-label="Thread">
            {chats.map((c, i) => (
              <option key={c.chatId} value={c.chatId}>Thread {i + 1} · {senderName(c.sdrProfileId)} · {dateTime(c.lastMessageAt)}</option>
            ))}
          </select>
        )}
      </div>
      <ErrorText error={live.error?.message} />
      <div className="thread" data-testid="thread" data-loaded={live.data ? 'yes' : 'no'}>
        {live.data && conversational.length === 0 && <span className="muted">No messages with {leadName} yet.</span>}
        {conversational.map((m) => (
          <Bubble key={m.id} m={m} who={m.direction === 'in' ? leadName : senderName(m.sdrProfileId)} />
        ))}
        <div ref={end} />
      </div>
      <form className="stack composer" onSubmit={(e) => { e.preventDefault(); if (text.trim()) setConfirming(true); }}>
        <textarea
          rows={3}
          value={text}
          onChange={(e) => setText(e.target.value)}
          placeholder={current ? `Reply to ${leadName} as ${senderName(current.sdrProfileId)}…` : `Write to ${leadName}…`}
          aria-label="Direct message"
          onKeyDown={(e) => {
            if (e.key === 'Enter' && (e.ctrlKey || e.metaKey) && text.trim()) setConfirming(true);
          }}
        />
        <div className="row">
          <span className="faint grow">{current ? `Replies in this thread through ${senderName(current.sdrProfileId)}.` : 'Goes through the sender of the lead’s campaign.'}</span>
          <button className="btn primary" type="submit" disabled={!text.trim() || busy}>Send…</button>
        </div>
        <div data-testid="send-error"><ErrorText error={error} /></div>
      </form>
      {confirming && (
        <Dialog
          title={`Send this message to ${leadName}?`}
          onClose={() => setConfirming(false)}
          footer={
            <>
              <button className="btn" onClick={() => setConfirming(false)}>Keep editing</button>
              <button className="btn primary" disabled={busy} onClick={() => void send()}>{busy ? 'Sending…' : 'Send message'}</button>
            </>
          }
        >
          <div className="notice warn">A message cannot be taken back once it is delivered.</div>
          <blockquote className="preview">{text}</blockquote>
          <p className="muted">
            {current ? `It goes into the existing thread, from ${senderName(current.sdrProfileId)}.` : 'It starts the conversation from the sender assigned to this lead in its campaign.'} Sending also clears the lead's catch-up date.
          </p>
        </Dialog>
      )}
    </section>
  );
}

function Bubble({ m, who }: { m: Message; who: string }) {
  return (
    <div className={`bubble ${m.direction}${m.status === 'failed' ? ' failed' : ''}`} data-direction={m.direction} data-status={m.status}>
      <div className="bubble-meta">
        <strong>{who}</strong>
        {m.kind !== 'message' && <span>{KIND_WORDS[m.kind] ?? m.kind}</span>}
        <span>{dateTime(m.sentAt ?? m.createdAt)}</span>
        {m.direction === 'out' && <span className={`delivery ${m.status}`}>{STATUS_WORDS[m.status] ?? m.status}</span>}
      </div>
      {m.subject && <div className="bubble-subject">{m.subject}</div>}
      <div className="bubble-text">{m.text || <span className="faint">(no text)</span>}</div>
      {m.error && <ErrorText error={m.error} />}
    </div>
  );
}
