/** The window: the first-run choice until a workspace is open, then the CRM. */
import { useEffect, useLayoutEffect } from 'react';
import type { SessionInfo } from '../../../electron/bridge.ts';
import { backendConnection, bridge } from '../bridge/index.ts';
import { useApp } from '../state/app-store.ts';
import { dropFirstRows } from '../screens/leads/first-rows.ts';
import { FirstRun } from '../screens/first-run/FirstRun.tsx';
import { Opening } from '../screens/first-run/Opening.tsx';
import { Shell } from './Shell.tsx';

/** `firstSession`: a session request already on its way (main.tsx), used by the first load. */
export function App({ firstSession }: { firstSession?: Promise<SessionInfo> }) {
  const session = useApp((s) => s.session);
  const setSession = useApp((s) => s.setSession);
  const setSync = useApp((s) => s.setSync);

  useEffect(() => {
    const stopSession = bridge.session.subscribe(setSession);
    const stopSync = bridge.syncStatus.subscribe(setSync);
    let cancelled = false;
    let first = firstSession;
    const load = () => {
      const asked = first ?? bridge.session.get();
      first = undefined;
      return asked.then(
        (s) => !cancelled && setSession(s),
        () => !cancelled && setTimeout(load, 500),
      );
    };
    void load();
    // After the web host restarts, the open workspace may have changed: ask again.
    const stopConnection = backendConnection.subscribe((state) => {
      if (state === 'open') void load();
    });
    return () => {
      cancelled = true;
      stopSession();
      stopSync();
      stopConnection();
    };
  }, [setSession, setSync, firstSession]);

  // No workspace open (any more): the leads table's first rows drawn before React loaded go.
  const open = session?.state === 'open';
  useLayoutEffect(() => {
    if (session && !open) dropFirstRows();
  }, [session, open]);

  if (!session) return <div className="first-run"><p className="muted">Opening…</p></div>;
  if (session.state === 'none') return <FirstRun dataDir={session.dataDir} />;
  if (session.state === 'opening') return <Opening session={session} />;
  return <Shell key={session.workspaceId} />;
}
