/**
 * A CPU profile of this thread over a stretch of a benchmark (BENCH_PROFILE=<dir>), written as
 * `<dir>/<name>.cpuprofile` for test/bench/support/profile-summary.ts.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';

/** Starts profiling when `dir` is set; the returned function stops and writes `<dir>/<name>.cpuprofile`
 * (and does nothing when `dir` is not set). */
export async function startCpuProfile(dir: string | undefined, name: string): Promise<() => Promise<void>> {
  if (!dir) return async () => undefined;
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return async () => {
    const { profile } = await session.post('Profiler.stop');
    writeFileSync(join(dir, `${name}.cpuprofile`), JSON.stringify(profile));
    session.disconnect();
  };
}
