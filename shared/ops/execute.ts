/** Runs one operation: parse input, check permission, run the handler over a Tx, validate the staged
 * writes with the rules, commit (unless dryRun), check the output. Every transport calls this. */
import type { z } from 'zod';
import type { Actor, Clock, Ctx, Ids, OAuthConnectPort, PrepareCtx, Secrets, SenderCredentials, SenderHostCheck, SenderVerifier } from '../context.ts';
import type { ChannelHost } from '../engine/channel.ts';
import { DomainError } from '../errors.ts';
import type { IdentityKind } from '../intake/identity.ts';
import type { CollectionName, Docs } from '../model/index.ts';
import { validateWrites } from '../rules/index.ts';
import type { RuleCtx } from '../rules/index.ts';
import type { AnyWrite, CommitAhead, Cond, DuplicatePage, DuplicatePageOptions, Page, Query, Store, StoreReader } from '../store.ts';
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
  // A store that writes a commit while the operation runs takes the writes the handler seals as
  // they come (Tx.writeAhead: an import's new leads, a part at a time, while it builds the next).
  const ahead = op.mutates && !dryRun ? commitAhead(env, tx) : null;
  let raw: unknown;
  try {
    raw = await op.handler(input, ctx);
    await tx.settle();
  } catch (e) {
    await ahead?.commit.abandon();
    throw e;
  }
  const handed = tx.handedOver();
  if (ahead && handed.length > 0) {
    const rest = tx.writes();
    const writes = [...handed, ...rest];
    if (ahead.stale()) {
      // A write staged after the handed writes were checked changed what their rules read: the
      // commit is checked and written again from the start, against the final state.
      await ahead.commit.abandon();
      await commitWith(env, writes, (part) => validateWrites(part, { actor: env.actor, read: tx, now: env.clock.now() }));
    } else await ahead.commit.finish(rest);
    env.onCommit?.(writes);
    return output(op, raw);
  }
  const writes = tx.writes();
  if (writes.length > 0) {
    if (!op.mutates) throw new DomainError('INTERNAL', `${op.name} is a read but tried to write.`);
    const rules = { actor: env.actor, read: tx, now: env.clock.now() };
    const check = (part: readonly AnyWrite[]) => validateWrites(part, rules);
    if (dryRun) await check(writes);
    else {
      await commitWith(env, writes, check);
      env.onCommit?.(writes);
    }
  }
  return output(op, raw);
}

/** The rules' check and the commit of `writes`: in parts where the store writes them so. */
async function commitWith(env: ExecEnv, writes: readonly AnyWrite[], check: (part: readonly AnyWrite[]) => Promise<void>): Promise<void> {
  if (env.store.commitChecked) await env.store.commitChecked(writes, check);
  else {
    await check(writes);
    await env.store.commit(writes);
  }
}

/** The handler's answer as its schema gives it. */
function output(op: OpDef, raw: unknown): unknown {
  const out = op.output.safeParse(raw);
  if (!out.success) {
    throw new DomainError('INTERNAL', `${op.name} produced a response that does not match its schema: ${invalidInput(out.error).message}`);
  }
  return out.data;
}

/** A reader that notes the collections read through it: which collections the rules of writes
 * checked ahead read, so a later write to one of them sends the commit back to a full check. */
class NotingReader implements StoreReader {
  constructor(
    private readonly read: StoreReader,
    readonly collections: Set<CollectionName>,
  ) {}

  get<C extends CollectionName>(c: C, id: string): Promise<Docs[C] | null> {
    this.collections.add(c);
    return this.read.get(c, id);
  }
  getMany<C extends CollectionName>(c: C, ids: readonly string[]): Promise<Docs[C][]> {
    this.collections.add(c);
    return this.read.getMany(c, ids);
  }
  query<C extends CollectionName>(c: C, q?: Query): Promise<Page<Docs[C]>> {
    this.collections.add(c);
    return this.read.query(c, q);
  }
  count<C extends CollectionName>(c: C, where?: Cond): Promise<number> {
    this.collections.add(c);
    return this.read.count(c, where);
  }
  duplicateGroups(kind: IdentityKind, opts: DuplicatePageOptions): Promise<DuplicatePage> {
    this.collections.add('leads');
    return this.read.duplicateGroups(kind, opts);
  }
}

/**
 * The store's commit ahead (Store.commitAhead) wired to `tx`: writes the handler seals go to it from
 * Tx.writeAhead, checked by the rules as each part is sent. The rules read the state of the writes
 * staged so far, which is the final state unless the operation later stages a write to a collection
 * they read (`stale`: the import's later writes are leads, which no lead rule reads). `now` is read
 * from the clock only if a rule asks for it, as no rule does today (the handler's own clock reads
 * stay the ones it makes without this).
 */
function commitAhead(env: ExecEnv, tx: Tx): { commit: CommitAhead; stale: () => boolean } | null {
  if (!env.store.commitAhead) return null;
  const reader = new NotingReader(tx, new Set());
  let now: Date | null = null;
  const rules: RuleCtx = {
    actor: env.actor,
    read: reader,
    get now() {
      return (now ??= env.clock.now());
    },
  };
  const commit = env.store.commitAhead((part) => validateWrites(part, rules));
  if (!commit) return null;
  tx.aheadTo(async (writes) => {
    // What the handler stages from here on may change what these writes' rules read.
    tx.trackStaging();
    await commit.add(writes);
  });
  return { commit, stale: () => [...tx.stagedSinceTracking()].some((c) => reader.collections.has(c)) };
}

export type { OpName, OpInput, OpOutput };
