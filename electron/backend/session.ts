/**
 * Which workspace this desktop has open (the local demo, or one connected to a sync server), as whom,
 * and where its data lives: `<dataDir>/session.json` remembers the choice across restarts, each
 * workspace keeps its local database under `<dataDir>/workspaces/<workspaceId>/`, and the server's
 * API key is kept by the CredentialStore (the OS keychain under Electron).
 */
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Actor } from '../../shared/context.ts';
import type { ChannelHost } from '../../shared/engine/channel.ts';
import { DomainError } from '../../shared/errors.ts';
import { ROLES } from '../../shared/model/index.ts';
import type { Role } from '../../shared/model/index.ts';
import type { AnyWrite } from '../../shared/store.ts';
import type { ConnectInput, SessionInfo, SyncStatus, WorkspaceKind } from '../bridge.ts';
import type { CredentialStore } from './credentials.ts';
import type { LocalDb, OpenLocalDb } from './local-db-port.ts';
import type { MigrationProgress } from './storage/sqlite/migrate.ts';
import { ServerClient } from './server-client.ts';

export { defaultDataDir } from './data-dir.ts';

type Saved = {
  kind: WorkspaceKind;
  workspaceId: string;
  workspaceName: string;
  member: { id: string; name: string; role: Role };
  serverUrl: string | null;
};

/** Keeps a workspace in step with its sync server; provided by electron/backend/replication.ts. */
export type SyncHandle = {
  status(): SyncStatus;
  onStatus(listener: (s: SyncStatus) => void): () => void;
  stop(): Promise<void>;
};
export type StartSync = (args: { db: LocalDb; dir: string; serverUrl: string; apiKey: string; actor: Actor }) => Promise<SyncHandle>;

/** Runs the workspace's outreach for the senders hosted here; its channels also serve operations
 * that need the network (reading a post's engagement). */
export type RunnerHandle = { channels: ChannelHost | null; stop(): Promise<void> };
export type StartRunner = (args: { db: LocalDb; actor: Actor; kind: WorkspaceKind }) => RunnerHandle | null;

export type DemoWorkspace = { workspaceId: string; workspaceName: string; member: { id: string; name: string; role: Role }; writes: AnyWrite[] };

export type SessionDeps = {
  dataDir: string;
  openDb: OpenLocalDb;
  credentials: CredentialStore;
  /** Builds every document of a new demo workspace. */
  buildDemo: () => DemoWorkspace | Promise<DemoWorkspace>;
  startSync?: StartSync;
  startRunner?: StartRunner;
  fetch?: typeof fetch;
  log?: (line: string) => void;
};

/** An open workspace: its database, the actor every operation runs as, and its background work. */
export type OpenWorkspace = {
  saved: Saved;
  db: LocalDb;
  actor: Actor;
  sync: SyncHandle | null;
  runner: RunnerHandle | null;
  apiKey: string | null;
};

const SEED_BATCH = 5000;

const LOCAL_STATUS: SyncStatus = { mode: 'local', pending: 0, lastSyncedAt: null, refusals: [], error: null };

async function readJson(file: string): Promise<unknown> {
  try {
    return JSON.parse(await readFile(file, 'utf8'));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
}

async function writeJsonAtomic(file: string, value: unknown): Promise<void> {
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, JSON.stringify(value, null, 2));
  await rename(tmp, file);
}

function isSaved(v: unknown): v is Saved {
  if (v === null || typeof v !== 'object') return false;
  const s = v as Partial<Saved>;
  return (
    (s.kind === 'demo' || s.kind === 'connected') && typeof s.workspaceId === 'string' && typeof s.workspaceName === 'string' &&
    typeof s.member?.id === 'string' && typeof s.member.name === 'string' && (ROLES as readonly string[]).includes(s.member.role ?? '')
  );
}

const credentialName = (workspaceId: string) => `sync-server:${workspaceId}`;

/** How often (at most) a migration's progress is announced: each one goes to the window. */
const PROGRESS_EVERY_MS = 100;

export class SessionManager {
  private open: OpenWorkspace | null = null;
  /** A workspace whose data is being moved into the current storage format while it opens. */
  private opening: { saved: Saved; progress: MigrationProgress; announcedAt: number } | null = null;
  /** Called at the first progress of a migration (restore() then answers at once). */
  private migrationStarted: (() => void) | null = null;
  private readonly listeners = new Set<(info: SessionInfo) => void>();
  /** Session changes run one at a time (a double click on "Open demo" must not open it twice). */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly deps: SessionDeps) {}

  get dataDir(): string {
    return this.deps.dataDir;
  }

  current(): OpenWorkspace | null {
    return this.open;
  }

  info(): SessionInfo {
    const o = this.open;
    const opening = this.opening;
    if (!o && opening) {
      const { done, total, indexing } = opening.progress;
      return {
        state: 'opening', dataDir: this.deps.dataDir, workspaceId: opening.saved.workspaceId,
        workspaceName: opening.saved.workspaceName, migration: { done, total, indexing: indexing === true },
      };
    }
    if (!o) return { state: 'none', dataDir: this.deps.dataDir };
    return {
      state: 'open', kind: o.saved.kind, dataDir: this.deps.dataDir, workspaceId: o.saved.workspaceId,
      workspaceName: o.saved.workspaceName, member: o.saved.member, serverUrl: o.saved.serverUrl,
      // Keys are issued with a 12-character public prefix (live_ + 7); the rest stays secret.
      apiKeyPrefix: o.apiKey ? o.apiKey.slice(0, 12) : null,
      runner: this.deps.startRunner ? (o.runner ? 'running' : 'stopped') : 'unavailable',
    };
  }

  syncStatus(): SyncStatus {
    return this.open?.sync?.status() ?? LOCAL_STATUS;
  }

  onChange(listener: (info: SessionInfo) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private emit(): void {
    const info = this.info();
    for (const l of this.listeners) l(info);
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn, fn);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private get sessionFile(): string {
    return join(this.deps.dataDir, 'session.json');
  }
  private get demoFile(): string {
    return join(this.deps.dataDir, 'demo-workspace.json');
  }
  workspaceDir(workspaceId: string): string {
    return join(this.deps.dataDir, 'workspaces', workspaceId);
  }

  /** Reopens the workspace that was open when the app last quit, if its data is still there.
   * When its data must first move into the current storage format, answers as soon as that
   * starts (state 'opening', with progress) and opens it in the background. */
  restore(): Promise<SessionInfo> {
    const started = new Promise<SessionInfo>((resolve) => {
      this.migrationStarted = () => resolve(this.info());
    });
    const restored = this.serial(async () => {
      const saved = await readJson(this.sessionFile);
      if (!isSaved(saved)) return this.info();
      try {
        const apiKey = saved.kind === 'connected' ? await this.deps.credentials.get(credentialName(saved.workspaceId)) : null;
        if (saved.kind === 'connected' && !apiKey) {
          this.deps.log?.('The saved sync-server key is gone; asking again.');
          return this.info();
        }
        await this.activate(saved, apiKey, null);
        this.emit();
      } catch (e) {
        this.deps.log?.(`Could not reopen workspace ${saved.workspaceId}: ${(e as Error).message}`);
        // The window may be showing the migration's progress: it learns the outcome.
        if (this.opening) {
          this.opening = null;
          this.emit();
        }
      }
      return this.info();
    });
    return Promise.race([restored, started]).finally(() => {
      this.migrationStarted = null;
    });
  }

  /** A migration of `saved`'s data advanced: announced (at most every PROGRESS_EVERY_MS, and its
   * first and last steps) as state 'opening'. */
  private migrating(saved: Saved, progress: MigrationProgress): void {
    const now = performance.now();
    const first = this.opening === null;
    const last = progress.done === progress.total;
    const due = first || last || progress.indexing === true || now - (this.opening?.announcedAt ?? 0) >= PROGRESS_EVERY_MS;
    this.opening = { saved, progress, announcedAt: due ? now : (this.opening?.announcedAt ?? now) };
    if (due) this.emit();
    if (first) this.migrationStarted?.();
  }

  openDemo(): Promise<SessionInfo> {
    return this.serial(async () => {
      const known = await readJson(this.demoFile);
      if (this.open?.saved.kind === 'demo' && isSaved(known) && known.workspaceId === this.open.saved.workspaceId) return this.info();
      await this.deactivate();
      if (isSaved(known)) {
        const reopened = await this.activate(known, null, null, true);
        if (reopened) {
          await writeJsonAtomic(this.sessionFile, known);
          this.emit();
          return this.info();
        }
      }
      const demo = await this.deps.buildDemo();
      const saved: Saved = { kind: 'demo', workspaceId: demo.workspaceId, workspaceName: demo.workspaceName, member: demo.member, serverUrl: null };
      await this.activate(saved, null, demo.writes);
      await writeJsonAtomic(this.demoFile, saved);
      await writeJsonAtomic(this.sessionFile, saved);
      this.emit();
      return this.info();
    });
  }

  connect(input: ConnectInput): Promise<SessionInfo> {
    return this.serial(async () => {
      const identity = await identify(input, this.deps.fetch ?? fetch);
      await this.deactivate();
      const saved: Saved = { kind: 'connected', ...identity };
      await this.activate(saved, input.apiKey.trim(), null);
      await this.deps.credentials.set(credentialName(saved.workspaceId), input.apiKey.trim());
      await writeJsonAtomic(this.sessionFile, saved);
      this.emit();
      return this.info();
    });
  }

  /** Closes the open workspace; its local data stays, a connected workspace's key is forgotten. */
  close(): Promise<SessionInfo> {
    return this.serial(async () => {
      const was = this.open?.saved;
      await this.deactivate();
      await rm(this.sessionFile, { force: true });
      if (was?.kind === 'connected') await this.deps.credentials.delete(credentialName(was.workspaceId));
      this.emit();
      return this.info();
    });
  }

  /** Stops background work and closes the database (app quit). */
  shutdown(): Promise<void> {
    return this.serial(() => this.deactivate());
  }

  /** Opens the workspace's database; seeds it when `seed` is given. With `mustExist`, gives up (false)
   * when the database does not hold the workspace (e.g. its folder was removed). */
  private async activate(saved: Saved, apiKey: string | null, seed: AnyWrite[] | null, mustExist = false): Promise<boolean> {
    const actor: Actor = { workspaceId: saved.workspaceId, memberId: saved.member.id, role: saved.member.role };
    const dir = this.workspaceDir(saved.workspaceId);
    await mkdir(dir, { recursive: true });
    let db: LocalDb;
    try {
      db = await this.deps.openDb({ dir, workspaceId: saved.workspaceId, actor, onMigration: (p) => this.migrating(saved, p) });
    } finally {
      this.opening = null;
    }
    try {
      if (seed) {
        // Commits of one collection at a time and a few thousand documents keep each write batch a
        // sane size for the local store.
        const byCollection = new Map<string, AnyWrite[]>();
        for (const w of seed) {
          const list = byCollection.get(w.collection);
          if (list) list.push(w);
          else byCollection.set(w.collection, [w]);
        }
        for (const writes of byCollection.values()) {
          for (let i = 0; i < writes.length; i += SEED_BATCH) await db.store.commit(writes.slice(i, i + SEED_BATCH));
        }
      } else if (saved.kind === 'demo' || mustExist) {
        const ws = await db.store.get('workspaces', saved.workspaceId);
        if (!ws) {
          await db.close();
          if (mustExist) return false;
          throw new Error('its local data is missing');
        }
      }
      const sync = saved.kind === 'connected' && apiKey && this.deps.startSync
        ? await this.deps.startSync({ db, dir, serverUrl: saved.serverUrl ?? '', apiKey, actor })
        : null;
      const runner = this.deps.startRunner?.({ db, actor, kind: saved.kind }) ?? null;
      this.open = { saved, db, actor, sync, runner, apiKey };
      return true;
    } catch (e) {
      await db.close().catch(() => undefined);
      throw e;
    }
  }

  private async deactivate(): Promise<void> {
    const o = this.open;
    if (!o) return;
    this.open = null;
    await o.runner?.stop().catch((e: Error) => this.deps.log?.(`Runner stop failed: ${e.message}`));
    await o.sync?.stop().catch((e: Error) => this.deps.log?.(`Sync stop failed: ${e.message}`));
    await o.db.close();
  }
}

/** Normalises what the user typed: a base URL without a trailing slash. */
export function normaliseServerUrl(raw: string): string {
  const trimmed = raw.trim().replace(/\/+$/, '');
  let url: URL;
  try {
    url = new URL(trimmed);
  } catch {
    throw new DomainError('INVALID_INPUT', `"${raw}" is not a web address; it should look like https://sync.example.com or http://127.0.0.1:4000.`, { field: 'url' });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new DomainError('INVALID_INPUT', 'The sync server address must start with http:// or https://.', { field: 'url' });
  }
  return trimmed;
}

/** Finds out, with the key, which workspace and member it acts as (ServerClient.identify). */
async function identify(input: ConnectInput, fetchFn: typeof fetch): Promise<Omit<Saved, 'kind'>> {
  const serverUrl = normaliseServerUrl(input.url);
  const who = await new ServerClient(serverUrl, input.apiKey, fetchFn).identify();
  return { ...who, serverUrl };
}
