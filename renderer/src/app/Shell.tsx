/** The CRM layout: left navigation, top search, the current screen, the lead panel and overlays. */
import { Suspense, useEffect, useLayoutEffect, useState } from 'react';
import { backendConnection, bridge } from '../bridge/index.ts';
import { useApp } from '../state/app-store.ts';
import { Nav } from './Nav.tsx';
import { firstScreenShown } from './first-screen.ts';
import { CommandPalette, LeadPanel, SCREEN_VIEWS, ShortcutsHelp } from './screens.ts';
import { Toasts } from './Toasts.tsx';
import { TopBar } from './TopBar.tsx';
import { useShortcuts } from './shortcuts.ts';
import { dropFirstRows } from '../screens/leads/first-rows.ts';

export function Shell() {
  const screen = useApp((s) => s.screen);
  const leadId = useApp((s) => s.leadId);
  const paletteOpen = useApp((s) => s.paletteOpen);
  const helpOpen = useApp((s) => s.helpOpen);
  const [conn, setConn] = useState(backendConnection.get());
  useEffect(() => backendConnection.subscribe(setConn), []);
  // The desktop shell's menu, and a click on a task reminder (in a browser, only the latter).
  useEffect(
    () =>
      bridge.commands.subscribe((c) => {
        const app = useApp.getState();
        if (c.kind === 'go') app.go(c.screen);
        else if (c.kind === 'palette') app.setPalette(true);
        else if (c.kind === 'shortcuts') app.setHelp(true);
        else if (c.kind === 'open-lead') app.openLead(c.leadId);
        else {
          app.go('leads');
          app.setIntent(c.kind);
        }
      }),
    [],
  );
  useShortcuts();
  // The leads table says when its first rows are drawn; another screen has no such signal.
  useEffect(() => {
    if (screen !== 'leads') firstScreenShown();
  }, [screen]);
  // The leads table's first rows drawn before React loaded are not this screen's.
  useLayoutEffect(() => {
    if (screen !== 'leads') dropFirstRows();
  }, [screen]);
  const View = SCREEN_VIEWS[screen];
  return (
    <div className="app">
      <Nav />
      <TopBar />
      <main className="main">
        <div className="screen">
          {conn !== 'open' && <div className="banner" role="status">The connection to the app backend dropped; reconnecting… Changes you make now wait until it is back.</div>}
          <Suspense fallback={<p className="muted" role="status">Loading…</p>}>
            <View />
          </Suspense>
        </div>
        <Suspense fallback={null}>{leadId && <LeadPanel leadId={leadId} overlay={screen !== 'leads'} />}</Suspense>
      </main>
      <Suspense fallback={null}>
        {paletteOpen && <CommandPalette />}
        {helpOpen && <ShortcutsHelp />}
      </Suspense>
      <Toasts />
    </div>
  );
}
