/** Ctrl/Cmd+K: jump anywhere, run a command, or open a lead by typing part of its name. */
import { useEffect, useMemo, useState } from 'react';
import { bridge } from '../bridge/index.ts';
import { errorText, run } from '../lib/ops.ts';
import { useApp } from '../state/app-store.ts';

type Item = { id: string; group: string; label: string; hint?: string; perform: () => void };

export function CommandPalette() {
  const app = useApp();
  const [text, setText] = useState('');
  const [active, setActive] = useState(0);
  const [leads, setLeads] = useState<Item[]>([]);
  const [leadError, setLeadError] = useState<string | null>(null);
  const close = () => app.setPalette(false);

  const commands = useMemo<Item[]>(() => {
    const a = useApp.getState();
    const after = (fn: () => void) => () => {
      a.setPalette(false);
      fn();
    };
    return [
      { id: 'go-leads', group: 'Go to', label: 'Leads', hint: 'g l', perform: after(() => a.go('leads')) },
      { id: 'go-duplicates', group: 'Go to', label: 'Duplicates: merge leads of one person', hint: 'g d', perform: after(() => a.go('duplicates')) },
      { id: 'go-pipeline', group: 'Go to', label: 'Pipeline board', hint: 'g p', perform: after(() => a.go('pipeline')) },
      { id: 'go-tasks', group: 'Go to', label: 'Tasks', hint: 'g t', perform: after(() => a.go('tasks')) },
      { id: 'go-triage', group: 'Go to', label: 'Triage: catch-ups due', hint: 'g r', perform: after(() => a.go('triage')) },
      { id: 'go-campaigns', group: 'Go to', label: 'Campaigns', hint: 'g c', perform: after(() => a.go('campaigns')) },
      { id: 'go-senders', group: 'Go to', label: 'Senders', hint: 'g e', perform: after(() => a.go('senders')) },
      { id: 'go-social', group: 'Go to', label: 'People from a post (import commenters and reactors)', hint: 'g o', perform: after(() => a.go('social')) },
      { id: 'go-settings', group: 'Go to', label: 'Settings', hint: 'g s', perform: after(() => a.go('settings')) },
      { id: 'import', group: 'Commands', label: 'Import leads from a CSV file', perform: after(() => { a.go('leads'); a.setIntent('import-csv'); }) },
      { id: 'export', group: 'Commands', label: 'Export the current lead view as CSV', perform: after(() => { a.go('leads'); a.setIntent('export-csv'); }) },
      { id: 'clear-filters', group: 'Commands', label: 'Clear lead filters', perform: after(() => { a.setFilters({ query: '', campaignId: '', tagId: 'all', pipelineStage: '' }); a.go('leads'); }) },
      { id: 'help', group: 'Commands', label: 'Keyboard shortcuts', hint: '?', perform: after(() => a.setHelp(true)) },
      { id: 'close-ws', group: 'Commands', label: 'Close this workspace', perform: after(() => void bridge.session.close()) },
    ];
  }, []);

  useEffect(() => {
    const q = text.trim();
    if (q.length < 2) {
      setLeads([]);
      setLeadError(null);
      return;
    }
    let stale = false;
    const t = setTimeout(() => {
      run('campaigns.leads.search', { query: q, limit: 8 }).then(
        (r) => {
          if (stale) return;
          setLeadError(null);
          setLeads(r.leads.map((l) => ({
            id: `lead-${l.id}`, group: 'Leads', label: l.fullName || l.email || l.leadIdentifier, hint: [l.jobTitle, l.company].filter(Boolean).join(' · '),
            perform: () => {
              const a = useApp.getState();
              a.setPalette(false);
              a.go(a.screen, l.id);
            },
          })));
        },
        (e: unknown) => !stale && setLeadError(errorText(e)),
      );
    }, 120);
    return () => {
      stale = true;
      clearTimeout(t);
    };
  }, [text]);

  const q = text.trim().toLowerCase();
  const items = [...commands.filter((c) => !q || c.label.toLowerCase().includes(q)), ...leads];
  const current = Math.min(active, Math.max(0, items.length - 1));

  return (
    <div className="backdrop" onMouseDown={(e) => e.target === e.currentTarget && close()}>
      <div className="palette" role="dialog" aria-label="Command palette">
        <input
          autoFocus
          placeholder="Type a command or a lead's name…"
          value={text}
          onChange={(e) => { setText(e.target.value); setActive(0); }}
          onKeyDown={(e) => {
            if (e.key === 'Escape') close();
            else if (e.key === 'ArrowDown') { e.preventDefault(); setActive((current + 1) % Math.max(1, items.length)); }
            else if (e.key === 'ArrowUp') { e.preventDefault(); setActive((current - 1 + items.length) % Math.max(1, items.length)); }
            else if (e.key === 'Enter') items[current]?.perform();
          }}
          aria-label="Command or lead"
        />
        <ul role="listbox">
          {items.map((it, i) => (
            <li key={it.id} role="option" aria-selected={i === current} onMouseEnter={() => setActive(i)} onClick={() => it.perform()}>
              <span className="faint" style={{ width: 70, fontSize: 11 }}>{it.group}</span>
              <span>{it.label}</span>
              {it.hint && <span className="hint">{it.hint}</span>}
            </li>
          ))}
          {items.length === 0 && <li className="muted">Nothing matches “{text}”.</li>}
        </ul>
        {leadError && <div className="error-text" style={{ margin: 8 }}>{leadError}</div>}
      </div>
    </div>
  );
}
