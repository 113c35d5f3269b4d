/** What a handler may use besides its input: the actor, time, ids, randomness, the store and the
 * injected ports. Handlers never read Date.now(), Math.random() or globals. */
import type { Role } from './model/index.ts';
import type { Tx } from './tx.ts';
import type { ChannelHost } from './engine/channel.ts';

export type Actor = {
  workspaceId: string;
  memberId: string;
  role: Role;
  /** The runner or a server process acting for the workspace rather than a person. */
  isSystem?: boolean;
};

export type Clock = { now(): Date };
export type Ids = { uuid(): string };
/** Secret generation and hashing, injected because shared/ has no crypto module of its own. */
export type Secrets = { newApiKey(): string; hash(secret: string): string };

export type Ctx = {
  actor: Actor;
  clock: Clock;
  ids: Ids;
  /** Uniform in [0, 1). */
  random: () => number;
  /** Reads see this call's own staged writes; writes are staged and committed after the rules pass. */
  db: Tx;
  secrets: Secrets;
  /** Channels for operations that must talk to a network (social reading). Absent offline. */
  channels: ChannelHost | null;
  /** True when the call is a preview: the handler computes the same answer and nothing is committed. */
  dryRun: boolean;
};

/** ISO 8601 timestamp of the ctx clock. */
export const nowIso = (ctx: { clock: Clock }): string => ctx.clock.now().toISOString();
