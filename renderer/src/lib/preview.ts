/** A bulk operation previewed with a dry run whenever its input changes, then run for real on
 * confirmation: the counts a user approves are the counts the real call computes. */
import { useEffect, useState } from 'react';
import type { OpInput, OpOutput } from '../../../shared/ops/index.ts';
import { errorText, run } from './ops.ts';

type PreviewedOp = 'campaigns.leads.bulkEnrollInCampaign' | 'campaigns.leads.bulkChangeSender';

export function usePreviewedAction<N extends PreviewedOp>(op: N, input: OpInput<N> | null, debounceMs = 0) {
  const [preview, setPreview] = useState<OpOutput<N> | null>(null);
  const [previewError, setPreviewError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const key = input === null ? null : JSON.stringify(input);

  useEffect(() => {
    setPreview(null);
    setPreviewError(null);
    if (input === null) return;
    let stale = false;
    const t = setTimeout(() => {
      run(op, { ...input, dryRun: true } as OpInput<N>).then(
        (r) => !stale && setPreview(r),
        (e: unknown) => !stale && setPreviewError(errorText(e)),
      );
    }, debounceMs);
    return () => {
      stale = true;
      clearTimeout(t);
    };
  }, [op, key]);

  /** Runs the operation for real; the answer, or null with `error` set. */
  async function confirm(): Promise<OpOutput<N> | null> {
    if (input === null) return null;
    setBusy(true);
    setError(null);
    try {
      return await run(op, { ...input, dryRun: false } as OpInput<N>);
    } catch (e) {
      setError(errorText(e));
      return null;
    } finally {
      setBusy(false);
    }
  }

  return { preview, previewError, busy, error, confirm };
}
