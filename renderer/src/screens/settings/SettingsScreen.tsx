/** Settings: the connection, sync status with refusals, members, API keys and integrations (webhooks). */
import { ApiKeysSection } from './ApiKeysSection.tsx';
import { ConnectionSection } from './ConnectionSection.tsx';
import { IntegrationsSection } from './IntegrationsSection.tsx';
import { MembersSection } from './MembersSection.tsx';
import { SyncSection } from './SyncSection.tsx';

export function SettingsScreen() {
  return (
    <>
      <div className="screen-header">
        <h1>Settings</h1>
      </div>
      <div className="screen-body">
        <div className="settings">
          <ConnectionSection />
          <SyncSection />
          <MembersSection />
          <ApiKeysSection />
          <IntegrationsSection />
        </div>
      </div>
    </>
  );
}
