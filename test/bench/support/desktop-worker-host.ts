/**
 * The desktop benchmark's host for a sync in a worker thread (test/bench/desktop.bench.ts bundles it
 * beside desktop-child.ts and runs it with plain node):
 *   desktop-worker-host CHILD_BUNDLE YOUNG_MB OLD_MB URL KEY DIR
 * starts CHILD_BUNDLE's `sync-child` in a worker thread whose isolate's young and old generations
 * are capped (`resourceLimits`; 0 for V8's default), as the Electron main process hosts the backend
 * (electron/backend/backend-thread.ts), and prints its result as `RESULT <json>`. This thread loads
 * nothing of the backend (as main's bundle does not), so the process's memory is the backend's
 * isolate and thread plus a bare node thread. Kept free of the app's imports for that reason.
 */
import { getHeapStatistics } from 'node:v8';
import { Worker } from 'node:worker_threads';
import type { SyncResult } from './desktop-child.ts';

async function main(): Promise<SyncResult> {
  const [childBundle, young, old, url, key, dir] = process.argv.slice(2);
  if (!childBundle || !young || !old || !url || !key || !dir) throw new Error('usage: desktop-worker-host CHILD_BUNDLE YOUNG_MB OLD_MB URL KEY DIR');
  const youngMb = Number(young);
  const oldMb = Number(old);
  const worker = new Worker(childBundle, {
    workerData: { args: ['sync-child', url, key, dir] },
    // A limit left out is V8's default (an explicit 0 old generation would be no heap at all).
    resourceLimits: { ...(youngMb > 0 ? { maxYoungGenerationSizeMb: youngMb } : {}), ...(oldMb > 0 ? { maxOldGenerationSizeMb: oldMb } : {}) },
  });
  const result = await new Promise<SyncResult>((resolve, reject) => {
    worker.once('message', (m: SyncResult) => resolve(m));
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`the sync worker exited (${code}) without a result`)));
  });
  await worker.terminate();
  const own = getHeapStatistics();
  return { ...result, worker: { youngMb, oldMb, mainHeapTotal: own.total_physical_size, mainHeapUsed: own.used_heap_size } };
}

main().then(
  (result) => process.stdout.write(`RESULT ${JSON.stringify(result)}\n`),
  (e: unknown) => {
    process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  },
);
