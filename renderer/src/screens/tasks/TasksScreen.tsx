/** The task queue: mine, due today, overdue, and recently completed. */
import { useMemo, useState } from 'react';
import { ErrorText } from '../../components/ErrorText.tsx';
import { endOfToday } from '../../lib/format.ts';
import { useOp } from '../../lib/ops.ts';
import { useMembers } from '../../lib/workspace-data.ts';
import { useApp } from '../../state/app-store.ts';
import { TaskItem } from '../lead/TaskItem.tsx';

type Tab = 'mine' | 'today' | 'overdue' | 'completed';
const TABS: { id: Tab; label: string }[] = [
  { id: 'mine', label: 'My open tasks' },
  { id: 'today', label: 'Due today' },
  { id: 'overdue', label: 'Overdue' },
  { id: 'completed', label: 'Completed' },
];

/** Rounded to the minute so the subscription input (and thus the query) stays stable between renders. */
const minute = (d: Date) => new Date(Math.floor(d.getTime() / 60_000) * 60_000).toISOString();

export function TasksScreen() {
  const [tab, setTab] = useState<Tab>('mine');
  const openLead = useApp((s) => s.openLead);
  const { byId: members } = useMembers();
  const input = useMemo(() => {
    switch (tab) {
      case 'mine':
        return { status: 'open' as const, limit: 200 };
      case 'today':
        return { status: 'open' as const, dueBefore: endOfToday().toISOString(), limit: 200 };
      case 'overdue':
        return { status: 'open' as const, dueBefore: minute(new Date()), limit: 200 };
      case 'completed':
        return { status: 'completed' as const, limit: 200 };
    }
  }, [tab]);
  const live = useOp('leadActivities.myTasks', input);
  const startOfToday = new Date();
  startOfToday.setHours(0, 0, 0, 0);
  const tasks = (live.data?.tasks ?? []).filter((t) => tab !== 'today' || (t.dueAt !== null && new Date(t.dueAt) >= startOfToday));
  return (
    <>
      <div className="screen-header">
        <h1>Tasks</h1>
        <span className="sub">Assigned to you</span>
      </div>
      <div className="tabs" role="tablist">
        {TABS.map((t) => (
          <button key={t.id} role="tab" aria-selected={tab === t.id} onClick={() => setTab(t.id)}>{t.label}</button>
        ))}
      </div>
      <div className="screen-body">
        <ErrorText error={live.error?.message} />
        <div className="stack" data-testid="task-list">
          {tasks.map((t) => (
            <TaskItem
              key={t.id}
              task={t}
              creatorName={members.get(t.userId)?.name ?? 'Someone'}
              assigneeName={t.metadata.assigneeId ? (members.get(t.metadata.assigneeId)?.name ?? '') : ''}
              showLead={
                <div style={{ marginBottom: 2 }}>
                  <a href="#" onClick={(e) => { e.preventDefault(); openLead(t.lead.id); }}>{t.lead.fullName || 'Lead'}</a>
                  {t.lead.company && <span className="muted"> · {t.lead.company}</span>}
                </div>
              }
            />
          ))}
          {!live.loading && tasks.length === 0 && <div className="list list-empty">{tab === 'completed' ? 'No completed tasks yet.' : 'Nothing here. Nice work.'}</div>}
          {live.data?.nextCursor && <span className="muted">Showing the first 200.</span>}
        </div>
      </div>
    </>
  );
}
