/** `npm run bench`: runs every test/bench/*.bench.ts in sequence. Each file exports
 * `async function run(): Promise<void>` that prints its own lines. Names given on the command line
 * select files (`npm run bench -- server`). A failing benchmark is reported and the others still run. */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

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
  try {
    const mod = (await import(pathToFileURL(join(dir, file)).href)) as { run?: () => Promise<void> };
    if (typeof mod.run !== 'function') throw new Error(`${file} does not export run()`);
    await mod.run();
    process.stdout.write(`-- ${file} done in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
  } catch (e) {
    failed++;
    process.stdout.write(`!! ${file} failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  }
}
if (files.length === 0) process.stdout.write('No benchmark matched.\n');
process.exitCode = failed > 0 ? 1 : 0;
