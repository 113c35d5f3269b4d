/**
 * Assembles the desktop backend with its real parts: the persistent local database (RxDB on the
 * SQLite storage), the demo workspace builder, replication to a sync server
 * (replication.ts) and the outreach runner. The Electron main process, the web host and the UI benchmark all start here.
 */
import { join } from 'node:path';
import { Backend } from './backend.ts';
import type { BackendOptions } from './backend.ts';
import { desktopSenderCredentials, fileCredentialStore } from './credentials.ts';
import type { CredentialStore } from './credentials.ts';
import { buildDemoWorkspace } from './demo-workspace.ts';
import { openLocalDatabase } from './local-db.ts';
import { startSync } from './replication.ts';
import { startWorkspaceRunner } from './runner-host.ts';
import { createSenderVerifier } from '../../channels/verify-sender.ts';
import { imapCredentialId } from '../../shared/ops/credentials.ts';
import type { OpenLocalDb } from './local-db-port.ts';
import { SessionManager } from './session.ts';
import type { SessionDeps } from './session.ts';

export type DesktopOptions = {
  dataDir: string;
  /** Where the sync server's key is kept (default: a private file in the data folder). */
  credentials?: CredentialStore;
  openDb?: OpenLocalDb;
  log?: (line: string) => void;
  /** Overrides for tests (clock, coalescing, a fake fetch, ...). */
  session?: Partial<SessionDeps>;
  backend?: Partial<Omit<BackendOptions, 'session'>>;
};

export async function createDesktopBackend(opts: DesktopOptions): Promise<Backend> {
  const log = opts.log ?? ((line: string) => console.error(line));
  const credentials = opts.credentials ?? fileCredentialStore(join(opts.dataDir, 'credentials.json'));
  // The sync server's key and the secrets of the senders this desktop runs share one store.
  const senderCredentials = desktopSenderCredentials(credentials);
  const session = new SessionManager({
    dataDir: opts.dataDir,
    openDb: opts.openDb ?? ((o) => openLocalDatabase(o)),
    credentials,
    buildDemo: () => buildDemoWorkspace({ now: new Date() }),
    startRunner: (args) => startWorkspaceRunner(args, { log, senderCredentials }),
    startSync: ({ db, serverUrl, apiKey }) => startSync({ db, serverUrl, apiKey, log }),
    log,
    ...opts.session,
  });
  // Mailboxes this desktop runs are checked from this computer with the secrets it keeps
  // (sdrProfiles.create, sdrProfiles.verify; DNS_SERVERS picks the DNS the domain checks ask).
  const senderVerifier = createSenderVerifier({
    hostedBy: 'desktop',
    smtpPasswordFor: (s) => senderCredentials.secretFor(s.workspaceId, s.id),
    imapPasswordFor: (s) => senderCredentials.secretFor(s.workspaceId, imapCredentialId(s.id)),
  });
  const backend = new Backend({ session, log, senderCredentials, senderVerifier, ...opts.backend });
  await session.restore();
  return backend;
}
