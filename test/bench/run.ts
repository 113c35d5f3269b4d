/** `npm run bench`: runs every test/bench/*.bench.ts in sequence, each in a process of its own (a
 * benchmark must not inherit the heap another one left behind: the import measured 12.5 s after the
 * desktop benchmark in one process and 10.5 s alone). Each file runs its `run()` when started
 * directly and prints its own lines. Names given on the command line select files
 * (`npm run bench -- server`). A failing benchmark is reported and the others still run. */
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = fileURLToPath(new URL('.', import.meta.url));
const wanted = process.argv.slice(2);
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => wanted.length === 0 || wanted.some((w) => f.includes(w)))
  .sort();

let failed = 0;
for (const file of files) {
  process.stdout.write(`\n== ${file} ==\n`);
  const started = performance.now();
  const code = await new Promise<number | null>((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(dir, file)], { stdio: 'inherit' });
    child.once('error', () => resolve(null));
    child.once('exit', (c) => resolve(c));
  });
  if (code === 0) process.stdout.write(`-- ${file} done in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
  else {
    failed++;
    process.stdout.write(`!! ${file} failed (exit code ${code ?? 'none'})\n`);
  }
}
if (files.length === 0) process.stdout.write('No benchmark matched.\n');
process.exitCode = failed > 0 ? 1 : 0;
