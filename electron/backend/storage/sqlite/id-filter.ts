/**
 * Which ids a documents table may hold, so that a read of ids it cannot hold needs no statement.
 *
 * An initial sync reads every pulled id four times before it is written (RxDB's replication reads
 * the page's ids in the collection and its meta rows in the meta instance, then each write checks
 * them again: doc-table.ts `get`), each time one statement over 2,000 ids of a growing unique index
 * that finds none of them. A table that was empty when this process opened it holds only ids this
 * process wrote (it owns the file, and every row of a documents table is written by DocTable), so a
 * Bloom filter of the ids written since says exactly which ids it does not hold: a "no" is always
 * right; a "maybe" (every id written, plus a few percent of the others) is read as before. Ids are
 * added when their row is written, before the commit: a rolled-back write leaves a "maybe", never a
 * wrong "no"; a purged or dropped row leaves one too.
 *
 * Layers of doubling size (a filter cannot grow in place): a "no" is a "no" of every layer. Each
 * layer holds up to its capacity at BITS_PER_ID bits an id, PROBES bits set per id (under 1% false
 * "maybe"s when full, a few percent over all layers); 1.25-2.5 bytes per id held (0.3 MiB at 100k
 * ids). Past MAX_IDS the filter is dropped (the table reads as before).
 */

import { fnv1a } from './index-columns.ts';

const BITS_PER_ID = 10;
const PROBES = 7;
const FIRST_CAPACITY = 1 << 14;

/** The most ids a filter holds before it is given up (its layers then take ~5 MiB). */
const MAX_IDS = 1 << 21;

type Layer = { bits: Int32Array; size: number; capacity: number; count: number };

/** FNV-1a of the id and a second hash mixed from it (murmur3's finalizer), odd, for double hashing. */
function hashes(id: string, out: Int32Array): void {
  const h = fnv1a(id);
  let g = h ^ (h >>> 16);
  g = Math.imul(g, 0x85ebca6b);
  g ^= g >>> 13;
  g = Math.imul(g, 0xc2b2ae35);
  g ^= g >>> 16;
  out[0] = h;
  out[1] = g | 1;
}

const scratch = new Int32Array(2);

function layer(capacity: number): Layer {
  const size = capacity * BITS_PER_ID;
  return { bits: new Int32Array(Math.ceil(size / 32)), size, capacity, count: 0 };
}

/** The i-th bit of an id's hashes in a layer: the top 24 bits of the double hash scaled to the
 * layer's size (exact in a double: the product stays under 2^53). */
const bitOf = (l: Layer, h: number, g: number, i: number): number => Math.floor((((h + Math.imul(i, g)) >>> 8) * l.size) / 16_777_216);

function has(l: Layer, h: number, g: number): boolean {
  for (let i = 0; i < PROBES; i++) {
    const bit = bitOf(l, h, g, i);
    if (((l.bits[bit >>> 5] as number) & (1 << (bit & 31))) === 0) return false;
  }
  return true;
}

export class IdFilter {
  private readonly layers: Layer[] = [layer(FIRST_CAPACITY)];
  private ids = 0;

  /** Bytes of its bit arrays. */
  get bytes(): number {
    return this.layers.reduce((n, l) => n + l.bits.byteLength, 0);
  }

  /** Whether the filter is full (MAX_IDS): the table must then read every id. */
  get full(): boolean {
    return this.ids >= MAX_IDS;
  }

  add(id: string): void {
    hashes(id, scratch);
    const h = scratch[0] as number;
    const g = scratch[1] as number;
    let last = this.layers[this.layers.length - 1] as Layer;
    if (last.count >= last.capacity) this.layers.push((last = layer(last.capacity * 2)));
    for (let i = 0; i < PROBES; i++) {
      const bit = bitOf(last, h, g, i);
      last.bits[bit >>> 5] = (last.bits[bit >>> 5] as number) | (1 << (bit & 31));
    }
    last.count++;
    this.ids++;
  }

  /** False only for an id never added. */
  mayHold(id: string): boolean {
    hashes(id, scratch);
    const h = scratch[0] as number;
    const g = scratch[1] as number;
    for (const l of this.layers) if (has(l, h, g)) return true;
    return false;
  }
}
