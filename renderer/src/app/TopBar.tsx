/** The top bar: lead search (focus with /), sync status, the command palette. */
import { useEffect, useRef, useState } from 'react';
import { useApp } from '../state/app-store.ts';
import { SyncIndicator } from './SyncIndicator.tsx';

export function TopBar() {
  const query = useApp((s) => s.filters.query);
  const setFilters = useApp((s) => s.setFilters);
  const go = useApp((s) => s.go);
  const screen = useApp((s) => s.screen);
  const setPalette = useApp((s) => s.setPalette);
  const [text, setText] = useState(query);
  const timer = useRef<ReturnType<typeof setTimeout> | null>(null);

  useEffect(() => setText(query), [query]);

  function change(value: string) {
    setText(value);
    if (timer.current) clearTimeout(timer.current);
    // Searching 100k leads on every keystroke is wasted work: wait for a pause in typing.
    timer.current = setTimeout(() => {
      setFilters({ query: value });
      if (screen !== 'leads') go('leads');
    }, 200);
  }

  return (
    <header className="topbar">
      <div className="search">
        <input
          id="global-search"
          type="search"
          placeholder="Search leads by name, email, company, phone or profile URL   ( / )"
          aria-label="Search leads"
          value={text}
          onChange={(e) => change(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === 'Enter') {
              if (timer.current) clearTimeout(timer.current);
              setFilters({ query: text });
              go('leads');
            }
            if (e.key === 'Escape') (e.target as HTMLInputElement).blur();
          }}
        />
      </div>
      <div className="right">
        <SyncIndicator />
        <button className="btn small" onClick={() => setPalette(true)} title="Command palette">
          Commands <kbd>Ctrl K</kbd>
        </button>
      </div>
    </header>
  );
}
