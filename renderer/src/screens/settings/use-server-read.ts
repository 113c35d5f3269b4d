/** A read the sync server answers (server-only operations: webhooks, API keys), fetched again when
 * `revision` changes; its data is not in the local database, so it cannot be subscribed to. */
import { useEffect, useState } from 'react';
import type { OpInput, OpName, OpOutput } from '../../../../shared/ops/index.ts';
import { errorText, run } from '../../lib/ops.ts';

export function useServerRead<N extends OpName>(op: N, input: OpInput<N>, revision: number): { data: OpOutput<N> | null; error: string | null } {
  const [data, setData] = useState<OpOutput<N> | null>(null);
  const [error, setError] = useState<string | null>(null);
  const key = JSON.stringify(input);
  useEffect(() => {
    let stale = false;
    run(op, JSON.parse(key) as OpInput<N>).then(
      (r) => {
        if (stale) return;
        setData(r);
        setError(null);
      },
      (e: unknown) => !stale && setError(errorText(e)),
    );
    return () => {
      stale = true;
    };
  }, [op, key, revision]);
  return { data, error };
}
