/**
 * How `npm start` gets Electron's binary (scripts/electron-binary.ts): Electron's real install.js in
 * a child process, pointed by ELECTRON_MIRROR at a release server on 127.0.0.1 that answers 404,
 * stalls mid-download, or serves a zip; the one-line reasons, the time limit, the progress, the
 * remembered failure and what forces a new try.
 */
import { existsSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { chooseElectron, failureFile, installerReason, REMEMBER_FAILURE_MS } from '../../scripts/electron-binary.ts';
import type { DownloadProgress } from '../../scripts/electron-binary.ts';
import { electronPackageCopy, electronVersion, fakeElectronScript, installerEnv, platformPath, releaseServer, ROOT, storedZip, zipName } from '../support/fake-electron.ts';
import type { ReleaseServer } from '../support/fake-electron.ts';

const servers: ReleaseServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});
async function server(mode: Parameters<typeof releaseServer>[0]): Promise<ReleaseServer> {
  const s = await releaseServer(mode);
  servers.push(s);
  return s;
}

const version = electronVersion();

describe('chooseElectron with Electron\'s own installer', () => {
  it('reports a 404 from the mirror in one line, remembers it, and tries again only when forced or when the mirror changes', async () => {
    const pkg = electronPackageCopy();
    const release = await server({ kind: '404' });
    const env = installerEnv(pkg, { ELECTRON_MIRROR: release.mirror });
    const first = await chooseElectron({ root: ROOT, env, force: false });
    expect(first).toEqual({
      kind: 'missing',
      reason: `Electron's binary could not be downloaded (Response code 404 (Not Found) for ${release.mirror}v${version}/${zipName()})`,
      retry: expect.stringContaining('npm start -- --desktop'),
    });
    expect(release.requests).toEqual([`/v${version}/${zipName()}`]);
    expect(existsSync(failureFile({ dir: pkg.dir, version }))).toBe(true);

    // The next start within the day does not ask again and says when it failed.
    const later = new Date(Date.now() + 2 * 3600_000);
    const second = await chooseElectron({ root: ROOT, env, force: false, now: () => later });
    expect(second).toMatchObject({ kind: 'missing', reason: `Electron's binary could not be downloaded 2 hours ago (Response code 404 (Not Found) for ${release.mirror}v${version}/${zipName()})` });
    expect(release.requests).toHaveLength(1);

    // --desktop forces a new try.
    await chooseElectron({ root: ROOT, env, force: true });
    expect(release.requests).toHaveLength(2);
    // So does another mirror, or the day going by.
    await chooseElectron({ root: ROOT, env: { ...env, ELECTRON_MIRROR: `${release.mirror}other/` }, force: false });
    expect(release.requests.at(-1)).toBe(`/other/v${version}/${zipName()}`);
    await chooseElectron({ root: ROOT, env: { ...env, ELECTRON_MIRROR: `${release.mirror}other/` }, force: false, now: () => new Date(Date.now() + REMEMBER_FAILURE_MS + 60_000) });
    expect(release.requests).toHaveLength(4);
  });

  it('stops a download that does not finish within ELECTRON_DOWNLOAD_SECONDS, with its progress', async () => {
    const pkg = electronPackageCopy();
    const release = await server({ kind: 'stall', bytes: 1_500_000 });
    const env = installerEnv(pkg, { ELECTRON_MIRROR: release.mirror, ELECTRON_DOWNLOAD_SECONDS: '2' });
    const seen: DownloadProgress[] = [];
    const started = Date.now();
    const choice = await chooseElectron({ root: ROOT, env, force: false, onProgress: (p) => seen.push(p) });
    const took = Date.now() - started;
    expect(choice).toMatchObject({ kind: 'missing', reason: "Electron's binary could not be downloaded (not finished within 2 s, 1.5 MB received; ELECTRON_DOWNLOAD_SECONDS sets the limit)" });
    expect(took).toBeGreaterThanOrEqual(2000);
    expect(took).toBeLessThan(6000);
    expect(seen.some((p) => p.phase === 'download' && p.bytes === 1_500_000)).toBe(true);
    // The killed installer's connection is gone: no download carries on behind the web host.
    await release.allClosed();
  });

  it('stops the installer when asked to stop (Ctrl+C during the download)', async () => {
    const pkg = electronPackageCopy();
    const release = await server({ kind: 'stall', bytes: 1000 });
    const stop = new AbortController();
    const choosing = chooseElectron({ root: ROOT, env: installerEnv(pkg, { ELECTRON_MIRROR: release.mirror }), force: false, signal: stop.signal, onProgress: (p) => p.bytes > 0 && stop.abort() });
    expect(await choosing).toEqual({ kind: 'stopped' });
    await release.allClosed();
    // A stop is not a failed download: the next start tries again.
    expect(existsSync(failureFile({ dir: pkg.dir, version }))).toBe(false);
  });

  it('installs the binary from a mirror, checked against the mirror\'s SHASUMS256.txt, and forgets an old failure', async () => {
    const pkg = electronPackageCopy();
    const zip = storedZip([{ name: platformPath(), data: Buffer.from(fakeElectronScript('/dev/null')), mode: 0o755 }]);
    const release = await server({ kind: 'zip', zip });
    const env = installerEnv(pkg, { ELECTRON_MIRROR: release.mirror, electron_use_remote_checksums: '1' });
    const failed = await chooseElectron({ root: ROOT, env: { ...env, ELECTRON_MIRROR: `${release.mirror}missing/` }, force: false });
    expect(failed.kind).toBe('missing');
    expect(existsSync(failureFile({ dir: pkg.dir, version }))).toBe(true);

    const choice = await chooseElectron({ root: ROOT, env, force: true });
    expect(choice).toEqual({ kind: 'binary', path: `${pkg.dir}/dist/${platformPath()}`, version, downloaded: true });
    expect(release.requests).toContain(`/v${version}/SHASUMS256.txt`);
    expect(existsSync(failureFile({ dir: pkg.dir, version }))).toBe(false);
    // Installed: the next start uses it without asking the mirror.
    const count = release.requests.length;
    expect(await chooseElectron({ root: ROOT, env, force: false })).toMatchObject({ kind: 'binary', downloaded: false });
    expect(release.requests).toHaveLength(count);
  });

  it('does not download when ELECTRON_SKIP_BINARY_DOWNLOAD is set or ELECTRON_DOWNLOAD_SECONDS is 0', async () => {
    const pkg = electronPackageCopy();
    const release = await server({ kind: '404' });
    const skip = await chooseElectron({ root: ROOT, env: installerEnv(pkg, { ELECTRON_MIRROR: release.mirror, ELECTRON_SKIP_BINARY_DOWNLOAD: '1' }), force: true });
    expect(skip).toMatchObject({ kind: 'missing', reason: "Electron's binary is not installed and ELECTRON_SKIP_BINARY_DOWNLOAD is set" });
    const off = await chooseElectron({ root: ROOT, env: installerEnv(pkg, { ELECTRON_MIRROR: release.mirror, ELECTRON_DOWNLOAD_SECONDS: '0' }), force: false });
    expect(off).toMatchObject({ kind: 'missing', reason: expect.stringContaining('ELECTRON_DOWNLOAD_SECONDS=0') });
    const bad = await chooseElectron({ root: ROOT, env: installerEnv(pkg, { ELECTRON_MIRROR: release.mirror, ELECTRON_DOWNLOAD_SECONDS: 'soon' }), force: false });
    expect(bad).toMatchObject({ kind: 'missing', reason: 'ELECTRON_DOWNLOAD_SECONDS must be a number of seconds, not "soon"' });
    expect(release.requests).toEqual([]);
  });

  it('says when the electron package itself is not installed', async () => {
    const choice = await chooseElectron({ root: ROOT, env: { ELECTRON_PACKAGE_DIR: `${ROOT}/no-such-folder/electron` }, force: false });
    expect(choice).toMatchObject({ kind: 'missing', reason: expect.stringContaining('Electron is not installed'), retry: 'Run `npm install` to get it.' });
  });
});

describe('installerReason', () => {
  it('keeps the message of the error install.js prints, without its class and stack', () => {
    const stack = [
      '(node:123) [DEP0040] DeprecationWarning: The `punycode` module is deprecated.',
      'RequestError: getaddrinfo ENOTFOUND github.com',
      '    at ClientRequest.<anonymous> (/x/node_modules/got/dist/source/core/index.js:970:111)',
      '    at GetAddrInfoReqWrap.onlookupall [as oncomplete] (node:dns:123:26)',
    ].join('\n');
    expect(installerReason(stack)).toBe('getaddrinfo ENOTFOUND github.com');
    expect(installerReason('Error: Generated checksum for "electron.zip" did not match expected checksum.\n    at x')).toBe('Generated checksum for "electron.zip" did not match expected checksum.');
    const http = [
      '2026-11-26T14:03:20.100Z @electron/get:index Downloading https://mirror.example/v41.7.1/electron-v41.7.1-linux-x64.zip to /tmp/x/electron-v41.7.1-linux-x64.zip with options: undefined',
      'HTTPError: Response code 404 (Not Found)',
      '    at Request.<anonymous> (/x/node_modules/got/dist/source/as-promise/index.js:118:42)',
    ].join('\n');
    expect(installerReason(http)).toBe('Response code 404 (Not Found) for https://mirror.example/v41.7.1/electron-v41.7.1-linux-x64.zip');
    expect(installerReason('something odd\n')).toBe('something odd');
    expect(installerReason('')).toBeNull();
  });
});
