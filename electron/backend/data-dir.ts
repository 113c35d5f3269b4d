/** Where the desktop keeps its data. Its own module so that the Electron main process, which only
 * hosts the backend's thread (backend-thread.ts), does not load the session's modules to find it. */
import { homedir } from 'node:os';
import { join } from 'node:path';

/** The data folder: DATA_DIR, else ~/.outreach-crm. */
export function defaultDataDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.DATA_DIR && env.DATA_DIR.trim() !== '' ? env.DATA_DIR : join(homedir(), '.outreach-crm');
}
