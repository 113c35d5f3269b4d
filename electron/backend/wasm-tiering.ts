import { setFlagsFromString } from 'node:v8';

/**
 * Node's fetch parses HTTP with llhttp compiled to WebAssembly, and V8 recompiles the parser's one
 * large function with its optimizing wasm compiler once it runs hot: a ~7.5 MB block of compiler
 * memory, freed at once. glibc then raises its mmap threshold to that size and its trim threshold
 * to twice it (~15 MB), so no thread's malloc arena in the process gives back a free top under
 * 15 MB: after a 100k sync ~25-30 MB of memory already freed stayed resident in the arenas of V8's
 * threads and of the SQLite worker threads (README, "Desktop storage", rss). So wasm stays in V8's
 * baseline compiler (Liftoff) in the app's process: the parser handles each response's headers and
 * chunk sizes (the bodies pass through as spans), where the baseline code costs little. V8's flags
 * are the process's, so this is the process's choice, made by its host: the app's backend thread
 * (backend-worker.ts) before its first request, and the bench's worker-hosted backend, which measures
 * the app's memory. Not a side effect of importing the client: a test or tool that runs PGlite (itself
 * WebAssembly) beside the client keeps V8's optimizing compiler for it.
 */
export function keepWasmInBaseline(): void {
  // `--liftoff-only` would say it at launch; set at run time its implied flags are not applied, so
  // the two that stop the tier-up are set themselves.
  setFlagsFromString('--no-wasm-tier-up --no-wasm-dynamic-tiering');
}
