/** What the desktop benchmark and its child processes measure alike (test/bench/desktop.bench.ts,
 * test/bench/support/desktop-child.ts). Kept free of other imports: the child bundles it. */

/** The server's largest pull page (MAX_PULL_LIMIT in sync-server/replication.ts), used by the raw
 * baseline and the replication alike. */
export const PULL_BATCH = 2000;

/** CPU time (user + system) this process used since `from`, in ms: on a loaded machine, close to
 * what the wall time would be on an idle core for single-threaded work. */
export const cpuMs = (from: NodeJS.CpuUsage): number => {
  const d = process.cpuUsage(from);
  return (d.user + d.system) / 1000;
};
