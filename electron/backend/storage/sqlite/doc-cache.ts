/**
 * The parsed documents read or written last, by id, at most `capacity` of them: reading a document
 * again (a table scrolled back, the lead panel reopened, RxDB's conflict checks before a write)
 * skips SQLite and JSON.parse. Every write goes through this process (it owns the file), so an
 * entry is always the stored document; a write replaces it, a purge removes it.
 */
export class DocCache<T> {
  private readonly docs = new Map<string, T>();

  constructor(readonly capacity: number) {}

  get(id: string): T | undefined {
    const doc = this.docs.get(id);
    if (doc !== undefined) {
      // Most recently used last: a Map iterates in insertion order, so the oldest goes first.
      this.docs.delete(id);
      this.docs.set(id, doc);
    }
    return doc;
  }

  set(id: string, doc: T): void {
    if (this.capacity <= 0) return;
    this.docs.delete(id);
    this.docs.set(id, doc);
    if (this.docs.size > this.capacity) {
      const oldest = this.docs.keys().next();
      if (!oldest.done) this.docs.delete(oldest.value);
    }
  }

  delete(id: string): void {
    this.docs.delete(id);
  }

  clear(): void {
    this.docs.clear();
  }

  get size(): number {
    return this.docs.size;
  }
}
