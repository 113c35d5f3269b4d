/** Settings → Integrations in a browser, against a real sync server process: the demo workspace says
 * webhooks need a server; connected, an owner adds an endpoint with the keyboard, copies the secret
 * shown once, sends a test event and sees it delivered in the delivery log, and the receiver (on
 * 127.0.0.1, verifying with the standardwebhooks package) accepted it with that secret. */
import { execFileSync, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { ROOT } from '../../scripts/build-app.ts';
import { freePort } from '../integration/support/cli.ts';
import { startReceiver } from '../integration/support/webhook-receiver.ts';
import type { Receiver } from '../integration/support/webhook-receiver.ts';
import { ensureRendererBuilt, launchBrowser, openDemo, openPage, screenshot, startApp } from './support/app.ts';
import type { RunningApp } from './support/app.ts';

const serverData = mkdtempSync(join(tmpdir(), 'crm-webhooks-server-'));
const serverEnv = { ...process.env, DATA_DIR: serverData, LOG_LEVEL: 'warn', ALLOW_PRIVATE_SENDER_HOSTS: '1', WEBHOOKS_ALLOW_HTTP: '1' };
let port = 0;
let server: ChildProcess | null = null;
let serverLog = '';
let app: RunningApp;
let browser: Browser;
let page: Page & { errors: string[] };
let rx: Receiver;
let ownerKey = '';

beforeAll(async () => {
  await ensureRendererBuilt();
  rx = await startReceiver();
  port = await freePort();
  const out = execFileSync(process.execPath, ['--import', 'tsx', join(ROOT, 'sync-server', 'cli.ts'), 'create-workspace', '--name', 'Hooks', '--owner-email', 'olivia@hooks.test'], { cwd: ROOT, env: serverEnv, encoding: 'utf8' });
  ownerKey = (JSON.parse(out.trim().split('\n').pop() ?? '{}') as { apiKey: string }).apiKey;
  server = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'sync-server', 'cli.ts')], { cwd: ROOT, env: { ...serverEnv, PORT: String(port), HOST: '127.0.0.1' }, stdio: ['ignore', 'pipe', 'pipe'] });
  server.stdout?.on('data', (d: Buffer) => (serverLog += d.toString()));
  server.stderr?.on('data', (d: Buffer) => (serverLog += d.toString()));
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) break;
    } catch {
      // not up yet
    }
    if (i > 240) throw new Error(`The sync server did not start:\n${serverLog}`);
    await new Promise((r) => setTimeout(r, 250));
  }
  app = await startApp();
  browser = await launchBrowser();
  page = await openPage(browser, app.url);
}, 300_000);

afterAll(async () => {
  await browser?.close();
  await app?.stop();
  server?.kill('SIGTERM');
  await rx?.close();
});

const section = () => page.getByTestId('integrations-section');

describe('Settings → Integrations', () => {
  it('in the local demo, says webhooks need a sync server', async () => {
    await openDemo(page, app);
    await page.getByRole('button', { name: /^Settings/ }).click();
    await expect.poll(() => section().innerText()).toContain('Webhooks need a sync server');
    expect(await section().getByRole('button', { name: 'Add endpoint' }).count()).toBe(0);
  });

  it('adds an endpoint, shows its secret once, sends a test event and shows it delivered in the log', async () => {
    await page.getByLabel('Server address').fill(`http://127.0.0.1:${port}`);
    await page.getByRole('textbox', { name: 'API key', exact: true }).fill(ownerKey);
    await page.getByRole('button', { name: 'Connect' }).click();
    await page.getByRole('button', { name: /^Settings/ }).click({ timeout: 90_000 });
    await section().getByLabel('Endpoint URL').waitFor({ timeout: 90_000 });

    // With the keyboard: the URL, one more event (Space on its checkbox), Enter to add.
    await section().getByLabel('Endpoint URL').fill(`${rx.url}/from-app`);
    await section().getByRole('checkbox', { name: /A campaign started/ }).focus();
    await page.keyboard.press('Space');
    expect(await section().getByRole('checkbox', { name: /A campaign started/ }).isChecked()).toBe(true);
    await section().getByLabel('Endpoint URL').focus();
    await page.keyboard.press('Enter');
    const secretText = await section().getByLabel('Signing secret').innerText({ timeout: 30_000 });
    expect(secretText).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    rx.secrets.set('/from-app', secretText);
    await expect.poll(() => section().getByTestId('webhook-endpoint').innerText()).toContain('lead.replied, lead.meeting_booked, campaign.started');
    await section().getByRole('button', { name: 'Done' }).click();
    expect(await section().getByLabel('Signing secret').count()).toBe(0);

    await section().getByRole('button', { name: 'Send test event' }).click();
    const log = section().getByTestId('webhook-log');
    await expect.poll(() => log.getByTestId('webhook-delivery').first().innerText(), { timeout: 20_000 }).toMatch(/webhook\.test\s+Delivered\s+1\s+HTTP 200/);
    const [got] = await rx.waitFor('/from-app', 1);
    expect(got?.verifyError).toBeNull();
    expect(JSON.parse(got?.body ?? '{}')).toMatchObject({ type: 'webhook.test' });
    await log.getByRole('button', { name: 'Details' }).first().click();
    await expect.poll(() => log.innerText()).toContain(got?.headers['webhook-id'] ?? 'missing');
    await screenshot(page, 'webhooks-delivery-log');
    expect(page.errors).toEqual([]);
  });
});
