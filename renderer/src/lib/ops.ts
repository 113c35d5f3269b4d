/** How screens use operations: `run` (a call that throws an OpError the screen shows next to the
 * control that caused it) and `useOp` (a live subscription that re-renders when the data changes). */
import { useEffect, useRef, useState } from 'react';
import type { BridgeError, Result } from '../../../electron/bridge.ts';
import type { OpInput, OpName, OpOutput } from '../../../shared/ops/index.ts';
import { bridge } from '../bridge/index.ts';
import { liveKey, peekLive, subscribeLive } from './live-ops.ts';

export class OpError extends Error {
  readonly code: BridgeError['code'];
  readonly details: BridgeError['details'];
  constructor(e: BridgeError) {
    super(e.message);
    this.name = 'OpError';
    this.code = e.code;
    this.details = e.details;
  }
}

export function unwrap<T>(r: Result<T>): T {
  if (r.ok) return r.value;
  throw new OpError(r.error);
}

/** Calls an operation; resolves with its answer or throws an OpError. */
export async function run<N extends OpName>(op: N, input: OpInput<N>): Promise<OpOutput<N>> {
  return unwrap(await bridge.call(op, input));
}

/** A sentence for any failure, for showing next to what caused it. */
export function errorText(e: unknown): string {
  if (e instanceof OpError) return e.message;
  if (e instanceof Error) return e.message;
  return String(e);
}

export type Live<T> = { data: T | undefined; error: OpError | null; loading: boolean };

/** Subscribes to a read operation while the component is mounted; `input` null means "not now".
 * The input is compared by value, so callers can build it inline. */
export function useOp<N extends OpName>(op: N, input: OpInput<N> | null): Live<OpOutput<N>> {
  const key = input === null ? null : liveKey(op, input);
  // An answer already held for the same input (another view's, or the one the page asked for
  // before React loaded: first-rows.ts) is drawn at once, not one render later.
  const [state, setState] = useState<Live<OpOutput<N>>>(() => {
    const held = key === null ? null : peekLive(key);
    return held?.ok ? { data: held.value as OpOutput<N>, error: null, loading: false } : { data: undefined, error: null, loading: input !== null };
  });
  const inputRef = useRef(input);
  inputRef.current = input;
  useEffect(() => {
    const current = inputRef.current;
    if (key === null || current === null) {
      setState({ data: undefined, error: null, loading: false });
      return;
    }
    setState((s) => ({ ...s, loading: true }));
    return subscribeLive(op, current, key, (r) => {
      if (r.ok) setState({ data: r.value as OpOutput<N>, error: null, loading: false });
      else setState((s) => ({ data: s.data, error: new OpError(r.error), loading: false }));
    });
  }, [op, key]);
  return state;
}

/** Tracks one user action: its pending state and the error to show beside its button. */
export function useAction(): {
  busy: boolean;
  error: string | null;
  clear: () => void;
  act: <T>(fn: () => Promise<T>) => Promise<T | undefined>;
} {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  return {
    busy,
    error,
    clear: () => setError(null),
    async act(fn) {
      setBusy(true);
      setError(null);
      try {
        return await fn();
      } catch (e) {
        setError(errorText(e));
        return undefined;
      } finally {
        setBusy(false);
      }
    },
  };
}
