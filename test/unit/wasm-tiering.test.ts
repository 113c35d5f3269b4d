/** The backend keeps WebAssembly in V8's baseline compiler (electron/backend/wasm-tiering.ts, called by
 * the app's backend thread, backend-worker.ts: the
 * optimizing recompilation of fetch's llhttp parser frees a ~7.5 MB block, after which glibc keeps up
 * to 15 MB of freed memory resident in every thread's arena; README "Desktop storage", rss). A child
 * process calls it (or only loads the client, which must not change the process's flags), then runs a hot wasm loop long past the point where V8 would tier it up,
 * and says which compiler's code the function runs. V8's flags are the process's, so each check runs
 * in a process of its own. */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

const CLIENT = pathToFileURL(fileURLToPath(new URL('../../electron/backend/server-client.ts', import.meta.url))).href;
const TIERING = pathToFileURL(fileURLToPath(new URL('../../electron/backend/wasm-tiering.ts', import.meta.url))).href;
const WORKER = fileURLToPath(new URL('../../electron/backend/backend-worker.ts', import.meta.url));

/** (module (func (export "f") (param i32) (result i32) (local i32) loop: local1 += local0 while --local0), then local1) */
const WASM = [
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x06, 0x01, 0x60, 0x01, 0x7f, 0x01, 0x7f, 0x03, 0x02, 0x01, 0x00, 0x07, 0x05, 0x01, 0x01, 0x66, 0x00, 0x00,
  0x0a, 0x1b, 0x01, 0x19, 0x01, 0x01, 0x7f, 0x03, 0x40, 0x20, 0x01, 0x20, 0x00, 0x6a, 0x21, 0x01, 0x20, 0x00, 0x41, 0x01, 0x6b, 0x22, 0x00, 0x0d, 0x00, 0x0b, 0x20, 0x01, 0x0b,
];

/** Runs the hot loop (after `before`, module code) for up to 2 s, until V8 has tiered the function
 * up; prints the compiler whose code it ends with. */
function tierAfterHotLoop(before: string): string {
  const script = `
    ${before}
    const { instance } = await WebAssembly.instantiate(new Uint8Array(${JSON.stringify(WASM)}));
    const f = instance.exports.f;
    const isTurbo = new Function('f', 'return %IsTurboFanFunction(f)');
    const until = Date.now() + 2000;
    while (Date.now() < until && !isTurbo(f)) {
      f(100000);
      await new Promise((r) => setTimeout(r, 1));
    }
    process.stdout.write(isTurbo(f) ? 'optimized' : 'baseline');`;
  const r = spawnSync(process.execPath, ['--allow-natives-syntax', '--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 30_000 });
  if (r.status !== 0) throw new Error(`child failed (${r.status}): ${r.stderr}`);
  return r.stdout;
}

describe('WebAssembly tiering in the backend', () => {
  it('V8 recompiles a hot wasm function with its optimizing compiler by default (what the check below relies on)', () => {
    expect(tierAfterHotLoop('')).toBe('optimized');
    // Loading the server's client alone leaves the process's compilers as they are (PGlite, itself
    // WebAssembly, runs beside it in tests and tools).
    expect(tierAfterHotLoop(`await import(${JSON.stringify(CLIENT)});`)).toBe('optimized');
  });

  it('stays in the baseline compiler once keepWasmInBaseline ran', () => {
    expect(tierAfterHotLoop(`(await import(${JSON.stringify(TIERING)})).keepWasmInBaseline();`)).toBe('baseline');
  });

  it("the app's backend thread calls it before anything else it does", () => {
    // backend-worker.ts runs only as a worker thread (it throws on the main thread): its source says
    // the call is made at the top of the module, before the backend is created.
    const source = readFileSync(WORKER, 'utf8');
    const call = source.indexOf('\nkeepWasmInBaseline();');
    expect(call).toBeGreaterThan(0);
    expect(call).toBeLessThan(source.indexOf('function threadPort'));
  });
});
