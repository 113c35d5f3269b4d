import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'shared/**/*.test.ts', 'sync-server/**/*.test.ts', 'electron/**/*.test.ts'],
    // test/e2e drives Debian's Chromium (/usr/bin/chromium) against the web host; CI installs it.
    exclude: ['node_modules/**'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
