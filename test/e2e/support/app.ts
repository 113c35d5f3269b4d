/**
 * End-to-end support: builds the UI once (shared by parallel test files through a lock), starts the
 * app's web host in a child process (as `npm start -- --web` does, each with its own data folder),
 * and drives Debian's Chromium through playwright-core.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import type { Browser, Page } from 'playwright-core';
import { buildRenderer, rendererIsStale, ROOT } from '../../../scripts/build-app.ts';

export const CHROMIUM = '/usr/bin/chromium';
export const SCREENSHOTS = join(ROOT, 'test-results', 'screenshots');

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Builds renderer/dist if its sources changed; one test process builds while the others wait. */
export async function ensureRendererBuilt(): Promise<void> {
  const lock = join(ROOT, 'renderer', '.build-lock');
  for (let waited = 0; ; waited += 250) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      // A lock left by a test run that was killed mid-build: no build takes five minutes.
      const age = Date.now() - (statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
      if (age > 300_000) rmSync(lock, { recursive: true, force: true });
      if (waited > 180_000) throw new Error(`Waited 3 minutes for another test process to build the renderer (remove ${lock} if none is running).`);
      await sleep(250);
    }
  }
  try {
    if (rendererIsStale()) await buildRenderer();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

export type RunningApp = { url: string; dataDir: string; process: ChildProcess; output: () => string; stop(): Promise<void> };

/** Starts the web host with a fresh (or the given) data folder and waits for its URL. */
export async function startApp(opts: { dataDir?: string; env?: Record<string, string> } = {}): Promise<RunningApp> {
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'crm-e2e-'));
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'scripts', 'start.ts'), '--web', '--port', '0', '--no-build'], {
    cwd: ROOT,
    env: { ...process.env, DATA_DIR: dataDir, ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`The web host did not start within 60 s:\n${out}`)), 60_000);
    const check = () => {
      const m = /web host(?: \(--web\))? at (http:\/\/127\.0\.0\.1:\d+)/i.exec(out);
      if (m?.[1]) {
        clearTimeout(timer);
        resolve(`${m[1]}/`);
      }
    };
    child.stdout.on('data', check);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`The web host exited (${code}) before starting:\n${out}`));
    });
  });
  return {
    url,
    dataDir,
    process: child,
    output: () => out,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await Promise.race([exited, sleep(10_000)]);
        if (child.exitCode === null) child.kill('SIGKILL');
      }
    },
  };
}

export async function launchBrowser(opts: { asInElectron?: boolean } = {}): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium) to run the end-to-end tests.`);
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', ...(opts.asInElectron ? [withoutBrowserUi()] : [])],
  });
}

/** The browser's own UI that an Electron window does not have: Chromium (156) preloads its address
 * bar's popup, a WebUI page in a renderer of its own, for every new window, and on a 2-core machine
 * that renderer's ~0.7 s of CPU in the first quarter second competes with the page's first frame. */
const BROWSER_UI_FEATURES = ['WebUIOmniboxPopup', 'WebUIOmniboxFullPopup', 'WebUIOmniboxAimPopup', 'PreloadTopChromeWebUI'];

/** One `--disable-features` switch with playwright-core's own list and BROWSER_UI_FEATURES: Chromium
 * keeps only the last such switch, so a second one would drop playwright's (PaintHolding among
 * them). Its list is read from the installed playwright-core, which does not export it. */
function withoutBrowserUi(): string {
  const bundle = readFileSync(createRequire(import.meta.url).resolve('playwright-core/lib/coreBundle'), 'utf8');
  const list = /disabledFeatures = \[([^\]]*)\]/.exec(bundle)?.[1];
  const playwrights = list ? [...list.matchAll(/^\s*"(\w+)",?\s*$/gm)].map((m) => m[1] ?? '') : [];
  if (!playwrights.includes('PaintHolding')) throw new Error('playwright-core\'s list of disabled Chromium features was not found: see launchBrowser in test/e2e/support/app.ts.');
  return `--disable-features=${[...playwrights, ...BROWSER_UI_FEATURES].join(',')}`;
}

/** A page whose uncaught errors fail the test (collected, checked by `expectNoPageErrors`). */
export async function openPage(browser: Browser, url: string): Promise<Page & { errors: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, acceptDownloads: true });
  const page = (await context.newPage()) as Page & { errors: string[] };
  page.errors = [];
  page.on('pageerror', (e) => page.errors.push(e.message));
  page.on('console', (m) => {
    if (m.type() === 'error') page.errors.push(m.text());
  });
  await page.goto(url);
  return page;
}

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`) });
}

/** First run: choose the demo workspace and wait for the leads table to show people. */
export async function openDemo(page: Page & { errors?: string[] }, app?: RunningApp): Promise<void> {
  await page.getByRole('button', { name: 'Open the demo workspace' }).click();
  try {
    await page.locator('[data-lead-id]').first().waitFor({ timeout: 90_000 });
  } catch (e) {
    throw new Error(`${(e as Error).message}\npage errors: ${JSON.stringify(page.errors ?? [])}\napp output:\n${app?.output() ?? ''}`);
  }
}

/** What a journey file opens in its beforeAll: a fresh app, a browser, and a page on the demo
 * workspace. What was opened before a failure is closed again before the error is thrown. */
export type DemoApp = { app: RunningApp; browser: Browser; page: Page & { errors: string[] } };

export async function openDemoApp(): Promise<DemoApp> {
  await ensureRendererBuilt();
  const app = await startApp();
  let browser: Browser | undefined;
  try {
    browser = await launchBrowser();
    const page = await openPage(browser, app.url);
    await openDemo(page, app);
    return { app, browser, page };
  } catch (e) {
    await closeDemoApp(app, browser);
    throw e;
  }
}

/** Closes what openDemoApp opened (in afterAll; either may be missing when beforeAll failed). */
export async function closeDemoApp(app: RunningApp | undefined, browser: Browser | undefined): Promise<void> {
  await browser?.close();
  await app?.stop();
}

/** Presses Escape until no dialog is open, so a failed step does not leave one over the next journey. */
export async function closeDialogs(page: Page): Promise<void> {
  for (let i = 0; i < 3 && (await page.getByRole('dialog').count()) > 0; i++) await page.keyboard.press('Escape');
}
