/** A task with the actions its rules allow: anyone completes an open task; its creator edits,
 * cancels, reopens or deletes it. */
import { useState } from 'react';
import type { OpOutput } from '../../../../shared/ops/index.ts';
import { ErrorText } from '../../components/ErrorText.tsx';
import { dateTime, fromLocalInput, toLocalInput } from '../../lib/format.ts';
import { run, useAction } from '../../lib/ops.ts';
import { useMembers } from '../../lib/workspace-data.ts';
import { useApp } from '../../state/app-store.ts';

type Task = OpOutput<'leadActivities.taskCreate'>;

export function dueClass(dueAt: string | null, open: boolean): string {
  if (!dueAt || !open) return 'due';
  const t = new Date(dueAt).getTime();
  const end = new Date();
  end.setHours(23, 59, 59, 999);
  return t < Date.now() ? 'due overdue' : t <= end.getTime() ? 'due today' : 'due';
}

export function TaskItem({ task, creatorName, assigneeName, showLead }: { task: Task; creatorName: string; assigneeName: string; showLead?: React.ReactNode }) {
  const me = useApp((s) => (s.session?.state === 'open' ? s.session.member.id : ''));
  const { members } = useMembers();
  const creator = task.userId === me;
  const status = task.metadata.taskStatus ?? 'open';
  const open = status === 'open';
  const action = useAction();
  const [edit, setEdit] = useState<{ content: string; due: string; assignee: string } | null>(null);

  const setStatus = (s: 'completed' | 'cancelled' | 'open') => void action.act(() => run('leadActivities.taskSetStatus', { activityId: task.id, status: s }));

  async function save() {
    if (!edit) return;
    // Send only what changed: the operation refuses an edit that changes nothing.
    const dueAt = fromLocalInput(edit.due);
    const input = {
      activityId: task.id,
      ...(edit.content !== task.content ? { content: edit.content } : {}),
      ...(dueAt !== task.dueAt ? { dueAt } : {}),
      ...(edit.assignee !== (task.metadata.assigneeId ?? '') ? { assigneeId: edit.assignee } : {}),
    };
    await action.act(async () => {
      await run('leadActivities.taskUpdate', input);
      setEdit(null);
    });
  }

  return (
    <div className={`item task${open ? '' : ' done'}`} data-kind="task" data-task-id={task.id} data-status={status}>
      <div className="meta">
        <span className="kind">Task</span>
        <span className={`task-status ${status}`}>{status}</span>
        {task.dueAt && <span className={dueClass(task.dueAt, open)}>due {dateTime(task.dueAt)}</span>}
        <span>for {task.metadata.assigneeId === me ? 'you' : assigneeName || 'someone'}</span>
        <span>by {creator ? 'you' : creatorName}</span>
      </div>
      {showLead}
      {edit === null ? (
        <div className="content">{task.content}</div>
      ) : (
        <div className="stack">
          <textarea rows={2} value={edit.content} onChange={(e) => setEdit({ ...edit, content: e.target.value })} aria-label="Task text" />
          <div className="controls">
            <input className="input" type="datetime-local" value={edit.due} onChange={(e) => setEdit({ ...edit, due: e.target.value })} aria-label="Due date" />
            <select value={edit.assignee} onChange={(e) => setEdit({ ...edit, assignee: e.target.value })} aria-label="Assignee">
              {members.map((m) => (
                <option key={m.id} value={m.id}>{m.name}</option>
              ))}
            </select>
          </div>
        </div>
      )}
      <div className="actions">
        {edit ? (
          <>
            <button className="btn small primary" disabled={action.busy} onClick={() => void save()}>Save</button>
            <button className="btn small" onClick={() => { setEdit(null); action.clear(); }}>Cancel</button>
          </>
        ) : (
          <>
            {open && <button className="btn small" disabled={action.busy} onClick={() => setStatus('completed')}>Complete</button>}
            {open && creator && <button className="btn small" onClick={() => setEdit({ content: task.content, due: toLocalInput(task.dueAt), assignee: task.metadata.assigneeId ?? me })}>Edit</button>}
            {open && creator && <button className="btn small" disabled={action.busy} onClick={() => setStatus('cancelled')}>Cancel task</button>}
            {!open && creator && <button className="btn small" disabled={action.busy} onClick={() => setStatus('open')}>Reopen</button>}
            {creator && (
              <button className="btn small danger" disabled={action.busy} onClick={() => { if (confirm('Delete this task? Its history is lost.')) void action.act(() => run('leadActivities.taskDelete', { activityId: task.id })); }}>
                Delete
              </button>
            )}
            {!creator && <span className="faint" style={{ fontSize: 11, alignSelf: 'center' }}>Created by {creatorName}: only they can edit, cancel, reopen or delete it</span>}
          </>
        )}
      </div>
      <ErrorText error={action.error} />
    </div>
  );
}
