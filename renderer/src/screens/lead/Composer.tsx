/** Add a note or a task to the lead's timeline. */
import { useState } from 'react';
import { ErrorText } from '../../components/ErrorText.tsx';
import { fromLocalInput } from '../../lib/format.ts';
import { run, useAction } from '../../lib/ops.ts';
import { useMembers } from '../../lib/workspace-data.ts';
import { useApp } from '../../state/app-store.ts';

export function Composer({ leadId }: { leadId: string }) {
  const [mode, setMode] = useState<'note' | 'task'>('note');
  const [text, setText] = useState('');
  const [due, setDue] = useState('');
  const me = useApp((s) => (s.session?.state === 'open' ? s.session.member.id : ''));
  const [assignee, setAssignee] = useState('');
  const { members } = useMembers();
  const action = useAction();

  async function submit() {
    const ok = await action.act(async () => {
      if (mode === 'note') await run('leadActivities.create', { leadId, content: text });
      else await run('leadActivities.taskCreate', { leadId, content: text, dueAt: fromLocalInput(due), assigneeId: assignee || me || undefined });
      return true;
    });
    if (ok) {
      setText('');
      setDue('');
    }
  }

  return (
    <form className="stack" onSubmit={(e) => { e.preventDefault(); void submit(); }} aria-label={mode === 'note' ? 'New note' : 'New task'}>
      <div className="tabs" role="tablist" style={{ margin: 0 }}>
        <button type="button" role="tab" aria-selected={mode === 'note'} onClick={() => setMode('note')}>Note</button>
        <button type="button" role="tab" aria-selected={mode === 'task'} onClick={() => setMode('task')}>Task</button>
      </div>
      <textarea
        rows={mode === 'note' ? 3 : 2}
        placeholder={mode === 'note' ? 'Write a note… (Ctrl+Enter to save)' : 'What needs doing?'}
        aria-label={mode === 'note' ? 'Note text' : 'Task text'}
        value={text}
        onChange={(e) => setText(e.target.value)}
        onKeyDown={(e) => {
          if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) void submit();
        }}
      />
      {mode === 'task' && (
        <div className="controls">
          <label className="field">
            <span>Due</span>
            <input className="input" type="datetime-local" value={due} onChange={(e) => setDue(e.target.value)} aria-label="Due date" />
          </label>
          <label className="field">
            <span>Assignee</span>
            <select value={assignee || me} onChange={(e) => setAssignee(e.target.value)} aria-label="Assignee">
              {members.map((m) => (
                <option key={m.id} value={m.id}>{m.id === me ? `${m.name} (me)` : m.name}</option>
              ))}
            </select>
          </label>
        </div>
      )}
      <div className="row">
        <div className="grow" />
        <button className="btn primary" type="submit" disabled={action.busy || !text.trim()}>{mode === 'note' ? 'Add note' : 'Create task'}</button>
      </div>
      <ErrorText error={action.error} />
    </form>
  );
}
