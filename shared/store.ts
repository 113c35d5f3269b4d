/**
 * The Store port every operation runs against. One Store is scoped to one workspace: reads only see
 * that workspace's documents (a foreign id is simply absent) and writes are stamped with it.
 * Implementations: MemoryStore (tests), the desktop's RxDB store, the sync server's Postgres store.
 */
import type { IdentityKind } from './intake/identity.ts';
import type { CollectionName, Docs } from './model/index.ts';

/** A condition over top-level (or dotted) document fields. A lead's identity keys are fields too:
 * `key:profile`, `key:email`, `key:nameCompany` (KEY_FIELDS of shared/intake/identity.ts), computed
 * by every store when it writes a lead and indexed per workspace; null for a lead without one. */
export type Cond =
  | { op: 'eq'; field: string; value: string | number | boolean | null }
  | { op: 'neq'; field: string; value: string | number | boolean | null }
  | { op: 'in'; field: string; values: ReadonlyArray<string | number | boolean | null> }
  | { op: 'lt' | 'lte' | 'gt' | 'gte'; field: string; value: string | number }
  /** Case-insensitive substring match against any of the fields. */
  | { op: 'contains'; fields: readonly string[]; value: string }
  /** The array field holds the value. */
  | { op: 'has'; field: string; value: string }
  | { op: 'and'; conds: readonly Cond[] }
  | { op: 'or'; conds: readonly Cond[] }
  | { op: 'not'; cond: Cond };

export type Sort = {
  field: string;
  dir: 'asc' | 'desc';
  /** 'text': people's names and companies, case- and accent-insensitively (shared/text-sort.ts);
   * every store compares `foldForSort` of the value (SQL: the same translate table). */
  collate?: 'text';
};

export type Query = {
  where?: Cond;
  /** Ties are broken by id ascending, so pages are stable. */
  orderBy?: readonly Sort[];
  /** Omit for every matching document. */
  limit?: number;
  /** Opaque cursor returned as `nextCursor` by the previous page of the same query. */
  cursor?: string | null;
};

export type Page<T> = { docs: T[]; nextCursor: string | null };

/** A staged write: the document's new state (or a deletion) and the state it was based on. */
export type Write<C extends CollectionName = CollectionName> = {
  collection: C;
  id: string;
  /** null = soft delete. */
  after: Docs[C] | null;
  /** What the writer read; null for a creation. The store refuses the commit (CONFLICT) when the
   * stored document no longer equals it. */
  before: Docs[C] | null;
};

export type AnyWrite = { [C in CollectionName]: Write<C> }[CollectionName];

export type StoreReader = {
  get<C extends CollectionName>(collection: C, id: string): Promise<Docs[C] | null>;
  getMany<C extends CollectionName>(collection: C, ids: readonly string[]): Promise<Docs[C][]>;
  query<C extends CollectionName>(collection: C, query?: Query): Promise<Page<Docs[C]>>;
  count<C extends CollectionName>(collection: C, where?: Cond): Promise<number>;
  /** Groups of two or more live leads of the workspace (not deleted, no `mergedIntoId`) sharing one
   * identity key (shared/intake/identity.ts), in key order (JavaScript's string order), keyset-paged
   * by key; each group's ids in id order. Read from each store's key index. */
  duplicateGroups(kind: IdentityKind, opts: DuplicatePageOptions): Promise<DuplicatePage>;
};

export type DuplicatePageOptions = { limit: number; cursor?: string | null };

export type DuplicateGroup = { key: string; leadIds: string[] };

export type DuplicatePage = { groups: DuplicateGroup[]; nextCursor: string | null };

export type Store = StoreReader & {
  readonly workspaceId: string;
  /** Commits every write atomically, or none (throws DomainError CONFLICT on a stale `before`). */
  commit(writes: readonly AnyWrite[]): Promise<void>;
  /** Optional, for a store that writes a large commit in parts (PostgreSQL): `check` (the rules)
   * then `commit`, with each part checked just before it is written, so the checks and encoding of
   * a part run while the database writes the part before. Same answer as check-all-then-commit:
   * the first refusal of `check` in write order wins over the store's own, and a refusal of either
   * leaves nothing written. */
  commitChecked?(writes: readonly AnyWrite[], check: (part: readonly AnyWrite[]) => Promise<void>): Promise<void>;
  /** Optional, for a store that can write a commit while the operation still runs (PostgreSQL): the
   * first writes arrive through `add` (Tx.writeAhead: writes the operation sealed), the rest through
   * `finish`, and the whole is one commit with commitChecked's answer, `check` running on each part
   * before it is written. Null when this store commits at the end (then use commitChecked). */
  commitAhead?(check: (part: readonly AnyWrite[]) => Promise<void>): CommitAhead | null;
};

/** A commit written while its operation runs (Store.commitAhead). */
export type CommitAhead = {
  /** Takes writes in commit order; may check and send some before it returns. */
  add(writes: readonly AnyWrite[]): Promise<void>;
  /** The commit's last writes: everything is checked and written, or nothing is left (it throws
   * what commitChecked would have thrown for all the writes). */
  finish(rest: readonly AnyWrite[]): Promise<void>;
  /** Nothing of the commit is left (the operation failed, or it is committed again another way). */
  abandon(): Promise<void>;
};

/** Opens a workspace-scoped Store for the length of one unit of work (one DB transaction on the
 * server); `fn`'s writes are committed together. */
export type StoreProvider = {
  withStore<T>(workspaceId: string, fn: (store: Store) => Promise<T>): Promise<T>;
};
