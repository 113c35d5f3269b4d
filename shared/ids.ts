/**
 * The ids every host gives new documents: UUIDv7 (RFC 9562), time-ordered, so each store's unique
 * id index (the desktop's SQLite tables, the replication meta table, PostgreSQL's and PGlite's
 * primary keys) takes a new row at its end instead of at a random leaf page. The `uuid` package
 * keeps them monotonic within a process (a counter in the random bits when the millisecond repeats),
 * so ids made one after another sort in the order they were made.
 *
 * An id is not a secret: 48 of its bits are the time it was made. Keys, tokens and nonces come from
 * the host's random bytes (Secrets.randomBytes) instead.
 */
import { v7 } from 'uuid';
import type { Ids } from './context.ts';

/** Ids whose random bytes are drawn at once: the package asks the host for 16 bytes per id
 * (`crypto.getRandomValues`, a call into the runtime each time: 5-50 µs on this machine, so ~25-250
 * ms of an import call's 5,000 new leads), this asks for 256 ids' worth in one call. */
const POOL_IDS = 256;
const pool = new Uint8Array(16 * POOL_IDS);
let drawn = POOL_IDS;
/** The package's monotonic rule, which it keeps only for ids whose random bytes it draws itself:
 * a new millisecond starts the counter at 31 random bits, an id in the same millisecond (or an
 * earlier one: the clock went back) takes the counter plus one, and a counter that wraps moves on
 * to the next millisecond. So ids stay ascending in the order they are made. */
const last = { msecs: -Infinity, seq: 0 };

function uuid(): string {
  if (drawn === POOL_IDS) {
    crypto.getRandomValues(pool);
    drawn = 0;
  }
  const random = pool.subarray(drawn * 16, drawn * 16 + 16);
  drawn++;
  // The id's own timestamp, which the package read from the same clock: part of the id, not of
  // what an operation decides (operations read time from ctx.clock).
  // eslint-disable-next-line no-restricted-properties
  const now = Date.now();
  if (now > last.msecs) {
    last.msecs = now;
    last.seq = (((random[6] as number) & 0x7f) << 24) | ((random[7] as number) << 16) | ((random[8] as number) << 8) | (random[9] as number);
  } else {
    last.seq = (last.seq + 1) | 0;
    if (last.seq === 0) last.msecs++;
  }
  return v7({ random, msecs: last.msecs, seq: last.seq });
}

export const timeOrderedIds: Ids = { uuid };
