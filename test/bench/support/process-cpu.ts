import { readFileSync } from 'node:fs';

/** CPU time another process has used (user + system), in ms, from /proc (Linux; null elsewhere or
 * once it has ended): what a server process spends on a benchmark's requests, whatever else shares
 * the machine. Clock ticks are 100 a second on Linux (USER_HZ). */
export function processCpuMs(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    // utime and stime: fields 14 and 15 of stat, 12 and 13 after the command name.
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return null;
  }
}
