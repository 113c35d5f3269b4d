/**
 * Assembles the desktop backend with its real parts: the persistent local database (RxDB on the
 * SQLite storage), the demo workspace builder, replication to a sync server
 * (replication.ts) and the outreach runner. The Electron main process, the web host and the UI benchmark all start here.
 */
import { join } from 'node:path';
import { Backend } from './backend.ts';
import type { BackendOptions } from './backend.ts';
import { desktopSenderCredentials, fileCredentialStore } from './credentials.ts';
import type { CredentialStore, DesktopSenderCredentials } from './credentials.ts';
import type { SenderVerifier } from '../../shared/context.ts';
import { buildDemoWorkspace } from './demo-workspace.ts';
import { openLocalDatabase } from './local-db.ts';
import { startSync } from './replication.ts';
import { startWorkspaceRunner } from './runner-host.ts';
import { createOAuthTokens } from '../../channels/oauth-tokens.ts';
import { createSenderVerifier, oauthAuthFor } from '../../channels/verify-sender.ts';
import type { SenderVerifierOptions } from '../../channels/verify-sender.ts';
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

/**
 * Mailboxes this desktop runs are checked from this computer with the secrets it keeps
 * (sdrProfiles.create, sdrProfiles.verify, sdrProfiles.oauth.complete; DNS_SERVERS picks the DNS the
 * domain checks ask). One signed in with OAuth is checked with a fresh access token (XOAUTH2),
 * renewed as the runner renews it and written back to this computer's credential store.
 */
export function desktopSenderVerifier(senderCredentials: DesktopSenderCredentials, log: (line: string) => void, check: Pick<SenderVerifierOptions, 'resolve' | 'timeoutMs'> = {}): SenderVerifier {
  const checkTokens = createOAuthTokens({
    read: (s) => senderCredentials.secretFor(s.workspaceId, s.id),
    save: (s, secret) => senderCredentials.set(s.workspaceId, s.id, secret, { at: new Date().toISOString(), by: 'system' }),
    log,
  });
  return createSenderVerifier({
    hostedBy: 'desktop',
    smtpPasswordFor: (s) => senderCredentials.secretFor(s.workspaceId, s.id),
    imapPasswordFor: (s) => senderCredentials.secretFor(s.workspaceId, imapCredentialId(s.id)),
    authFor: oauthAuthFor(checkTokens),
    ...check,
  });
}

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
  const senderVerifier = desktopSenderVerifier(senderCredentials, log);
  const backend = new Backend({ session, log, senderCredentials, senderVerifier, ...opts.backend });
  await session.restore();
  return backend;
}
