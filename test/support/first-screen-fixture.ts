/**
 * A built renderer's page and a desktop backend with a workspace open, for the tests of the page
 * that carries the leads table's first screen, as the web host serves it (first-screen-html.test.ts)
 * and as the desktop window's app: scheme does (app-protocol.test.ts): a page template in the
 * build's form (its CSP meta tag, module script, style sheet link and React's empty root), and a
 * demo workspace with a lead and a tag whose names are markup.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SessionInfo, SyncStatus } from '../../electron/bridge.ts';
import { Backend } from '../../electron/backend/backend.ts';
import { fileCredentialStore } from '../../electron/backend/credentials.ts';
import { openMemoryLocalDb } from '../../electron/backend/local-db-port.ts';
import { SessionManager } from '../../electron/backend/session.ts';
import type { DemoWorkspace } from '../../electron/backend/session.ts';
import type { FirstScreenSource } from '../../electron/first-screen-html.ts';
import { newLead } from '../../shared/model/factories.ts';
import { workspaceCreation } from '../../shared/workspace-setup.ts';
import { sequentialIds } from './harness.ts';

const NOW = '2026-11-16T10:00:00.000Z';
export const EVIL = '<img src=x onerror="alert(1)">';
const META_CSP = `<meta http-equiv="Content-Security-Policy" content="default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:" />`;
export const LINK = '<link rel="stylesheet" crossorigin href="./assets/app-1.css">';
export const TEMPLATE = `<!doctype html><html><head>${META_CSP}<title>app</title><script type="module" src="./assets/app.js"></script>${LINK}</head><body><div id="root"></div></body></html>`;

/** A workspace with a lead whose name and company are markup, and a harmless one. */
function workspace(): DemoWorkspace {
  const ids = sequentialIds(7);
  const ws = workspaceCreation(ids, NOW, { name: 'Acme & <Co>', owner: { name: 'Olga "O" Owner', email: 'o@t.test' }, subscriptionStatus: 'active' });
  const leads = [
    newLead({ id: ids.uuid(), workspaceId: ws.workspaceId, now: '2026-11-10T00:00:00.000Z' }, ws.leadGroupId, { firstName: 'Ann', lastName: 'Lee', email: 'ann@x.test' }),
    newLead({ id: ids.uuid(), workspaceId: ws.workspaceId, now: '2026-11-11T00:00:00.000Z' }, ws.leadGroupId, { firstName: EVIL, lastName: '</style><script>alert(2)</script>', company: '"><b>bold</b>', email: 'evil@x.test' }),
  ];
  return {
    workspaceId: ws.workspaceId, workspaceName: 'Acme & <Co>', member: { id: ws.ownerId, name: 'Olga "O" Owner', role: 'owner' },
    writes: [...ws.writes, ...leads.map((l) => ({ collection: 'leads' as const, id: l.id, before: null, after: l }))],
  };
}

export type FirstScreenFixture = {
  /** A temporary folder holding `dist`. */
  dir: string;
  /** The renderer's build: index.html (TEMPLATE), assets/app.js and assets/app-1.css. */
  dist: string;
  /** The backend, with the workspace open and a tag named `<i>hot</i>`. */
  backend: Backend;
};

export async function firstScreenFixture(): Promise<FirstScreenFixture> {
  const dir = mkdtempSync(join(tmpdir(), 'crm-first-screen-'));
  const dist = join(dir, 'dist');
  mkdirSync(join(dist, 'assets'), { recursive: true });
  writeFileSync(join(dist, 'index.html'), TEMPLATE);
  writeFileSync(join(dist, 'assets', 'app.js'), 'console.log(1)');
  writeFileSync(join(dist, 'assets', 'app-1.css'), '.x { color: red }');
  const session = new SessionManager({
    dataDir: dir,
    openDb: ({ workspaceId }) => openMemoryLocalDb({ workspaceId }),
    credentials: fileCredentialStore(join(dir, 'credentials.json')),
    buildDemo: workspace,
  });
  const backend = new Backend({ session });
  await backend.session.openDemo();
  const tag = await backend.call('tags.create', { name: '<i>hot</i>', color: '#ff0000' });
  if (!tag.ok) throw new Error(tag.error.message);
  return { dir, dist, backend };
}

/** A source with an open session that answers through `call` (failing, throwing, slow ones). */
export function sourceCalling(call: FirstScreenSource['call']): FirstScreenSource {
  const session: SessionInfo = { state: 'open', kind: 'demo', dataDir: '/tmp', workspaceId: 'w', workspaceName: 'W', member: { id: 'm', name: 'M', role: 'owner' }, serverUrl: null, apiKeyPrefix: null, runner: 'stopped' };
  const sync: SyncStatus = { mode: 'local', pending: 0, lastSyncedAt: null, refusals: [], error: null };
  return { call, session: { info: () => session, syncStatus: () => sync } };
}
