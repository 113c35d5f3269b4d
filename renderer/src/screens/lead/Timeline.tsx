/** Notes, tasks, system events and messages of a lead, newest first, live. */
import { ErrorText } from '../../components/ErrorText.tsx';
import { dateTime } from '../../lib/format.ts';
import { useState } from 'react';
import { errorText, run, useOp } from '../../lib/ops.ts';
import { useMembers } from '../../lib/workspace-data.ts';
import { NoteItem } from './NoteItem.tsx';
import { TaskItem } from './TaskItem.tsx';

export function Timeline({ leadId }: { leadId: string }) {
  const activities = useOp('leadActivities.list', { leadId, limit: 200 });
  const conversation = useOp('campaigns.leads.getConversation', { leadId });
  const { byId: members } = useMembers();
  const name = (id: string) => members.get(id)?.name ?? 'Someone';

  type Entry = { at: string; key: string; node: React.ReactNode };
  const entries: Entry[] = [];
  for (const a of activities.data?.activities ?? []) {
    if (a.type === 'NOTE') entries.push({ at: a.createdAt, key: a.id, node: <NoteItem note={a} authorName={name(a.userId)} /> });
    else if (a.type === 'TASK') entries.push({ at: a.createdAt, key: a.id, node: <TaskItem task={a} creatorName={name(a.userId)} assigneeName={a.metadata.assigneeId ? name(a.metadata.assigneeId) : ''} /> });
    else
      entries.push({
        at: a.createdAt, key: a.id,
        node: (
          <div className="item event" data-kind="event">
            <div className="meta"><span className="kind">{(a.metadata.eventKind ?? 'event').replace(/_/g, ' ')}</span><span>{dateTime(a.createdAt)}</span></div>
            <div className="content">{a.content}</div>
          </div>
        ),
      });
  }
  for (const m of conversation.data?.messages ?? []) {
    entries.push({
      at: m.sentAt ?? m.createdAt, key: m.id,
      node: (
        <div className={`item message ${m.direction}`} data-kind="message">
          <div className="meta">
            <span className="kind">{m.direction === 'in' ? 'Reply' : m.kind.replace(/_/g, ' ')}</span>
            <span>{dateTime(m.sentAt ?? m.createdAt)}</span>
            {m.direction === 'out' && <span>{m.status}</span>}
          </div>
          {m.subject && <div><strong>{m.subject}</strong></div>}
          <div className="content">{m.text || <span className="faint">(no text)</span>}</div>
          {m.error && <ErrorText error={m.error} />}
          {m.status === 'unknown' && <SendAgain messageId={m.id} />}
        </div>
      ),
    });
  }
  entries.sort((a, b) => (a.at < b.at ? 1 : a.at > b.at ? -1 : 0));
  return (
    <div className="timeline" data-testid="timeline">
      <ErrorText error={activities.error?.message} />
      <ErrorText error={conversation.error?.message} />
      {entries.length === 0 && !activities.loading && <span className="muted">Nothing here yet.</span>}
      {entries.map((e) => (
        <div key={e.key}>{e.node}</div>
      ))}
    </div>
  );
}

/** "Delivery unknown": a send interrupted by a crash that could not be confirmed; one click sends
 * it again (campaigns.leads.resendUnknown). */
function SendAgain({ messageId }: { messageId: string }) {
  const [state, setState] = useState<{ busy: boolean; error: string | null; done: boolean }>({ busy: false, error: null, done: false });
  if (state.done) return <span className="muted">Will be sent again shortly.</span>;
  return (
    <div className="row">
      <button
        type="button"
        className="small"
        data-testid="send-again"
        disabled={state.busy}
        onClick={() => {
          setState({ busy: true, error: null, done: false });
          run('campaigns.leads.resendUnknown', { messageId })
            .then(() => setState({ busy: false, error: null, done: true }))
            .catch((e: unknown) => setState({ busy: false, error: errorText(e), done: false }));
        }}
      >
        Send again
      </button>
      <ErrorText error={state.error ?? undefined} />
    </div>
  );
}
