/**
 * Runs the workspace's outreach on this machine: the runner of shared/engine, ticking in the
 * background for the senders this desktop holds. The demo workspace's senders live on the sandbox
 * network (simulated people, nothing leaves the machine); in a connected workspace this desktop runs
 * the senders its member owns that are not hosted by the sync server (sandbox, SMTP email, HTTP
 * connector, with secrets from this machine's credential store), and leases keep two desktops from
 * working one sender.
 */
import { hostname } from 'node:os';
import type { Actor, Clock } from '../../shared/context.ts';
import type { ChannelHost } from '../../shared/engine/channel.ts';
import { createRunnerHost, restoreSandbox } from '../../shared/engine/host.ts';
import { spacingFromEnv } from '../../shared/engine/pacing.ts';
import { createRunner } from '../../shared/engine/runner.ts';
import type { Spacing } from '../../shared/engine/runner.ts';
import { createSandboxNetwork } from '../../shared/engine/sandbox.ts';
import type { Sender } from '../../shared/model/index.ts';
import { hostedByOf, imapCredentialId } from '../../shared/ops/credentials.ts';
import type { WorkspaceKind } from '../bridge.ts';
import { createHostChannels } from '../../channels/host.ts';
import { nodeSecrets } from '../../channels/secret-codec.ts';
import { timeOrderedIds } from '../../shared/ids.ts';
import type { DesktopSenderCredentials } from './credentials.ts';
import type { LocalDb } from './local-db-port.ts';
import type { RunnerHandle } from './session.ts';

export type RunnerSettings = {
  intervalMs?: number;
  clock?: Clock;
  log?: (line: string) => void;
  /** Where this desktop keeps its senders' SMTP/IMAP passwords and connector tokens. */
  senderCredentials?: DesktopSenderCredentials;
  /** IMAP polling intervals (channels/imap.ts defaults otherwise). */
  imap?: { recheckMs?: number; pollMs?: number };
  /** Gap between one sender's actions (default: RUNNER_SPACING_SECONDS / RUNNER_JITTER_SECONDS). */
  spacing?: Spacing;
};

export function startWorkspaceRunner(args: { db: LocalDb; actor: Actor; kind: WorkspaceKind }, settings: RunnerSettings = {}): RunnerHandle {
  const clock = settings.clock ?? { now: () => new Date() };
  const log = settings.log ?? (() => undefined);
  const workspaceId = args.actor.workspaceId;
  // One network per workspace, seeded by its id: the same people answer the same way after a restart.
  const network = createSandboxNetwork({ seed: workspaceId, clock });
  const secretOf = (sender: Sender) => settings.senderCredentials?.secretFor(workspaceId, sender.id) ?? null;
  const hosted = createHostChannels({
    store: args.db.store,
    smtpPasswordFor: secretOf,
    imapPasswordFor: (sender) => settings.senderCredentials?.secretFor(workspaceId, imapCredentialId(sender.id)) ?? null,
    tokenFor: secretOf,
    // A mailbox's renewed OAuth grant goes back to this machine's credential store (safeStorage).
    ...(settings.senderCredentials ? { saveSecret: (sender: Sender, secret: string) => settings.senderCredentials?.set(workspaceId, sender.id, secret, { at: clock.now().toISOString(), by: args.actor.memberId }) ?? Promise.resolve() } : {}),
    now: () => clock.now().getTime(),
    log,
    ...(settings.imap ? { imap: settings.imap } : {}),
  });
  const channels: ChannelHost = {
    channelFor(sender) {
      // Server-hosted senders run on the sync server; in a team workspace a desktop runs its own member's.
      if (hostedByOf(sender) !== 'desktop') return null;
      if (args.kind === 'connected' && sender.ownerMemberId !== args.actor.memberId) return null;
      return sender.channel === 'sandbox' ? network : hosted.forKind(sender.channel);
    },
  };
  const runner = createRunner({
    store: args.db.store,
    clock,
    random: Math.random,
    ids: timeOrderedIds,
    randomBytes: nodeSecrets.randomBytes,
    channels,
    actor: { workspaceId, memberId: args.actor.memberId, role: args.actor.role, isSystem: true },
    // Stable across restarts: a desktop restarted after a crash takes its own leases back at once.
    runnerId: `desktop:${hostname()}:${args.actor.memberId}`,
    spacing: settings.spacing ?? spacingFromEnv(process.env),
  });
  const host = createRunnerHost({
    runner,
    intervalMs: settings.intervalMs ?? 5_000,
    onError: (e) => log(`Outreach runner: ${e instanceof Error ? e.message : String(e)}`),
    onReport: (r) => {
      for (const err of r.errors) log(`Outreach runner: ${err.message}`);
    },
  });
  let stopped = false;
  // Replay what was already sent, so people who were about to reply still do after a restart.
  const ready = restoreSandbox(args.db.store, network, clock)
    .catch((e: unknown) => log(`Outreach runner could not restore the sandbox network: ${(e as Error).message}`))
    .then(() => {
      if (!stopped) host.start();
    });
  return {
    channels,
    async stop() {
      stopped = true;
      await ready;
      await host.stop();
      await hosted.close();
    },
  };
}
