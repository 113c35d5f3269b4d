/**
 * One turn of the event loop after each test. A test file whose tests run on in-memory stores and
 * synchronous SQLite (the RxDB conformance suite, the demo seed's simulated days) can go on for a
 * minute without the loop reaching its poll phase: vitest's answer to the worker's last
 * `onTaskUpdate` then waits in the queue while the call's 60 s timer fires first, and the run fails
 * with "[vitest-worker]: Timeout calling onTaskUpdate" though every test passed (seen 2026-11-30 at
 * load 4 on 2 cores, and at load 16 in demo-seed.test.ts). A turn between tests lets the answer in.
 */
import { afterEach } from 'vitest';
import { setImmediate as turn } from 'node:timers/promises';

afterEach(async () => {
  await turn();
});
