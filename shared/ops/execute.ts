/** Runs one operation: parse input, check permission, run the handler over a Tx, validate the staged
 * writes with the rules, commit (unless dryRun), check the output. Every transport calls this. */
import type { z } from 'zod';
import type { Actor, Clock, Ctx, Ids, OAuthConnectPort, PrepareCtx, Secrets, SenderCredentials, SenderHostCheck, SenderVerifier } from '../context.ts';
import type { ChannelHost } from '../engine/channel.ts';
import { DomainError } from '../errors.ts';
import { validateWrites } from '../rules/index.ts';
import type { AnyWrite, Store, StoreReader } from '../store.ts';
import { Tx } from '../tx.ts';
import type { WebhookPort } from '../webhooks/port.ts';
import { hasPermission } from './define.ts';
import type { OpDef } from './define.ts';
import { inputIssues, isPlainObject, textProblems, withoutUndefined } from './input-guard.ts';
import type { InputIssue } from './input-guard.ts';
import { operations } from './index.ts';
import type { OpName, OpInput, OpOutput } from './index.ts';

export type ExecEnv = {
  actor: Actor;
  store: Store;
  clock: Clock;
  ids: Ids;
  random: () => number;
  secrets: Secrets;
  channels?: ChannelHost | null;
  /** Where sender secrets are kept on this host (sdrProfiles.setCredentials). */
  credentials?: SenderCredentials | null;
  /** The sync server's check of server-hosted senders' hosts (sdrProfiles.create). */
  senderHosts?: SenderHostCheck | null;
  /** Checks email senders from this host (sdrProfiles.create, sdrProfiles.verify). */
  senderVerifier?: SenderVerifier | null;
  /** The sync server's webhook endpoints (webhooks.*). */
  webhooks?: WebhookPort | null;
  /** Mailbox sign-in with OAuth on this host (sdrProfiles.oauth.*). */
  oauth?: OAuthConnectPort | null;
  /** Called with the committed writes (live updates, audit); not called for dry runs or refusals. */
  onCommit?: (writes: readonly AnyWrite[]) => void;
  /** What prepareOperation found before the transaction; absent: execute runs the op's prepare. */
  prepared?: unknown;
};

/** The operation with its parsed input, once the actor may call it and it can run here. */
function admitted(name: string, rawInput: unknown, env: Pick<ExecEnv, 'actor' | 'channels'>): { op: OpDef; input: Record<string, unknown> } {
  const op = getOperation(name);
  // Text no store can hold is refused before anything else looks at it, on every transport.
  const badText = textProblems(rawInput);
  if (badText.length > 0) throw invalidInput(badText);
  const raw = withoutUndefined(rawInput ?? {});
  let input: Record<string, unknown>;
  // An input the operation's quick check vouches for is one its schema takes as it is (an
  // import's 5,000 rows: zod copied each of their 70,000 cells); anything else is parsed, and
  // refused with the schema's own issues.
  if (op.quickInput && isPlainObject(raw) && op.quickInput(raw)) input = raw;
  else {
    const parsed = op.input.safeParse(raw);
    if (!parsed.success) throw invalidInput(parsed.error);
    input = parsed.data as Record<string, unknown>;
  }

  if (!env.actor.isSystem && !hasPermission(env.actor.role, op.permission)) {
    throw new DomainError('PERMISSION_DENIED', `${op.name} needs the ${op.permission} permission (owner or admin).`, { permission: op.permission });
  }
  if (op.needsChannel && !env.channels) {
    throw new DomainError('CHANNEL_ERROR', `${op.name} needs a connection to the sender's network; it cannot run offline.`);
  }
  return { op, input };
}

function prepareCtx(env: Omit<ExecEnv, 'store'>, reader: StoreReader): PrepareCtx {
  return {
    actor: env.actor, clock: env.clock, ids: env.ids, random: env.random, db: reader, secrets: env.secrets,
    channels: env.channels ?? null, credentials: env.credentials ?? null, senderHosts: env.senderHosts ?? null,
    senderVerifier: env.senderVerifier ?? null, webhooks: env.webhooks ?? null, oauth: env.oauth ?? null,
  };
}

/**
 * Runs an operation's `prepare` (its network work) outside any transaction, for a transport whose
 * transaction holds the workspace's writer lock (the sync server); pass the result to execute as
 * `prepared`. Input and permission are checked first, as execute checks them. Undefined when the
 * operation has no prepare.
 */
export async function prepareOperation(name: string, rawInput: unknown, env: Omit<ExecEnv, 'store' | 'prepared' | 'onCommit'> & { reader: StoreReader }): Promise<{ prepared: unknown } | null> {
  const { op, input } = admitted(name, rawInput, env);
  if (!op.prepare) return null;
  return { prepared: await op.prepare(input, prepareCtx(env, env.reader)) };
}

export function getOperation(name: string): OpDef {
  const op = (operations as Record<string, OpDef>)[name];
  if (!op || !Object.prototype.hasOwnProperty.call(operations, name)) {
    throw new DomainError('UNKNOWN_OPERATION', `There is no operation named ${name}.`, { name });
  }
  return op;
}

/** Turns zod issues (or input issues) into one readable sentence and a list for clients. */
export function invalidInput(error: z.ZodError | readonly InputIssue[]): DomainError {
  const issues = Array.isArray(error) ? [...error] : inputIssues(error as z.ZodError);
  const first = issues[0];
  const where = first && first.path ? `${first.path}: ` : '';
  return new DomainError('INVALID_INPUT', `${where}${first?.message ?? 'invalid input'}`, { issues });
}

export async function execute<N extends OpName>(name: N, rawInput: unknown, env: ExecEnv): Promise<OpOutput<N>>;
export async function execute(name: string, rawInput: unknown, env: ExecEnv): Promise<unknown>;
export async function execute(name: string, rawInput: unknown, env: ExecEnv): Promise<unknown> {
  const { op, input } = admitted(name, rawInput, env);
  // Run here unless the transport ran it before its transaction (prepareOperation).
  const prepared = 'prepared' in env ? env.prepared : op.prepare ? await op.prepare(input, prepareCtx(env, env.store)) : undefined;

  const dryRun = op.dryRun && input.dryRun === true;
  const tx = new Tx(env.store, { deferBase: true, readOnly: !op.mutates });
  const ctx: Ctx = {
    actor: env.actor,
    clock: env.clock,
    ids: env.ids,
    random: env.random,
    db: tx,
    secrets: env.secrets,
    channels: env.channels ?? null,
    credentials: env.credentials ?? null,
    senderHosts: env.senderHosts ?? null,
    senderVerifier: env.senderVerifier ?? null,
    webhooks: env.webhooks ?? null,
    oauth: env.oauth ?? null,
    dryRun,
    prepared,
  };
  const raw = await op.handler(input, ctx);
  await tx.settle();
  const writes = tx.writes();
  if (writes.length > 0) {
    if (!op.mutates) throw new DomainError('INTERNAL', `${op.name} is a read but tried to write.`);
    const rules = { actor: env.actor, read: tx, now: env.clock.now() };
    const check = (part: readonly AnyWrite[]) => validateWrites(part, rules);
    if (dryRun) await check(writes);
    else {
      if (env.store.commitChecked) await env.store.commitChecked(writes, check);
      else {
        await check(writes);
        await env.store.commit(writes);
      }
      env.onCommit?.(writes);
    }
  }
  const out = op.output.safeParse(raw);
  if (!out.success) {
    throw new DomainError('INTERNAL', `${op.name} produced a response that does not match its schema: ${invalidInput(out.error).message}`);
  }
  return out.data;
}

export type { OpName, OpInput, OpOutput };
