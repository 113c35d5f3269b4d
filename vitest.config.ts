import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

/** The Electron double (test/support/electron-double) stands in for `electron` in test/electron/
 * only: no other suite imports Electron, and none should get the double by accident. */
const electronDouble = fileURLToPath(new URL('./test/support/electron-double/index.ts', import.meta.url));

export default defineConfig({
  test: {
    testTimeout: 30_000,
    // Two test files at a time (vitest's default is one fewer than the cores: one on a 2-core CI
    // machine). Most files wait on servers, browsers and timers rather than compute, and each uses
    // its own database schema or folder and port 0, so two side by side share the cores well.
    maxWorkers: 2,
    // The suites run their SMTP, IMAP and connector servers on 127.0.0.1, which the sync server's
    // runner refuses by default (sync-server/sender-hosts.ts); abuse-limits.test.ts tests the refusal.
    env: { ALLOW_PRIVATE_SENDER_HOSTS: '1' },
    hookTimeout: 60_000,
    // A turn of the event loop after each test (the file says why).
    setupFiles: ['test/support/yield-between-tests.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'default',
          include: ['test/**/*.test.ts', 'shared/**/*.test.ts', 'sync-server/**/*.test.ts', 'electron/**/*.test.ts'],
          // test/e2e drives Debian's Chromium (/usr/bin/chromium) against the web host; CI installs it.
          exclude: ['node_modules/**', 'test/electron/**'],
        },
      },
      {
        extends: true,
        // The real electron/main.ts and preload.ts (and their bundles) against the double.
        resolve: { alias: [{ find: /^electron$/, replacement: electronDouble }] },
        // Each start of main starts the backend's worker thread, a fresh isolate loading its modules
        // (harness.ts waits up to 60 s for the window on a loaded machine).
        test: { name: 'electron', include: ['test/electron/**/*.test.ts'], globalSetup: ['test/electron/global-setup.ts'], testTimeout: 90_000 },
      },
    ],
  },
});
