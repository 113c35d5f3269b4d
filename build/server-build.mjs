/* global process, URL */
/**
 * `npm run build`: compiles the sync server and the headless desktop to JavaScript in dist/, so
 * production runs them with plain `node` (no tsx, no dev dependencies):
 *
 *   dist/sync-server/cli.js           npm run start:server, or node dist/sync-server/cli.js [command]
 *   dist/sync-server/migrations/      the SQL migrations, found beside cli.js
 *   dist/electron/backend/headless.js node dist/electron/backend/headless.js --server URL ...
 *
 * Our TypeScript is bundled (esbuild: type annotations stripped, no type checking: `npm run typecheck`
 * does that); every package from node_modules stays an import, so native modules (better-sqlite3)
 * and packages that load files beside themselves (PGlite's WebAssembly) work as installed. esbuild is
 * a production dependency so `npm ci --omit=dev && npm run build` works. Plain JavaScript on purpose:
 * it must run before anything is compiled.
 */
import { cp, rm } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const out = `${root}dist`;

await rm(out, { recursive: true, force: true });
const result = await build({
  absWorkingDir: root,
  entryPoints: ['sync-server/cli.ts', 'electron/backend/headless.ts'],
  outdir: 'dist',
  outbase: '.',
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node22.12',
  packages: 'external',
  sourcemap: 'linked',
  banner: { js: '#!/usr/bin/env node' },
  logLevel: 'warning',
  metafile: true,
});
await cp(`${root}sync-server/migrations`, `${out}/sync-server/migrations`, { recursive: true });
const bytes = Object.entries(result.metafile.outputs)
  .filter(([f]) => f.endsWith('.js'))
  .map(([f, o]) => `${f} (${Math.round(o.bytes / 1024)} KiB)`);
process.stdout.write(`build: ${bytes.join(', ')}, sync-server/migrations\n`);
