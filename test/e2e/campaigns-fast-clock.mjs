/**
 * Preloaded into the web host process by test/e2e/campaigns-runner.test.ts (NODE_OPTIONS=--import):
 * wall-clock time in that process runs E2E_CLOCK_SPEED times faster from the moment it starts, so the
 * sandbox network's people (who answer hours later) answer within the test. Only Date moves faster:
 * timers, and so the runner's tick interval, keep real time. Never loaded by the app itself.
 */
import process from 'node:process';

const speed = Number(process.env.E2E_CLOCK_SPEED ?? '1');
if (Number.isFinite(speed) && speed > 1) {
  const RealDate = Date;
  const origin = RealDate.now();
  const now = () => Math.floor(origin + (RealDate.now() - origin) * speed);
  class FastDate extends RealDate {
    constructor(...args) {
      if (args.length === 0) super(now());
      else super(...args);
    }
    static now() {
      return now();
    }
  }
  globalThis.Date = FastDate;
}
