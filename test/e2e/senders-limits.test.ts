/** Journeys on the senders screen: a daily limit raised above the plan maximum is capped and the cap
 * is explained; today's usage and the search budget show; outreach pauses and resumes; sandbox, SMTP
 * and HTTP-connector senders connect (bad settings refused with the reason); a mailbox is checked
 * before it is added (a wrong password refused, nothing added), its card shows the check with what to
 * fix, and Check again shows a fixed DNS record. The mailbox is real: smtp-server and Dovecot on
 * loopback, and the app's DNS (DNS_SERVERS) a dns2 server the test runs. */
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Locator, Page } from 'playwright-core';
import { dkimKeyRecord, startDns } from '../integration/support/dns-server.ts';
import type { TestDns } from '../integration/support/dns-server.ts';
import { startDovecot } from '../integration/support/dovecot.ts';
import type { Dovecot } from '../integration/support/dovecot.ts';
import { closeDemoApp, openDemoApp, screenshot } from './support/app.ts';
import type { RunningApp } from './support/app.ts';

const MAILBOX = { user: 'sdr@acme.test', password: 'kept-on-this-desktop' };
let dns: TestDns;
let smtp: SMTPServer;
let smtpPort = 0;
let dovecot: Dovecot;

let app: RunningApp;
let browser: Browser;
let page: Page & { errors: string[] };

const dialog = () => page.getByRole('dialog');
const cards = () => page.locator('.sender-card');

async function has(locator: Locator, text: string | RegExp): Promise<void> {
  await locator.filter({ hasText: text }).first().waitFor({ timeout: 15_000 });
}

beforeAll(async () => {
  // acme.test sends from 127.0.0.1 with a DKIM key but no DMARC record (yet).
  dns = await startDns({ 'acme.test': { TXT: ['v=spf1 ip4:127.0.0.1 -all'] }, 'default._domainkey.acme.test': { TXT: [dkimKeyRecord()] } });
  smtp = new SMTPServer({
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    logger: false,
    onAuth(auth, _session, cb) {
      if (auth.username === MAILBOX.user && auth.password === MAILBOX.password) cb(null, { user: auth.username });
      else cb(Object.assign(new Error('Invalid username or password'), { responseCode: 535 }));
    },
  });
  await new Promise<void>((r) => smtp.listen(0, '127.0.0.1', r));
  smtpPort = (smtp.server.address() as AddressInfo).port;
  dovecot = await startDovecot([MAILBOX]);
  // The app (a child process) inherits this: its mailbox checks ask the test's DNS.
  process.env.DNS_SERVERS = dns.servers.join(',');
  ({ app, browser, page } = await openDemoApp());
  await page.locator('nav').getByRole('button', { name: /Senders/ }).click();
  await cards().first().waitFor();
}, 240_000);

afterAll(async () => {
  await closeDemoApp(app, browser);
  delete process.env.DNS_SERVERS;
  await dns?.close();
  await new Promise<void>((r) => (smtp ? smtp.close(() => r()) : r()));
  await dovecot?.stop();
});

describe('senders', () => {
  it('caps a daily limit raised above the plan maximum and says so', async () => {
    const card = cards().first();
    const row = card.locator('tr[data-limit="messages"]');
    const planMax = Number(await row.locator('td').last().innerText());
    expect(planMax).toBeGreaterThan(0);
    const input = row.getByLabel('Messages daily limit');
    await input.fill(String(planMax + 350));
    await has(row, `above the plan: it will be lowered to ${planMax}`);
    await card.getByRole('button', { name: 'Save limits' }).click();
    const capped = card.getByTestId('capped');
    await has(capped, `Messages: you asked for ${planMax + 350}, but the account's plan allows at most ${planMax} a day, so the limit is ${planMax}.`);
    await expect.poll(() => input.inputValue()).toBe(String(planMax));
    await screenshot(page, 'senders-limit-capped');

    // Lowering is plain: saved, no cap.
    await input.fill('20');
    await card.getByRole('button', { name: 'Save limits' }).click();
    await has(card.getByTestId('limits-outcome'), `Messages ${planMax} → 20`);
    await expect(card.getByTestId('capped').count()).resolves.toBe(0);
  }, 60_000);

  it("shows today's usage per action and the search budget", async () => {
    const card = cards().first();
    for (const key of ['messages', 'inmails', 'connectionRequests', 'connectionRequestsWithNote', 'comments', 'reactions', 'profileVisits', 'emails']) {
      await card.locator(`tr[data-limit="${key}"]`).waitFor();
    }
    // Remaining today = the limit set above (20) less what was used.
    const cells = card.locator('tr[data-limit="messages"] td');
    await expect
      .poll(async () => {
        const used = Number(await cells.nth(1).innerText());
        const remaining = Number(await cells.nth(2).innerText());
        return Number.isInteger(used) && remaining === Math.max(0, 20 - used);
      })
      .toBe(true);
    await has(card.getByTestId('search-budget'), /\d+ used · \d+ left of \d+/);
  }, 30_000);

  it('pauses and resumes outreach on every campaign', async () => {
    const card = cards().first();
    await card.getByRole('button', { name: 'Pause outreach' }).click();
    await has(card.getByTestId('sender-status'), 'Outreach paused');
    await has(card, 'Outreach is paused on every campaign');
    await card.getByRole('button', { name: 'Resume outreach' }).click();
    await has(card.getByTestId('sender-status'), 'Available');
  }, 30_000);

  it('connects a sandbox sender, an SMTP mailbox (password kept off the workspace) and refuses a bad connector URL', async () => {
    const before = await cards().count();
    await page.getByRole('button', { name: 'Connect a sender' }).click();
    await dialog().getByLabel('Sender name').fill('E2E Sandbox');
    await dialog().getByRole('button', { name: 'Connect' }).click();
    await dialog().waitFor({ state: 'detached' });
    await expect.poll(() => cards().count()).toBe(before + 1);
    await has(page.locator('.sender-card').filter({ hasText: 'E2E Sandbox' }), 'Sandbox network');

    await page.getByRole('button', { name: 'Connect a sender' }).click();
    await dialog().getByRole('tab', { name: 'Email (SMTP)' }).click();
    await dialog().getByLabel('Sender name').fill('E2E Mailbox');
    await dialog().getByLabel('SMTP host').fill('127.0.0.1');
    await dialog().getByLabel('SMTP port').fill(String(smtpPort));
    await dialog().getByLabel('SMTP user').fill(MAILBOX.user);
    await dialog().getByLabel('SMTP password').fill('a-wrong-password');
    await dialog().getByLabel('From address').fill('Sam SDR <sdr@acme.test>');
    await dialog().getByLabel('IMAP host').fill('127.0.0.1');
    await dialog().getByLabel('IMAP port').fill(String(dovecot.port));
    await dialog().getByRole('checkbox', { name: 'TLS from the start (port 993)' }).uncheck();
    await screenshot(page, 'senders-connect-smtp');
    // A wrong password: the mailbox is checked before it is added, refused with the reason, and not added.
    const count = await cards().count();
    await dialog().getByRole('button', { name: 'Connect' }).click();
    await has(dialog().getByRole('alert'), /E2E Mailbox was not connected: SMTP: 127\.0\.0\.1 refused the login of sdr@acme\.test/);
    await dialog().getByRole('alert').scrollIntoViewIfNeeded();
    await screenshot(page, 'senders-connect-refused');
    expect(await cards().count()).toBe(count);
    // The right one: added (the password goes to this desktop's credential store, never into the
    // workspace); the check's findings are warnings: acme.test has no DMARC record.
    await dialog().getByLabel('SMTP password').fill(MAILBOX.password);
    await dialog().getByRole('button', { name: 'Connect' }).click();
    await has(dialog().getByTestId('connect-warnings'), 'acme.test publishes no DMARC record');
    await dialog().getByRole('button', { name: 'Done' }).click();
    await dialog().waitFor({ state: 'detached' });
    const mailbox = page.locator('.sender-card').filter({ hasText: 'E2E Mailbox' });
    await has(mailbox, 'Email (SMTP)');
    const check = mailbox.getByTestId('sender-check');
    for (const [name, status] of [['smtp', 'pass'], ['imap', 'pass'], ['sent_folder', 'pass'], ['spf', 'pass'], ['dkim', 'pass'], ['dmarc', 'warn']]) {
      await check.locator(`li[data-check="${name}"][data-status="${status}"]`).waitFor({ timeout: 15_000 });
    }
    await has(check.locator('li[data-check="dmarc"]'), 'Fix: Add a TXT record at _dmarc.acme.test');
    await has(check.getByTestId('sender-check-summary'), '1 warning');
    await mailbox.scrollIntoViewIfNeeded();
    await screenshot(page, 'senders-mailbox-check');
    // The domain publishes DMARC; Check again shows it passing.
    dns.set('_dmarc.acme.test', { TXT: ['v=DMARC1; p=quarantine'] });
    await check.getByRole('button', { name: 'Check again' }).click();
    await check.locator('li[data-check="dmarc"][data-status="pass"]').waitFor({ timeout: 15_000 });
    await has(check.getByTestId('sender-check-summary'), 'All passed');
    await screenshot(page, 'senders-mailbox-check-again');

    await page.getByRole('button', { name: 'Connect a sender' }).click();
    await dialog().getByRole('tab', { name: 'HTTP connector' }).click();
    await dialog().getByLabel('Sender name').fill('E2E Connector');
    await dialog().getByLabel('Connector URL').fill('ftp://connector.example.com');
    await dialog().getByRole('button', { name: 'Connect' }).click();
    await has(dialog().getByRole('alert'), /baseUrl/);
    await dialog().getByLabel('Connector URL').fill('https://connector.example.com/api');
    await dialog().getByRole('button', { name: 'Connect' }).click();
    await dialog().waitFor({ state: 'detached' });
    await has(page.locator('.sender-card').filter({ hasText: 'E2E Connector' }), 'HTTP connector');
    await screenshot(page, 'senders');
    expect(page.errors).toEqual([]);
  }, 60_000);
});
