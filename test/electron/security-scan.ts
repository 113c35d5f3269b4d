/**
 * `npm run lint:electron` (part of `npm test`): Electronegativity, Doyensec's static checker for
 * Electron apps, over the desktop app's own code: the main process, preload and bridge (electron/)
 * and the renderer (renderer/index.html, renderer/src/). They are scanned as one app, so its global
 * checks (navigation limits, a permission handler, the CSP) see main and renderer together.
 *
 * Every finding is fixed or listed in security-scan-reviewed.ts with the reason it is acceptable; a
 * finding not listed fails, and so does a listed one that no longer occurs (the list stays true).
 * A file the scanner cannot parse fails too: it would not have been checked.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import Module, { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EXCLUDED_CHECKS, REVIEWED } from './security-scan-reviewed.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const require = createRequire(import.meta.url);

type Finding = { id: string; file: string; location: { line: number; column: number }; description: string; manualReview: boolean; severity: { name?: string }; confidence: { name?: string }; shortenedURL?: string };
type ScanResult = { globalChecks: number; atomicChecks: number; errors: { file: string; message: string; tolerable: boolean }[]; issues: Finding[] };
type Scan = (options: Record<string, unknown>, forCli: boolean) => Promise<ScanResult>;

/**
 * The scanner asks a translations server for the current locale's strings before every scan (a
 * 1-second request, then English); offline, a retry of that request later throws inside `got` and
 * ends the process. Its English strings ship with it: load them without the request.
 */
function offlineTranslations(): void {
  const file = require.resolve('@doyensec/electronegativity/dist/locales/i18n.js');
  const i18n = createRequire(file)('i18n') as { configure(options: Record<string, unknown>): void; setLocale(locale: string): void };
  const m = new Module(file);
  m.filename = file;
  m.loaded = true;
  m.exports = async () => {
    i18n.configure({ locales: ['en-US'], defaultLocale: 'en-US', directory: dirname(file), updateFiles: false, objectNotation: true, retryInDefaultLocale: true, register: globalThis });
    i18n.setLocale('en-US');
  };
  require.cache[file] = m;
}

/** The app's code in one folder, as the scanner takes one input. */
function stage(): string {
  const dir = mkdtempSync(join(tmpdir(), 'electronegativity-'));
  const notTest = (src: string) => !src.endsWith('.test.ts');
  cpSync(join(ROOT, 'electron'), join(dir, 'electron'), { recursive: true, filter: notTest });
  cpSync(join(ROOT, 'renderer', 'src'), join(dir, 'renderer', 'src'), { recursive: true, filter: notTest });
  cpSync(join(ROOT, 'renderer', 'index.html'), join(dir, 'renderer', 'index.html'));
  return dir;
}

function lineOf(dir: string, file: string, line: number): string {
  try {
    return readFileSync(join(dir, file), 'utf8').split('\n')[line - 1] ?? '';
  } catch {
    return '';
  }
}

async function main(): Promise<number> {
  offlineTranslations();
  const scan = require('@doyensec/electronegativity') as Scan;
  const electronVersion = (require('electron/package.json') as { version: string }).version;
  const dir = stage();
  try {
    const result = await scan({ input: dir, electronVersionOverride: electronVersion, excludeFromScan: EXCLUDED_CHECKS.map((c) => c.check), customScan: [], parserPlugins: [] }, false);
    const rel = (file: string) => (file === 'N/A' ? null : relative(dir, file).split(sep).join('/'));
    const broken = result.errors.filter((e) => !e.tolerable);
    const findings = result.issues.map((f) => ({ ...f, file: rel(f.file), code: rel(f.file) ? lineOf(dir, rel(f.file) ?? '', f.location.line).trim() : '' }));
    const used = new Set<number>();
    const unexplained = findings.filter((f) => {
      const i = REVIEWED.findIndex((r) => r.check === f.id && r.file === f.file && (r.code === null || f.code.includes(r.code)));
      if (i < 0) return true;
      used.add(i);
      return false;
    });
    const stale = REVIEWED.filter((_, i) => !used.has(i));

    console.log(`Electronegativity ${(require('@doyensec/electronegativity/package.json') as { version: string }).version}: ${result.globalChecks + result.atomicChecks} checks (Electron ${electronVersion}), ${EXCLUDED_CHECKS.length} left out, over electron/ and renderer/; ${findings.length} findings, ${findings.length - unexplained.length} reviewed (test/electron/security-scan-reviewed.ts).`);
    for (const e of broken) console.error(`Could not scan ${rel(e.file) ?? e.file}: ${e.message}`);
    for (const f of unexplained) {
      console.error(`\n${f.id} (${f.severity.name ?? ''}, ${f.confidence.name ?? ''}) at ${f.file ?? 'the whole app'}${f.file ? `:${f.location.line}:${f.location.column}` : ''}\n  ${f.description}${f.shortenedURL ? ` (${f.shortenedURL})` : ''}\n  ${f.code}`);
    }
    if (unexplained.length > 0) console.error(`\n${unexplained.length} finding(s) neither fixed nor reviewed: fix them, or add each to test/electron/security-scan-reviewed.ts with the reason it is acceptable.`);
    for (const r of stale) console.error(`Reviewed but no longer found: ${r.check} at ${r.file ?? 'the whole app'} (${r.code ?? ''}); remove it from test/electron/security-scan-reviewed.ts.`);
    return broken.length + unexplained.length + stale.length === 0 ? 0 : 1;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

process.exit(await main());
