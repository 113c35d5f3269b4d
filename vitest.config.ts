import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'shared/**/*.test.ts', 'sync-server/**/*.test.ts', 'electron/**/*.test.ts'],
    // test/e2e drives Debian's Chromium (/usr/bin/chromium) against the web host; CI installs it.
    exclude: ['node_modules/**'],
    testTimeout: 30_000,
    // The suites run their SMTP, IMAP and connector servers on 127.0.0.1, which the sync server's
    // runner refuses by default (sync-server/sender-hosts.ts); abuse-limits.test.ts tests the refusal.
    env: { ALLOW_PRIVATE_SENDER_HOSTS: '1' },
    hookTimeout: 60_000,
  },
});
