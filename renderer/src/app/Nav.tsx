import { useApp } from '../state/app-store.ts';
import type { Screen } from '../state/app-store.ts';

const ITEMS: { screen: Screen; label: string; keys: string }[] = [
  { screen: 'leads', label: 'Leads', keys: 'g l' },
  { screen: 'pipeline', label: 'Pipeline', keys: 'g p' },
  { screen: 'tasks', label: 'Tasks', keys: 'g t' },
  { screen: 'triage', label: 'Triage', keys: 'g r' },
  { screen: 'campaigns', label: 'Campaigns', keys: 'g c' },
  { screen: 'senders', label: 'Senders', keys: 'g e' },
  { screen: 'social', label: 'From a post', keys: 'g o' },
  { screen: 'settings', label: 'Settings', keys: 'g s' },
];

export function Nav() {
  const screen = useApp((s) => s.screen);
  const go = useApp((s) => s.go);
  const session = useApp((s) => s.session);
  return (
    <nav className="nav" aria-label="Main">
      <div className="brand"><span className="logo" aria-hidden="true" />Outreach CRM</div>
      {ITEMS.map((it) => (
        <button key={it.screen} aria-current={screen === it.screen ? 'page' : undefined} onClick={() => go(it.screen)}>
          <span>{it.label}</span>
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
