/** A note: its author may edit or delete it; anyone else reads it. */
import { useState } from 'react';
import type { OpOutput } from '../../../../shared/ops/index.ts';
import { ErrorText } from '../../components/ErrorText.tsx';
import { dateTime } from '../../lib/format.ts';
import { run, useAction } from '../../lib/ops.ts';
import { useApp } from '../../state/app-store.ts';

type Note = OpOutput<'leadActivities.create'>;

export function NoteItem({ note, authorName }: { note: Note; authorName: string }) {
  const me = useApp((s) => (s.session?.state === 'open' ? s.session.member.id : ''));
  const mine = note.userId === me;
  const [draft, setDraft] = useState<string | null>(null);
  const action = useAction();
  const edited = note.updatedAt !== note.createdAt;
  return (
    <div className="item note" data-kind="note" data-note-id={note.id}>
      <div className="meta">
        <span className="kind">Note</span>
        <span>{mine ? 'You' : authorName}</span>
        <span>{dateTime(note.createdAt)}{edited ? ' · edited' : ''}</span>
      </div>
      {draft === null ? (
        <div className="content">{note.content}</div>
      ) : (
        <textarea rows={3} value={draft} onChange={(e) => setDraft(e.target.value)} aria-label="Edit note" autoFocus />
      )}
      <div className="actions">
        {draft === null ? (
          <>
            <button className="btn small" disabled={!mine} title={mine ? 'Edit this note' : `Only ${authorName}, who wrote it, can edit this note`} onClick={() => setDraft(note.content)}>Edit</button>
            {mine && (
              <button className="btn small danger" disabled={action.busy} onClick={() => { if (confirm('Delete this note? This cannot be undone.')) void action.act(() => run('leadActivities.delete', { activityId: note.id })); }}>
                Delete
              </button>
            )}
            {!mine && <span className="faint" style={{ fontSize: 11, alignSelf: 'center' }}>Only the author can edit</span>}
          </>
        ) : (
          <>
            <button className="btn small primary" disabled={action.busy} onClick={() => void action.act(async () => { await run('leadActivities.update', { activityId: note.id, content: draft }); setDraft(null); })}>Save</button>
            <button className="btn small" onClick={() => { setDraft(null); action.clear(); }}>Cancel</button>
          </>
        )}
      </div>
      <ErrorText error={action.error} />
    </div>
  );
}
