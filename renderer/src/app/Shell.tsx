/** The CRM layout: left navigation, top search, the current screen, the lead panel and overlays. */
import { useEffect, useState } from 'react';
import { backendConnection, bridge } from '../bridge/index.ts';
import { useApp } from '../state/app-store.ts';
import type { Screen } from '../state/app-store.ts';
import { LeadsScreen } from '../screens/leads/LeadsScreen.tsx';
import { DuplicatesScreen } from '../screens/duplicates/DuplicatesScreen.tsx';
import { LeadPanel } from '../screens/lead/LeadPanel.tsx';
import { PipelineBoard } from '../screens/pipeline/PipelineBoard.tsx';
import { TasksScreen } from '../screens/tasks/TasksScreen.tsx';
import { InboxScreen } from '../screens/inbox/InboxScreen.tsx';
import { TriageScreen } from '../screens/triage/TriageScreen.tsx';
import { SettingsScreen } from '../screens/settings/SettingsScreen.tsx';
import { CampaignsScreen } from '../screens/campaigns/CampaignsScreen.tsx';
import { SendersScreen } from '../screens/senders/SendersScreen.tsx';
import { SocialScreen } from '../screens/social/SocialScreen.tsx';
import { CommandPalette } from './CommandPalette.tsx';
import { Nav } from './Nav.tsx';
import { ShortcutsHelp } from './ShortcutsHelp.tsx';
import { Toasts } from './Toasts.tsx';
import { TopBar } from './TopBar.tsx';
import { useShortcuts } from './shortcuts.ts';

const SCREEN_VIEWS: Record<Screen, () => React.JSX.Element> = {
  leads: LeadsScreen,
  duplicates: DuplicatesScreen,
  pipeline: PipelineBoard,
  inbox: InboxScreen,
  tasks: TasksScreen,
  triage: TriageScreen,
  campaigns: CampaignsScreen,
  senders: SendersScreen,
  social: SocialScreen,
  settings: SettingsScreen,
};

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
  const View = SCREEN_VIEWS[screen];
  return (
    <div className="app">
      <Nav />
      <TopBar />
      <main className="main">
        <div className="screen">
          {conn !== 'open' && <div className="banner" role="status">The connection to the app backend dropped; reconnecting… Changes you make now wait until it is back.</div>}
          <View />
        </div>
        {leadId && <LeadPanel leadId={leadId} overlay={screen !== 'leads'} />}
      </main>
      {paletteOpen && <CommandPalette />}
      {helpOpen && <ShortcutsHelp />}
      <Toasts />
    </div>
  );
}
