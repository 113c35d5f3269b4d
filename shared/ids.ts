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

export const timeOrderedIds: Ids = { uuid: () => v7() };
