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
  // The text just saved, shown until the live note catches up (its updatedAt moves on), so the old
  // text never flashes back between Save and the next update of the list.
  const [saved, setSaved] = useState<{ content: string; over: string } | null>(null);
  const action = useAction();
  const shown = saved !== null && note.updatedAt === saved.over ? saved.content : note.content;
  const edited = note.updatedAt !== note.createdAt || (saved !== null && note.updatedAt === saved.over);
  return (
    <div className="item note" data-kind="note" data-note-id={note.id}>
      <div className="meta">
        <span className="kind">Note</span>
        <span>{mine ? 'You' : authorName}</span>
        <span>{dateTime(note.createdAt)}{edited ? ' · edited' : ''}</span>
      </div>
      {draft === null ? (
        <div className="content">{shown}</div>
      ) : (
        <textarea rows={3} value={draft} onChange={(e) => setDraft(e.target.value)} aria-label="Edit note" autoFocus />
      )}
      <div className="actions">
        {draft === null ? (
          <>
            <button className="btn small" disabled={!mine} title={mine ? 'Edit this note' : `Only ${authorName}, who wrote it, can edit this note`} onClick={() => setDraft(shown)}>Edit</button>
            {mine && (
              <button className="btn small danger" disabled={action.busy} onClick={() => { if (confirm('Delete this note? This cannot be undone.')) void action.act(() => run('leadActivities.delete', { activityId: note.id })); }}>
                Delete
              </button>
            )}
            {!mine && <span className="faint" style={{ fontSize: 11, alignSelf: 'center' }}>Only the author can edit</span>}
          </>
        ) : (
          <>
            <button className="btn small primary" disabled={action.busy} onClick={() => void action.act(async () => {
              const over = note.updatedAt;
              await run('leadActivities.update', { activityId: note.id, content: draft });
              setSaved({ content: draft, over });
              setDraft(null);
            })}>Save</button>
            <button className="btn small" onClick={() => { setDraft(null); action.clear(); }}>Cancel</button>
          </>
        )}
      </div>
      <ErrorText error={action.error} />
    </div>
  );
}
