/**
 * Import benchmark on the desktop's local database (RxDB on the SQLite storage): a 100k-row CSV export (Apollo-like columns) imported as the import dialog does it (read and
 * map the file once, then campaigns.leads.import in calls of 5,000 rows, each input passed through
 * JSON as the bridge does), into an empty list, then again into the now full list (every row an
 * existing lead). Baseline in the same run: papaparse alone parsing the same text. Targets (issue
 * "One person, one lead"): the 100k-row import into an empty list <= 8 s, the re-import <= 5 s. `npx tsx test/bench/import.bench.ts` runs it alone. BENCH_PROFILE=<dir>
 * writes each pass's CPU profile there (`import-first.cpuprofile`, `import-again.cpuprofile`; read
 * them with test/bench/support/profile-summary.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import Papa from 'papaparse';
import { limitYoungGeneration, openLocalDatabase } from '../../electron/backend/local-db.ts';
import { suggestMapping } from '../../shared/import/fields.ts';
import { MAX_IMPORT_ROWS, readCsvBytes } from '../../shared/import/file.ts';
import { timeOrderedIds } from '../../shared/ids.ts';
import { execute } from '../../shared/ops/execute.ts';
import type { OpInput } from '../../shared/ops/index.ts';
import { workspaceCreation } from '../../shared/workspace-setup.ts';
import { nodeSecrets } from '../../sync-server/secrets.ts';
import { startCpuProfile } from './support/cpu-profile.ts';
import { generatedExport } from './support/generated-export.ts';

const ROWS = Number(process.env.BENCH_IMPORT_ROWS ?? 100_000);
/** Seconds: into an empty list, and again with every row an existing lead. */
const TARGET_S = { fill: 8, again: 5 };
const PROFILE_DIR = process.env.BENCH_PROFILE;
const line = (s: string) => process.stdout.write(`${s}\n`);

/** cpuSeconds: the process's (the file's worker thread too: index builds, checkpoints); mainCpuSeconds: this thread's. */
type Pass = { seconds: number; cpuSeconds: number; mainCpuSeconds: number; created: number; unchanged: number };

export async function run(): Promise<{ rows: number; parseSeconds: number; firstImport: Pass; reimport: Pass }> {
  // The young generation as the app keeps it (openLocalDatabase sets this too, but only after the
  // export below was generated and parsed, which had grown it to its maximum, ~130 MB: an import
  // with far fewer scavenges than the app's backend makes).
  limitYoungGeneration();
  const csv = generatedExport(ROWS);
  const bytes = new TextEncoder().encode(csv);
  line(`import bench: ${ROWS.toLocaleString('en')} rows, ${(bytes.length / 1e6).toFixed(1)} MB of CSV`);

  // Baseline: papaparse alone over the same text.
  const t0 = performance.now();
  const raw = Papa.parse<string[]>(csv, { skipEmptyLines: false });
  const parseSeconds = (performance.now() - t0) / 1000;
  if (raw.data.length < ROWS) throw new Error('baseline parse lost rows');
  line(`baseline  raw papaparse of the text      ${parseSeconds.toFixed(2)} s   ${Math.round(ROWS / parseSeconds).toLocaleString('en')} rows/s`);

  const dir = mkdtempSync(join(tmpdir(), 'import-bench-'));
  // The desktop backend's ids (shared/ids.ts), as the app's import makes them.
  const ids = timeOrderedIds;
  const w = workspaceCreation(ids, new Date().toISOString(), { name: 'Import bench', owner: { name: 'Owner', email: 'owner@bench.test' }, subscriptionStatus: 'active' });
  const actor = { workspaceId: w.workspaceId, memberId: w.ownerId, role: 'owner' as const };
  const db = await openLocalDatabase({ dir, workspaceId: w.workspaceId, actor });
  try {
    await db.store.commit(w.writes);
    const env = { actor, store: db.store, clock: { now: () => new Date() }, ids, random: Math.random, secrets: nodeSecrets };

    /** What the import dialog does with a picked file: read it once, then send it in calls. */
    async function importAll(onExisting: 'fill_empty' | 'update', profileName: string): Promise<Pass> {
      const stopProfile = await startCpuProfile(PROFILE_DIR, profileName);
      const start = performance.now();
      const cpu = process.cpuUsage();
      const mainCpu = process.threadCpuUsage();
      const file = readCsvBytes(bytes);
      const mapping = suggestMapping(file.headers, file.records.slice(0, 50).map((r) => r.cells));
      let created = 0;
      let unchanged = 0;
      for (let at = 0; at < file.records.length; at += MAX_IMPORT_ROWS) {
        const part = file.records.slice(at, at + MAX_IMPORT_ROWS);
        const rows = part.map((r) => Object.fromEntries(file.headers.map((h, i) => [h, r.cells[i] ?? ''])));
        const input: OpInput<'campaigns.leads.import'> = { leadGroupId: w.leadGroupId, rows, rowNumbers: part.map((r) => r.row), mapping, onExisting };
        // The bridge moves inputs and answers as JSON.
        const out = await execute('campaigns.leads.import', JSON.parse(JSON.stringify(input)), env);
        JSON.parse(JSON.stringify(out));
        created += out.totals.created;
        unchanged += out.totals.unchanged;
      }
      const used = process.cpuUsage(cpu);
      const mainUsed = process.threadCpuUsage(mainCpu);
      const seconds = (performance.now() - start) / 1000;
      await stopProfile();
      return { seconds, cpuSeconds: (used.user + used.system) / 1e6, mainCpuSeconds: (mainUsed.user + mainUsed.system) / 1e6, created, unchanged };
    }

    const firstImport = await importAll('fill_empty', 'import-first');
    if (firstImport.created !== ROWS) throw new Error(`expected ${ROWS} created, got ${firstImport.created}`);
    const verdict = (s: number, target: number) => (s <= target ? `within the ${target} s target` : `OVER the ${target} s target`);
    line(`import    into an empty list              ${firstImport.seconds.toFixed(2)} s   ${Math.round(ROWS / firstImport.seconds).toLocaleString('en')} rows/s   ${(firstImport.seconds / parseSeconds).toFixed(1)}x baseline   ${verdict(firstImport.seconds, TARGET_S.fill)} (cpu ${firstImport.cpuSeconds.toFixed(2)} s, main thread ${firstImport.mainCpuSeconds.toFixed(2)} s)`);
    const reimport = await importAll('update', 'import-again');
    if (reimport.unchanged !== ROWS) throw new Error(`expected ${ROWS} unchanged, got ${reimport.unchanged}`);
    line(`re-import every row an existing lead      ${reimport.seconds.toFixed(2)} s   ${Math.round(ROWS / reimport.seconds).toLocaleString('en')} rows/s   ${(reimport.seconds / parseSeconds).toFixed(1)}x baseline   ${verdict(reimport.seconds, TARGET_S.again)} (cpu ${reimport.cpuSeconds.toFixed(2)} s, main thread ${reimport.mainCpuSeconds.toFixed(2)} s)`);
    return { rows: ROWS, parseSeconds, firstImport, reimport };
  } finally {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await run();
