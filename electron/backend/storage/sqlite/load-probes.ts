/**
 * The look-ups of a person while a bulk load has left the identity keys' indexes out (store-columns.ts
 * AfterLoad 'probed'; doc-table.ts, "loading"). An import of 100k rows writes them in calls of
 * 5,000, and every call looks up its people among the leads of the calls before, one `in` probe
 * per key kind (shared/intake/find.ts): kept up row by row, the three key indexes (random keys)
 * were a large part of what SQLite spent per imported lead; without them, each probe would read the
 * whole table.
 *
 * Instead the table keeps, per such column, a map from a 32-bit hash of a stored value to the rows
 * holding it (open addressing in typed arrays: no object per entry, nothing for the garbage
 * collector to trace), and the Store's query planning (store-query.ts `drivers`) reads a probe's
 * candidate rows from it by rowid, testing the column's condition in SQL on each. The map only has
 * to hold every live row under its current value: entries left by a row written again with another
 * value, deleted or purged, a rolled-back write or a hash collision are candidates SQL refuses, so
 * it is never cleaned, only added to. It is filled from the table when the first probe comes
 * (after the load's first write, or after a reopen of a file whose load a quit cut short), from
 * the Store column values every write computes anyway, and dropped when the index is built.
 *
 * Bounded: kept for a table of up to PROBE_ROWS rows. Cost: 8 bytes per slot, at most half the
 * slots in use, so 16-32 bytes per key; at 100k leads with three keys each, 2 MiB per key (6 MiB).
 */

/** The most rows (the table's largest rowid) a map is kept for: ~12 MiB at three keys a row. */
export const PROBE_ROWS = 200_000;

/** The bound in force (tests of a load that outgrows it lower it). */
export const PROBE_TUNING = { rows: PROBE_ROWS };

/** A multimap from 32-bit hashes to rowids, insert-only (see the file comment). */
export class RowsByHash {
  private hashes: Int32Array;
  /** Rowids; 0 is an empty slot (rowids start at 1). */
  private rows: Uint32Array;
  private used = 0;

  constructor(capacity = 1024) {
    const slots = 2 ** Math.ceil(Math.log2(Math.max(16, capacity * 2)));
    this.hashes = new Int32Array(slots);
    this.rows = new Uint32Array(slots);
  }

  /** Entries held. */
  get size(): number {
    return this.used;
  }

  /** Bytes of its arrays. */
  get bytes(): number {
    return this.hashes.byteLength + this.rows.byteLength;
  }

  /** Files `rowid` under `hash` (once: the same pair again is not added). */
  add(hash: number, rowid: number): void {
    if (!Number.isInteger(rowid) || rowid < 1 || rowid > 0xffffffff) throw new RangeError(`rowid ${rowid} out of the probe map's range`);
    if ((this.used + 1) * 2 > this.rows.length) this.grow();
    const mask = this.rows.length - 1;
    for (let i = hash & mask; ; i = (i + 1) & mask) {
      const r = this.rows[i] as number;
      if (r === 0) {
        this.hashes[i] = hash;
        this.rows[i] = rowid;
        this.used++;
        return;
      }
      if (r === rowid && this.hashes[i] === hash) return;
    }
  }

  /** Adds the rowids filed under `hash` to `into`. */
  find(hash: number, into: Set<number>): void {
    const mask = this.rows.length - 1;
    for (let i = hash & mask; ; i = (i + 1) & mask) {
      const r = this.rows[i] as number;
      if (r === 0) return;
      if (this.hashes[i] === hash) into.add(r);
    }
  }

  private grow(): void {
    const hashes = this.hashes;
    const rows = this.rows;
    this.hashes = new Int32Array(hashes.length * 2);
    this.rows = new Uint32Array(rows.length * 2);
    this.used = 0;
    for (let i = 0; i < rows.length; i++) if (rows[i] !== 0) this.add(hashes[i] as number, rows[i] as number);
  }
}
