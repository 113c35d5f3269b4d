/** How an operation is declared. One registry (shared/ops/index.ts) holds them all and every
 * transport (HTTP, IPC, WebSocket) serves it through `execute`. */
import type { z } from 'zod';
import type { Ctx, PrepareCtx } from '../context.ts';
import type { Role } from '../model/index.ts';
import { strictInput } from './input-guard.ts';

/** `member`: any member; `campaigns.launch`: owner or admin (start campaigns, raise limits);
 * `admin`: owner or admin (manage members). */
export type Permission = 'member' | 'campaigns.launch' | 'admin';

export const ROLE_PERMISSIONS: Record<Role, readonly Permission[]> = {
  owner: ['member', 'campaigns.launch', 'admin'],
  admin: ['member', 'campaigns.launch', 'admin'],
  member: ['member'],
};

export const hasPermission = (role: Role, p: Permission): boolean => ROLE_PERMISSIONS[role].includes(p);

export type OpDef<I extends z.ZodType = z.ZodType, O extends z.ZodType = z.ZodType> = {
  name: string;
  method: 'GET' | 'POST';
  /** One sentence for the OpenAPI document and the command palette. */
  summary: string;
  input: I;
  output: O;
  permission: Permission;
  /** Accepts `dryRun: true` to preview. */
  dryRun: boolean;
  /** Writes documents (false for reads). */
  mutates: boolean;
  /** Runs only where the authoritative secrets live (the sync server): the desktop forwards it. */
  serverOnly?: boolean;
  /** Needs a channel (network) and cannot run offline. */
  needsChannel?: boolean;
  /**
   * Network work the operation needs before it writes (sdrProfiles.create and .verify log in to a
   * mailbox): run before the transaction, so it never holds the workspace's writer lock while a
   * remote server answers. Its result reaches the handler as ctx.prepared. A transport that holds a
   * lock runs it first (sync-server/app.ts, prepareOperation); elsewhere execute runs it itself.
   */
  prepare?(input: z.output<I>, ctx: PrepareCtx): Promise<unknown>;
  /**
   * Optional: a quick check for a large, common input (an import's 5,000 rows), true only for an
   * input that `input` accepts exactly as it is (its parse would give an equal value back). execute
   * then takes the input without the parse, which copies every value (40-60 ms for an import's
   * 70,000 cells); false sends it through the schema, which gives the answer and its issues. A
   * property test holds each one to its schema (test/unit/quick-input.test.ts).
   */
  quickInput?(raw: Record<string, unknown>): boolean;
  /** Method syntax on purpose: the registry holds operations of different input types. */
  handler(input: z.output<I>, ctx: Ctx): Promise<z.input<O>>;
};

/** Keeps the literal name and the schema types of one operation. Its input schema is made strict
 * (API contract, "Strict inputs"): a field it does not declare, at any depth, is refused; `dryRun`
 * too, unless the operation declares it. The output schema stays open. */
export function defineOp<const N extends string, I extends z.ZodType, O extends z.ZodType>(
  def: OpDef<I, O> & { name: N },
): OpDef<I, O> & { name: N } {
  return { ...def, input: strictInput(def.input) };
}

/** What `query` and `mutation` fill in, so a definition says only what is particular to it. */
type Defaulted = 'method' | 'mutates' | 'permission' | 'dryRun';
type QueryDef<I extends z.ZodType, O extends z.ZodType> = Omit<OpDef<I, O>, Defaulted> & {
  permission?: Permission;
  /** A read is a GET; POST only for a read whose input is not a query string (a list of hosts). */
  method?: 'POST';
};
type MutationDef<I extends z.ZodType, O extends z.ZodType> = Omit<OpDef<I, O>, Defaulted> & { permission?: Permission; dryRun?: boolean };

/** A read: GET, writes nothing, any member, no dry run (API contract, "Transport"). */
export function query<const N extends string, I extends z.ZodType, O extends z.ZodType>(
  def: QueryDef<I, O> & { name: N },
): OpDef<I, O> & { name: N } {
  return defineOp<N, I, O>({ method: 'GET', permission: 'member', dryRun: false, ...def, mutates: false });
}

/** A write: POST, any member unless `permission` says otherwise, no dry run unless `dryRun: true`. */
export function mutation<const N extends string, I extends z.ZodType, O extends z.ZodType>(
  def: MutationDef<I, O> & { name: N },
): OpDef<I, O> & { name: N } {
  return defineOp<N, I, O>({ permission: 'member', dryRun: false, ...def, method: 'POST', mutates: true });
}

type Named = { name: string };
type ByName<T extends readonly Named[]> = { [K in T[number] as K['name']]: K };

/** Turns a list of operations into a record keyed by name, refusing duplicates. */
export function opsByName<const T extends readonly (OpDef & Named)[]>(...ops: T): ByName<T> {
  const out: Record<string, OpDef> = {};
  for (const op of ops) {
    if (out[op.name]) throw new Error(`Operation ${op.name} is defined twice.`);
    out[op.name] = op;
  }
  return out as ByName<T>;
}
