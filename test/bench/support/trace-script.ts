import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * What the bench's trace scripts (first-rows-trace.ts, scroll-trace.ts) share: a Chromium trace
 * event as `browser.stopTracing()` gives it, and their command line `<dataDir> [leads] [n]`.
 */

/** One event of a Chromium trace (the fields these scripts read). */
export type TraceEvent = {
  name: string;
  cat: string;
  ph: string;
  ts: number;
  dur?: number;
  /** The thread's CPU time of a complete event, where the trace has it. */
  tdur?: number;
  pid: number;
  tid: number;
  args?: Record<string, unknown> & { data?: Record<string, unknown>; name?: string };
};

/** The script's arguments: the app's data folder, the leads to seed (100,000) and how many
 * measurements (`nName` says what they are; `nDefault` of them). Exits with the usage line when the
 * folder is missing; seeds the folder (seed-generated.ts) when it holds no workspace yet, and keeps
 * it for later runs. */
export function traceScriptArgs(script: string, nName: string, nDefault: number): { dataDir: string; leads: number; n: number } {
  const [dataDir, leadsArg, nArg] = process.argv.slice(2);
  if (!dataDir) {
    console.error(`usage: ${script} <dataDir> [leads] [${nName}]`);
    process.exit(2);
  }
  const leads = Number(leadsArg ?? 100_000);
  const seeded = existsSync(dataDir) && readdirSync(dataDir, { recursive: true, encoding: 'utf8' }).some((f) => f.endsWith('.rxdb.sqlite'));
  if (!seeded) execFileSync(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'seed-generated.ts'), dataDir, String(leads)], { stdio: 'inherit' });
  return { dataDir, leads, n: Number(nArg ?? nDefault) };
}
