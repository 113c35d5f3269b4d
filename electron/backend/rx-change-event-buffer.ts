/**
 * RxDB keeps each collection's latest change events (its ChangeEventBuffer, `limit` = 100) so that a
 * query it already ran can update its result from them instead of asking the storage again. A write
 * of more events than the limit is kept whole (rxdb 17.6, `_handleChangeEvents`:
 * `events.slice(events.length * -1)`), so every collection holds the events of its last large write
 * until the next write, each with its document: after an initial sync, the leads of the last pulled
 * page (1,750-2,000 documents, 2.3 MB of the backend's 31 MB of live objects after a 100k sync, and
 * 2.0-3.4 MB all through it, the counters' WeakMap included). The desktop's reads go through the
 * Store, not RxDB's queries, so those events serve nobody.
 *
 * boundChangeEventBuffer keeps the last `limit` events of such a write, numbered as RxDB numbers
 * them: a query whose last seen event is older than the oldest kept one gets `getFrom` null and runs
 * again against the storage, as it does when smaller writes have pushed its events out. These are
 * RxDB internals, not API: test/unit/rx-change-event-buffer.test.ts fails if an RxDB upgrade renames
 * them (the buffer would again keep a whole write, or count wrong).
 */
import type { RxCollection, RxStorageChangeEvent } from 'rxdb';

type ChangeEventBuffer = RxCollection['_changeEventBuffer'];
type Event = RxStorageChangeEvent<unknown>;

/** The buffer's private fields this relies on (rxdb's change-event-buffer.js). */
type BufferInternals = {
  limit: number;
  counter: number;
  buffer: Event[];
  eventCounterMap: WeakMap<Event, number>;
  _handleChangeEvents(events: Event[]): void;
};

function hasInternals(b: object): b is BufferInternals {
  const i: Partial<Record<keyof BufferInternals, unknown>> = b;
  return typeof i.limit === 'number' && typeof i.counter === 'number' && Array.isArray(i.buffer) && i.eventCounterMap instanceof WeakMap && typeof i._handleChangeEvents === 'function';
}

/** Makes `b` keep at most its `limit` latest events, however many one write brings; false (the
 * buffer left as RxDB keeps it: more memory, the same answers) when its fields are not the ones
 * this module knows. An RxDB upgrade that renames them fails rx-change-event-buffer.test.ts; a
 * user's database still opens. */
export function boundChangeEventBuffer(b: ChangeEventBuffer): boolean {
  const i: object = b;
  if (!hasInternals(i)) return false;
  i.buffer = i.buffer.slice(-i.limit);
  i._handleChangeEvents = (events: Event[]): void => {
    const kept = events.length > i.limit ? events.slice(-i.limit) : events;
    const first = i.counter + 1 + events.length - kept.length;
    i.counter += events.length;
    i.buffer = kept === events ? i.buffer.concat(events).slice(-i.limit) : kept;
    kept.forEach((e, k) => i.eventCounterMap.set(e, first + k));
  };
  return true;
}
