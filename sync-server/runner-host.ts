/**
 * The sync server's runner (`npm run sync-server -- --runner`, or RUNNER=1): runs the outreach of the
 * senders whose channel runs server-side, i.e. email (SMTP) and HTTP-connector senders whose
 * channelConfig.hostedBy is 'server', with the secrets of the sender_credentials table. Sandbox
 * senders and every other sender stay with their owner's desktop.
 *
 * One loop per workspace that has such senders (found again every scan). Each unit of work of a tick
 * (a lease, one action and its record, a poll) is its own transaction through the Postgres store,
 * so an action that reached the network is recorded at once and the workspace's writer lock is
 * never held across a network call. The runner's per-sender lease (senders.runnerId /
 * runnerLeaseUntil) is taken in such a transaction with a compare-and-set on the stored document:
 * several server processes on one PostgreSQL may all run --runner, and only the holder of a
 * sender's lease acts for it. Stopping releases the leases, so another process takes over at once.
 */
import { randomUUID } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { Clock, Ids } from '../shared/context.ts';
import { systemActor } from '../shared/context.ts';
import { ChannelFailure } from '../shared/engine/channel.ts';
import type { ChannelHost } from '../shared/engine/channel.ts';
import { createRunnerHost } from '../shared/engine/host.ts';
import type { RunnerHost } from '../shared/engine/host.ts';
import { spacingFromEnv } from '../shared/engine/pacing.ts';
import { createRunner } from '../shared/engine/runner.ts';
import { timeOrderedIds } from '../shared/ids.ts';
import type { Spacing, TickReport } from '../shared/engine/runner.ts';
import type { Sender } from '../shared/model/index.ts';
import { imapCredentialId } from '../shared/ops/credentials.ts';
import { createHostChannels } from '../channels/host.ts';
import { serverRenewalLock } from './oauth.ts';
import { nodeSecrets } from './secrets.ts';
import type { HostChannels } from '../channels/host.ts';
import { smtpConfig } from '../channels/smtp.ts';
import { CredentialUnreadable } from './credentials.ts';
import type { ServerCredentials } from './credentials.ts';
import type { SqlDatabase } from './db.ts';
import { PgDatabase } from './pg-database.ts';
import { guardChannelHost, guardedFetch, guardedLookup, guardedSmtpSocket, privateHostsAllowed } from './sender-hosts.ts';
import type { SenderHostPolicy } from './sender-hosts.ts';

/** The channels whose network calls a server can make for its users. */
export const SERVER_CHANNELS: readonly Sender['channel'][] = ['email', 'http'];

/** Whether the sync server's runner works this sender. */
export const isServerHosted = (s: Pick<Sender, 'channel' | 'channelConfig'>): boolean => SERVER_CHANNELS.includes(s.channel) && s.channelConfig.hostedBy === 'server';

type Log = {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
};

export type ServerRunnerOptions = {
  sql: SqlDatabase;
  credentials: ServerCredentials;
  clock?: Clock;
  random?: () => number;
  ids?: Ids;
  /** Unique per process. Default: RUNNER_ID, else the identity kept in `stateDir` (so a restarted
   * server takes its own leases back at once), else host name, pid and a random part. */
  runnerId?: string;
  /** Where the runner keeps its identity between restarts (the server's data folder). */
  stateDir?: string;
  /** Pause between two ticks of a workspace (default 5 s). */
  intervalMs?: number;
  /** How often the workspaces with server-hosted senders are looked up again (default 30 s). */
  scanMs?: number;
  leaseMs?: number;
  spacing?: Spacing;
  /** Timeouts of SMTP, IMAP and connector calls (defaults of the channels). */
  channelTimeoutMs?: number;
  /** IMAP polling intervals (channels/imap.ts defaults otherwise). */
  imap?: { recheckMs?: number; pollMs?: number };
  log?: Log;
  /** Where senders may connect (sender-hosts.ts); default: public addresses only, unless
   * ALLOW_PRIVATE_SENDER_HOSTS=1. */
  senderHosts?: SenderHostPolicy;
  /** Every tick's report (the server counts runner actions in its metrics). */
  onReport?: (workspaceId: string, report: TickReport) => void;
  /** False: scan() sets up the workspaces but no loop ticks by itself (tests drive tickAll). */
  loops?: boolean;
};

export type ServerRunner = {
  readonly runnerId: string;
  /** Looks up the workspaces to host and starts their loops; rescans every scanMs. */
  start(): Promise<void>;
  /** One lookup: starts loops for new workspaces and stops those with no server-hosted sender left. */
  scan(): Promise<string[]>;
  /** Runs one tick in every hosted workspace now (waits for ticks in progress). */
  tickAll(): Promise<Map<string, TickReport | null>>;
  /** Stops every loop, waits for ticks in progress and releases the leases. */
  stop(): Promise<void>;
  workspaces(): string[];
};

type Hosted = { host: RunnerHost; channels: HostChannels };

const quiet: Log = { info: () => undefined, warn: () => undefined };

export function createServerRunner(opts: ServerRunnerOptions): ServerRunner {
  const { sql, credentials } = opts;
  const db = new PgDatabase(sql);
  const clock = opts.clock ?? { now: () => new Date() };
  const random = opts.random ?? Math.random;
  const ids = opts.ids ?? timeOrderedIds;
  const identity = opts.runnerId ? { id: opts.runnerId, release: () => undefined } : persistedRunnerId(opts.stateDir);
  const runnerId = identity.id;
  const log = opts.log ?? quiet;
  const senderHosts = opts.senderHosts ?? { allowPrivate: privateHostsAllowed() };
  const hosted = new Map<string, Hosted>();
  const renewalLock = serverRenewalLock(sql);
  let scanTimer: ReturnType<typeof setTimeout> | null = null;
  let scanning: Promise<string[]> | null = null;
  let stopped = false;

  /** The secret of a sender, or a ChannelFailure that disconnects it with a reason to show. */
  async function secretOf(workspaceId: string, sender: Sender): Promise<string | null> {
    try {
      return await credentials.secretFor(sql, workspaceId, sender.id);
    } catch (e) {
      if (e instanceof CredentialUnreadable) throw new ChannelFailure('unauthorized', `${sender.name}: ${e.message}.`);
      throw new ChannelFailure('failed', `the sync server could not read ${sender.name}'s credentials (${e instanceof Error ? e.message : String(e)})`);
    }
  }

  function hostWorkspace(workspaceId: string): Hosted {
    const store = db.forWorkspace(workspaceId);
    const hostChannels = createHostChannels({
      store,
      // Checked again when connecting, against names that resolve elsewhere by then (DNS rebinding).
      network: { fetch: guardedFetch(senderHosts), smtpGetSocket: guardedSmtpSocket(senderHosts), imapLookup: guardedLookup(senderHosts) },
      ...(opts.channelTimeoutMs !== undefined ? { timeoutMs: opts.channelTimeoutMs } : {}),
      ...(opts.imap ? { imap: opts.imap } : {}),
      now: () => clock.now().getTime(),
      log: (line) => log.warn({ workspaceId }, line),
      imapPasswordFor: (sender) => secretOf(workspaceId, { ...sender, id: imapCredentialId(sender.id) }),
      async smtpPasswordFor(sender) {
        const secret = await secretOf(workspaceId, sender);
        // A relay without a login is legitimate; a configured user without a password is not.
        if (secret === null && smtpConfig(sender)?.user) {
          throw new ChannelFailure('unauthorized', `no SMTP password is stored on the sync server for ${sender.name}; set it with sdrProfiles.setCredentials`);
        }
        return secret;
      },
      tokenFor: (sender) => secretOf(workspaceId, sender),
      // A mailbox's renewed OAuth grant, sealed like the password it replaces.
      saveSecret: (sender, secret) => credentials.port(sql).set(workspaceId, sender.id, secret, { at: clock.now().toISOString(), by: 'system' }),
      renewalLock,
    });
    const channels: ChannelHost = guardChannelHost(
      { channelFor: (s) => (!isServerHosted(s) ? null : hostChannels.forKind(s.channel)) },
      senderHosts,
    );
    const actor = systemActor(workspaceId);
    const runner = createRunner({
      store,
      clock, random, ids, randomBytes: nodeSecrets.randomBytes, channels, actor, runnerId,
      ...(opts.leaseMs !== undefined ? { leaseMs: opts.leaseMs } : {}),
      spacing: opts.spacing ?? spacingFromEnv(process.env),
    });
    const host = createRunnerHost({
      runner,
      intervalMs: opts.intervalMs ?? 5_000,
      onError: (e) => log.warn({ workspaceId, err: e }, 'outreach runner tick failed'),
      onReport: (r) => {
        for (const err of r.errors) log.warn({ workspaceId, ...err }, `outreach runner: ${err.message}`);
        if (r.actions > 0) log.info({ workspaceId, actions: r.actions, byKind: r.byKind }, 'outreach runner acted');
        opts.onReport?.(workspaceId, r);
      },
    });
    return { host, channels: hostChannels };
  }

  async function release(workspaceId: string): Promise<void> {
    const h = hosted.get(workspaceId);
    if (!h) return;
    hosted.delete(workspaceId);
    await h.host.stop();
    await h.channels.close();
  }

  async function lookup(): Promise<string[]> {
    const rows = await sql.query<{ workspace_id: string }>(
      `SELECT DISTINCT workspace_id FROM documents
        WHERE collection = 'senders' AND NOT deleted
          AND doc->>'channel' = ANY($1::text[])
          AND doc->'channelConfig'->>'hostedBy' = 'server'
        ORDER BY workspace_id`,
      [[...SERVER_CHANNELS]],
    );
    return rows.map((r) => r.workspace_id);
  }

  async function scanOnce(): Promise<string[]> {
    const wanted = await lookup();
    if (stopped) return [];
    const keep = new Set(wanted);
    for (const ws of [...hosted.keys()]) if (!keep.has(ws)) await release(ws);
    for (const ws of wanted) {
      if (hosted.has(ws)) continue;
      const h = hostWorkspace(ws);
      hosted.set(ws, h);
      if (opts.loops !== false) h.host.start();
      log.info({ workspaceId: ws, runnerId }, 'outreach runner started for workspace');
    }
    return wanted;
  }

  function scan(): Promise<string[]> {
    // One scan at a time: a second caller shares the one in progress.
    scanning ??= scanOnce().finally(() => {
      scanning = null;
    });
    return scanning;
  }

  function scheduleScan(): void {
    if (stopped) return;
    scanTimer = setTimeout(() => {
      scanTimer = null;
      scan()
        .catch((e: unknown) => log.warn({ err: e }, 'outreach runner could not look up workspaces'))
        .finally(scheduleScan);
    }, opts.scanMs ?? 30_000);
    scanTimer.unref();
  }

  return {
    runnerId,
    async start() {
      stopped = false;
      await scan();
      scheduleScan();
    },
    scan,
    async tickAll() {
      const out = new Map<string, TickReport | null>();
      await Promise.all([...hosted].map(async ([ws, h]) => out.set(ws, await h.host.tickNow())));
      return out;
    },
    async stop() {
      stopped = true;
      if (scanTimer !== null) clearTimeout(scanTimer);
      scanTimer = null;
      if (scanning) await scanning.catch(() => undefined);
      await Promise.all([...hosted.keys()].map((ws) => release(ws)));
      identity.release();
    },
    workspaces: () => [...hosted.keys()],
  };
}

/**
 * The runner's identity, kept in `<stateDir>/runner-id` so that a server restarted after a crash
 * recognises the leases it held and works its senders again at once (instead of waiting for them
 * to lapse). A lock file with the pid keeps two live processes from sharing one identity: the
 * second gets a fresh one (and waits for leases as any other runner would).
 */
export function persistedRunnerId(stateDir: string | undefined): { id: string; release: () => void } {
  const fresh = `server:${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const env = process.env.RUNNER_ID?.trim();
  if (env) return { id: env, release: () => undefined };
  if (!stateDir) return { id: fresh, release: () => undefined };
  try {
    mkdirSync(stateDir, { recursive: true });
    const lock = join(stateDir, 'runner-id.lock');
    if (existsSync(lock)) {
      const pid = Number(readFileSync(lock, 'utf8').trim());
      if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid)) return { id: fresh, release: () => undefined };
      unlinkSync(lock);
    }
    const fd = openSync(lock, 'wx');
    writeSync(fd, String(process.pid));
    closeSync(fd);
    const file = join(stateDir, 'runner-id');
    let id = existsSync(file) ? readFileSync(file, 'utf8').trim() : '';
    if (!id) {
      id = `server:${hostname()}:${randomUUID()}`;
      writeFileSync(file, `${id}\n`);
    }
    return {
      id,
      release: () => {
        try {
          unlinkSync(lock);
        } catch {
          // Already gone.
        }
      },
    };
  } catch {
    return { id: fresh, release: () => undefined };
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
