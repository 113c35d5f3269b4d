import { useEffect, useMemo, useState } from 'react';
import { bridge } from '../bridge/index.ts';
import { remindDueTasks } from '../screens/tasks/reminders.ts';
import { noticeDisconnectedSenders } from '../screens/senders/disconnect-notices.ts';
import { useOp } from '../lib/ops.ts';
import { useApp } from '../state/app-store.ts';
import type { Screen } from '../state/app-store.ts';
import { NAV_ITEMS as ITEMS } from './nav-items.ts';

export function Nav() {
  const screen = useApp((s) => s.screen);
  const go = useApp((s) => s.go);
  const session = useApp((s) => s.session);
  const open = session?.state === 'open';
  // Replies waiting in the inbox, and my open tasks already due (the query is per minute).
  const inbox = useOp('inbox.counts', open ? {} : null);
  const [minute, setMinute] = useState(() => Math.floor(Date.now() / 60_000));
  useEffect(() => {
    const timer = setInterval(() => setMinute(Math.floor(Date.now() / 60_000)), 15_000);
    return () => clearInterval(timer);
  }, []);
  const dueInput = useMemo(() => ({ status: 'open' as const, dueBefore: new Date((minute + 1) * 60_000).toISOString(), limit: 200 }), [minute]);
  const due = useOp('leadActivities.myTasks', open ? dueInput : null);
  // A task falling due raises a desktop notification, once per task and due time; a click on it
  // comes back as the bridge's open-lead command (Shell.tsx).
  useEffect(() => {
    if (due.data) void remindDueTasks(due.data.tasks, Date.now(), (notice) => bridge.notify(notice));
  }, [due.data]);
  // A sender of mine disconnected (a revoked sign-in, a refused login): told once per disconnection.
  const senders = useOp('sdrProfiles.list', open ? {} : null);
  const memberId = open ? session.member.id : null;
  useEffect(() => {
    if (senders.data && memberId) void noticeDisconnectedSenders(senders.data.sdrProfiles, memberId, (notice) => bridge.notify(notice));
  }, [senders.data, memberId]);
  const counts: Partial<Record<Screen, number>> = { inbox: inbox.data?.open ?? 0, tasks: due.data?.tasks.length ?? 0 };
  return (
    <nav className="nav" aria-label="Main">
      <div className="brand"><span className="logo" aria-hidden="true" />Outreach CRM</div>
      {ITEMS.map((it) => (
        <button key={it.screen} aria-current={screen === it.screen ? 'page' : undefined} onClick={() => go(it.screen)}>
          <span>{it.label}</span>
          {(counts[it.screen] ?? 0) > 0 && (
            <span className="badge" style={{ marginLeft: 'auto', marginRight: 6, padding: '0 6px', borderRadius: 9, background: '#2563eb', color: '#fff', fontSize: 11, fontWeight: 600 }} data-testid={`nav-count-${it.screen}`} aria-label={`${counts[it.screen] ?? 0} waiting`}>{counts[it.screen]}</span>
          )}
          <kbd>{it.keys}</kbd>
        </button>
      ))}
      <div className="spacer" />
      {session?.state === 'open' && (
        <div className="workspace">
          <strong>{session.workspaceName}</strong>
          {session.member.name} · {session.member.role}
          <div>{session.kind === 'demo' ? 'Local demo workspace' : new URL(session.serverUrl ?? 'http://x').host}</div>
        </div>
      )}
    </nav>
  );
}
