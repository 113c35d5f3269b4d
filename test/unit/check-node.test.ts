/** The Node version check that `npm start`, `npm test` and `npm run sync-server` run before anything
 * else (scripts/check-node.cjs): one sentence and exit code 1 on a Node outside package.json
 * "engines", silence on a supported one, and wired into those three scripts. */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'acorn';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SCRIPT = join(ROOT, 'scripts', 'check-node.cjs');
const pkg: unknown = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
const scripts = (pkg as { scripts: Record<string, string> }).scripts;

function check(args: string[], opts: { node?: string; script?: string } = {}) {
  const r = spawnSync(opts.node ?? process.execPath, [opts.script ?? SCRIPT, ...args], { encoding: 'utf8', timeout: 10_000 });
  return { status: r.status, signal: r.signal, stderr: r.stderr, stdout: r.stdout };
}

const SENTENCE = /^Outreach CRM needs Node\.js 22\.19 or a later 22\.x, or 24 or newer \(24 LTS recommended; package\.json engines: "\^22\.19\.0 \|\| >=24"\), but this is Node\.js (\S+) \(.+\): install Node\.js 24 LTS from https:\/\/nodejs\.org\/ or with a version manager \(nvm install 24\), or on Linux put the npm registry's Node 24 first on PATH with `source \.ci\/node-lts\.sh`, then run `npm install` and this command again\.\n$/;

describe('scripts/check-node.cjs', () => {
  it('says nothing and exits 0 on the Node running the tests', () => {
    expect(check([])).toMatchObject({ status: 0, stdout: '', stderr: '' });
  });

  it.each(['20.20.2', '22.12.0', '22.18.3', '23.11.0', '18.0.0', '0.10.48'])('stops Node %s with one sentence and exit code 1', (v) => {
    const r = check(['--as-version', v]);
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(SENTENCE);
    expect(SENTENCE.exec(r.stderr)?.[1]).toBe(v);
  });

  it.each(['22.19.0', '22.22.1', '24.0.0', '24.21.0', '26.1.0'])('lets Node %s through', (v) => {
    expect(check(['--as-version', v])).toMatchObject({ status: 0, stderr: '' });
  });

  // The machine's own older Node (Debian's /usr/bin/node 20 here): the real process, not a flag.
  const olderNode = ['/usr/bin/node', '/usr/local/bin/node'].find((p) => {
    if (!existsSync(p)) return false;
    const v = spawnSync(p, ['-p', 'process.versions.node'], { encoding: 'utf8' }).stdout.trim();
    return Number(v.split('.')[0]) < 22;
  });
  it.skipIf(olderNode === undefined)(`stops the real older Node (${olderNode ?? 'none on this machine'})`, () => {
    const r = check([], { node: olderNode });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(SENTENCE);
  });

  // acorn (ESLint's parser, installed with it) judges the file as ES5.
  it('is ES5, so it parses on any Node old enough to need it', () => {
    expect(() => parse(readFileSync(SCRIPT, 'utf8'), { ecmaVersion: 5, sourceType: 'script', allowHashBang: true })).not.toThrow();
  });

  it('refuses an engines range it cannot read instead of passing it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'crm-check-node-'));
    mkdirSync(join(dir, 'scripts'));
    copyFileSync(SCRIPT, join(dir, 'scripts', 'check-node.cjs'));
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ engines: { node: '~22.19' } }));
    const r = check([], { script: join(dir, 'scripts', 'check-node.cjs') });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('cannot read engines.node "~22.19"');
  });

  it('runs first in npm start and npm test, and before npm run sync-server', () => {
    expect(scripts.start).toMatch(/^node scripts\/check-node\.cjs && /);
    expect(scripts.test).toMatch(/^node scripts\/check-node\.cjs && /);
    expect(scripts['presync-server']).toBe('node scripts/check-node.cjs');
  });
});
