/** Draws the app into #root (loaded by main.tsx once the first screen's data is asked for). */
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import type { SessionInfo } from '../../../electron/bridge.ts';
import { App } from './App.tsx';

/** `session`: the answer to the session request main.tsx sent before this chunk loaded. */
export function mount(session: Promise<SessionInfo>): void {
  const root = document.getElementById('root');
  if (!root) throw new Error('The page has no #root element.');
  createRoot(root).render(
    <StrictMode>
      <App firstSession={session} />
    </StrictMode>,
  );
}
