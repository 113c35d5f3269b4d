/** Journeys on a lead's conversation: a direct message is sent only after confirming (cancelling
 * sends nothing), a reply goes into the existing thread, and a lead nobody is talking to yet gets
 * the refusal explained. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Locator, Page } from 'playwright-core';
import { closeDemoApp, openDemoApp, screenshot } from './support/app.ts';
import type { RunningApp } from './support/app.ts';

let app: RunningApp;
let browser: Browser;
let page: Page & { errors: string[] };

const dialog = () => page.getByRole('dialog');
const conversation = () => page.getByTestId('conversation');
const bubbles = () => conversation().locator('.bubble');

async function has(locator: Locator, text: string | RegExp): Promise<void> {
  await locator.filter({ hasText: text }).first().waitFor({ timeout: 15_000 });
}

/** A demo lead with (or without) a sender on a running-sequence enrollment, found through the bridge. */
async function findLead(enrolled: boolean): Promise<{ id: string; name: string }> {
  const found = await page.evaluate(async (wantEnrolled) => {
    const b = window.outreach;
    if (!b) throw new Error('no bridge');
    const r = await b.call('campaigns.leads.search', { limit: 200 });
    if (!r.ok) throw new Error(r.error.message);
    const lead = r.value.leads.find((l) => (wantEnrolled ? l.leadSequence?.sdrProfileId != null && l.leadSequence.status === 'IN_PROGRESS' : l.leadSequence === null));
    return lead ? { id: lead.id, name: lead.fullName } : null;
  }, enrolled);
  if (!found) throw new Error(`The demo has no ${enrolled ? 'enrolled' : 'unenrolled'} lead among the first 200.`);
  return found;
}

async function openLead(id: string): Promise<void> {
  await page.evaluate((leadId) => {
    location.hash = `#/leads?lead=${leadId}`;
  }, id);
  // Counted only once the thread has arrived (it loads after the panel).
  await conversation().locator('[data-testid="thread"][data-loaded="yes"]').waitFor();
}

beforeAll(async () => ({ app, browser, page } = await openDemoApp()), 240_000);

afterAll(() => closeDemoApp(app, browser));

describe('direct messages', () => {
  it('asks before sending, sends nothing when cancelled, and queues the message after confirming', async () => {
    const lead = await findLead(true);
    await openLead(lead.id);
    const before = await bubbles().count();
    const box = conversation().getByLabel('Direct message');
    await box.fill('Hi, following up on our chat last week: does Thursday work for a call?');
    await conversation().getByRole('button', { name: 'Send…' }).click();
    await has(dialog(), `Send this message to ${lead.name}?`);
    await has(dialog(), 'A message cannot be taken back once it is delivered.');
    await has(dialog().locator('blockquote'), 'does Thursday work for a call?');
    await screenshot(page, 'conversation-confirm');
    await dialog().getByRole('button', { name: 'Keep editing' }).click();
    await dialog().waitFor({ state: 'detached' });
    expect(await bubbles().count()).toBe(before);
    await expect(box.inputValue()).resolves.toContain('Thursday');

    await conversation().getByRole('button', { name: 'Send…' }).click();
    await dialog().getByRole('button', { name: 'Send message' }).click();
    await dialog().waitFor({ state: 'detached' });
    await expect.poll(() => bubbles().count()).toBe(before + 1);
    const sent = bubbles().last();
    await expect(sent.getAttribute('data-direction')).resolves.toBe('out');
    await has(sent, 'does Thursday work for a call?');
    await expect(['queued', 'sent']).toContain(await sent.getAttribute('data-status'));
    await expect(box.inputValue()).resolves.toBe('');
    await screenshot(page, 'conversation-sent');
  }, 60_000);

  it('replies in the existing thread', async () => {
    const before = await bubbles().count();
    const threads = await page.evaluate(async (leadId) => {
      const r = await window.outreach?.call('campaigns.leads.getConversation', { leadId });
      return r?.ok ? r.value.chats.length : -1;
    }, new URL(page.url()).hash.split('lead=')[1] ?? '');
    expect(threads).toBeGreaterThanOrEqual(1);
    await has(conversation(), /Replies in this thread through /);
    await conversation().getByLabel('Direct message').fill('And a short agenda: intro, demo, questions.');
    await conversation().getByRole('button', { name: 'Send…' }).click();
    await has(dialog(), 'It goes into the existing thread');
    await dialog().getByRole('button', { name: 'Send message' }).click();
    await expect.poll(() => bubbles().count()).toBe(before + 1);
    const after = await page.evaluate(async (leadId) => {
      const r = await window.outreach?.call('campaigns.leads.getConversation', { leadId });
      return r?.ok ? r.value.chats.length : -1;
    }, new URL(page.url()).hash.split('lead=')[1] ?? '');
    expect(after).toBe(threads);
  }, 60_000);

  it('explains why a lead nobody is talking to cannot be messaged yet', async () => {
    const lead = await findLead(false);
    await openLead(lead.id);
    await conversation().getByLabel('Direct message').fill('Hello!');
    await conversation().getByRole('button', { name: 'Send…' }).click();
    await dialog().getByRole('button', { name: 'Send message' }).click();
    await has(conversation().getByTestId('send-error'), /No sender is on a conversation with this lead yet/);
    await expect(bubbles().count()).resolves.toBe(0);
    expect(page.errors).toEqual([]);
  }, 60_000);
});
