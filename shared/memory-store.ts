/** An in-memory Store for tests and simulations: the reference behaviour of the Store port. */
import type { CollectionName, Docs } from './model/index.ts';
import type { AnyWrite, Cond, Page, Query, Store, StoreProvider } from './store.ts';
import { DomainError } from './errors.ts';
import { matches, runQuery } from './query.ts';

type Row = { doc: unknown; deleted: boolean };

/** Holds every workspace's documents; `forWorkspace` gives the scoped Store the ops see. */
export class MemoryDatabase implements StoreProvider {
  private readonly tables = new Map<CollectionName, Map<string, Row>>();
  /** Number of successful commits, so tests can assert that a refusal committed nothing. */
  commits = 0;

  private table(c: CollectionName): Map<string, Row> {
    let t = this.tables.get(c);
    if (!t) {
      t = new Map();
      this.tables.set(c, t);
    }
    return t;
  }

  forWorkspace(workspaceId: string): Store {
    return new MemoryStore(this, workspaceId);
  }

  async withStore<T>(workspaceId: string, fn: (store: Store) => Promise<T>): Promise<T> {
    return fn(this.forWorkspace(workspaceId));
  }

  /** @internal */
  rows(c: CollectionName): Map<string, Row> {
    return this.table(c);
  }

  /** A deep copy of every stored row, to compare before and after a refused call. */
  snapshot(): Record<string, Record<string, Row>> {
    const out: Record<string, Record<string, Row>> = {};
    // Empty tables are left out: a read creates its table lazily, and that is not a change.
    for (const [c, t] of this.tables) if (t.size > 0) out[c] = Object.fromEntries([...t].map(([id, r]) => [id, structuredClone(r)]));
    return out;
  }
}

const sameDoc = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

class MemoryStore implements Store {
  constructor(
    private readonly db: MemoryDatabase,
    readonly workspaceId: string,
  ) {}

  /** The stored (uncloned) live documents; callers clone only what they return, so a query over a
   * large collection costs a scan, not a deep copy of every document. */
  private live<C extends CollectionName>(c: C, where?: Cond): Docs[C][] {
    const out: Docs[C][] = [];
    for (const r of this.db.rows(c).values()) {
      if (!r.deleted && (r.doc as { workspaceId: string }).workspaceId === this.workspaceId && (where === undefined || matches(r.doc, where))) out.push(r.doc as Docs[C]);
    }
    return out;
  }

  async get<C extends CollectionName>(c: C, id: string): Promise<Docs[C] | null> {
    const r = this.db.rows(c).get(id);
    if (!r || r.deleted || (r.doc as { workspaceId: string }).workspaceId !== this.workspaceId) return null;
    return structuredClone(r.doc) as Docs[C];
  }

  async getMany<C extends CollectionName>(c: C, ids: readonly string[]): Promise<Docs[C][]> {
    const out: Docs[C][] = [];
    for (const id of ids) {
      const d = await this.get(c, id);
      if (d) out.push(d);
    }
    return out;
  }

  async query<C extends CollectionName>(c: C, q?: Query): Promise<Page<Docs[C]>> {
    // Filtered while scanning; runQuery then sorts and pages the (usually small) match set.
    const page = runQuery(this.live(c, q?.where), q);
    return { docs: page.docs.map((d) => structuredClone(d)), nextCursor: page.nextCursor };
  }

  async count<C extends CollectionName>(c: C, where?: Cond): Promise<number> {
    return this.live(c, where).length;
  }

  async commit(writes: readonly AnyWrite[]): Promise<void> {
    for (const w of writes) {
      const r = this.db.rows(w.collection).get(w.id);
      const current = r && !r.deleted ? r.doc : null;
      if (current && (current as { workspaceId: string }).workspaceId !== this.workspaceId) {
        throw new DomainError('CONFLICT', `Document ${w.id} belongs to another workspace.`);
      }
      if (!sameDoc(current, w.before)) {
        throw new DomainError('CONFLICT', `${w.collection}/${w.id} changed since it was read; try again.`, { collection: w.collection, id: w.id });
      }
      if (w.after && (w.after as { workspaceId: string }).workspaceId !== this.workspaceId) {
        throw new DomainError('CONFLICT', `A write to ${w.collection}/${w.id} names another workspace.`);
      }
    }
    for (const w of writes) {
      const t = this.db.rows(w.collection);
      if (w.after) t.set(w.id, { doc: structuredClone(w.after), deleted: false });
      else {
        const r = t.get(w.id);
        if (r) t.set(w.id, { doc: r.doc, deleted: true });
      }
    }
    this.db.commits++;
  }
}
