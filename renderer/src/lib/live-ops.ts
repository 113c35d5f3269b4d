/** Live subscriptions to read operations, shared by everyone asking for the same operation and input
 * (one backend subscription each), without React: `useOp` (ops.ts) is built on them, and the page's
 * entry asks through them for what the first screen shows before React has loaded (first-rows.ts). */
import type { Result } from '../../../electron/bridge.ts';
import type { OpInput, OpName } from '../../../shared/ops/index.ts';
import { bridge } from '../bridge/index.ts';

type Shared = { listeners: Set<(r: Result<unknown>) => void>; last: Result<unknown> | null; stop: () => void };
const shared = new Map<string, Shared>();

/** The key of an operation and input (inputs compare by value). */
export const liveKey = (op: OpName, input: unknown): string => `${op} ${JSON.stringify(input)}`;

/** The last answer of a live subscription to `key`, if one is live and has answered. */
export function peekLive(key: string): Result<unknown> | null {
  return shared.get(key)?.last ?? null;
}

/** Listens to `op` with `input`: the listener hears the last answer at once when there is one, then
 * every new one. The backend subscription ends with its last listener. */
export function subscribeLive(op: OpName, input: unknown, key: string, listener: (r: Result<unknown>) => void): () => void {
  let entry = shared.get(key);
  if (!entry) {
    const created: Shared = { listeners: new Set(), last: null, stop: () => undefined };
    created.stop = bridge.subscribe(op, input as OpInput<OpName>, (r) => {
      created.last = r as Result<unknown>;
      for (const l of created.listeners) l(r as Result<unknown>);
    });
    shared.set(key, created);
    entry = created;
  }
  entry.listeners.add(listener);
  if (entry.last) listener(entry.last);
  const e = entry;
  return () => {
    e.listeners.delete(listener);
    if (e.listeners.size === 0) {
      e.stop();
      shared.delete(key);
    }
  };
}
