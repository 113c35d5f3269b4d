/* global process, URL */
/**
 * Makes package-lock.json acceptable to `npm ci` on any machine.
 *
 * npm 11 leaves out of the lock the optional packages it cannot resolve for other platforms (here,
 * @rollup/rollup-<os>-<cpu> beside vite's rollup; the registry this project is built against does not
 * serve other platforms' builds), and `npm ci` then refuses the lock: "Missing: @rollup/rollup-… from
 * lock file". This lists each missing optional dependency in the lock at the version its parent pins,
 * marked optional (and dev when its parent is), with the os/cpu/libc its name states. `npm ci` then
 * skips those not for this machine, and fetches the right one from the registry on the others.
 * Run after any `npm install` that changes the lock:  node build/fix-lock.mjs
 * `--check` changes nothing and fails (exit 1) when the lock lacks such packages (CI runs it).
 */
import { readFileSync, writeFileSync } from 'node:fs';

const check = process.argv.includes('--check');
const file = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(file, 'utf8'));
const packages = lock.packages ?? {};

/** Where node would look for `name` from the package at `at` (its own node_modules, then each parent). */
function resolves(at, name) {
  let dir = at;
  for (;;) {
    if (packages[`${dir ? `${dir}/` : ''}node_modules/${name}`]) return true;
    if (!dir) return false;
    const i = dir.lastIndexOf('/node_modules/');
    dir = i < 0 ? '' : dir.slice(0, i);
  }
}

const OS = ['android', 'darwin', 'freebsd', 'linux', 'openbsd', 'netbsd', 'sunos', 'win32', 'openharmony', 'aix'];
const CPU = ['arm', 'arm64', 'ia32', 'x64', 'loong64', 'ppc64', 'riscv64', 's390x', 'mips64el', 'wasm32'];
/** os, cpu and libc from a platform package's name (rollup-linux-arm64-musl, esbuild's linux-x64 ...). */
function platformOf(name) {
  const parts = name.split('/').pop().split('-');
  const os = parts.find((p) => OS.includes(p));
  const cpu = parts.find((p) => CPU.includes(p)) ?? (parts.includes('arm') ? 'arm' : undefined);
  const libc = parts.includes('musl') || parts.includes('musleabihf') ? 'musl' : parts.includes('gnu') || parts.includes('gnueabihf') ? 'glibc' : undefined;
  return { ...(os ? { os: [os] } : {}), ...(cpu ? { cpu: [cpu] } : {}), ...(libc ? { libc: [libc] } : {}) };
}

const added = [];
for (const [at, meta] of Object.entries(packages)) {
  if (!at) continue;
  for (const [name, range] of Object.entries(meta.optionalDependencies ?? {})) {
    if (resolves(at, name)) continue;
    const key = `node_modules/${name}`;
    if (packages[key]) continue;
    const version = /^\d+\.\d+\.\d+(-[\w.]+)?$/.test(range) ? range : null;
    if (!version) {
      process.stderr.write(`fix-lock: ${at} wants ${name}@${range}, not an exact version; run npm install on a machine that resolves it\n`);
      process.exitCode = 1;
      continue;
    }
    const scope = name.startsWith('@') ? name.split('/')[0] : null;
    const base = name.split('/').pop();
    packages[key] = {
      version,
      resolved: `https://registry.npmjs.org/${scope ? `${scope}/` : ''}${base}/-/${base}-${version}.tgz`,
      ...(meta.dev ? { dev: true } : {}),
      optional: true,
      ...platformOf(name),
    };
    added.push(`${name}@${version}`);
  }
}
if (check) {
  if (added.length > 0) {
    process.stderr.write(`fix-lock: package-lock.json lacks ${added.length} optional packages of other platforms (${added.slice(0, 3).join(', ')}...), so npm ci refuses it. Run: node build/fix-lock.mjs, and commit the lock.\n`);
    process.exit(1);
  }
  process.stdout.write('fix-lock: the lock lists every optional package\n');
  process.exit(process.exitCode ?? 0);
}
lock.packages = Object.fromEntries(Object.entries(packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b, 'en'))));
writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
process.stdout.write(added.length ? `fix-lock: listed ${added.length} optional packages of other platforms: ${added.join(', ')}\n` : 'fix-lock: every optional package is listed\n');
