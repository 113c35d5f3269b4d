import type { Actor } from '../context.ts';
import type { CollectionName, Docs } from '../model/index.ts';
import type { StoreReader } from '../store.ts';

/** A proposed document change: null before = creation, null after = deletion. */
export type Change<C extends CollectionName> = { collection: C; before: Docs[C] | null; after: Docs[C] | null };

export type RuleCtx = {
  actor: Actor;
  /** Reads the state the write would produce (other writes of the same commit included). */
  read: StoreReader;
  now: Date;
};

/** A transition validator: throws a DomainError to refuse the change. */
export type Rule<C extends CollectionName> = (change: Change<C>, rctx: RuleCtx) => void | Promise<void>;

export type RuleSet = { [C in CollectionName]?: readonly Rule<C>[] };
