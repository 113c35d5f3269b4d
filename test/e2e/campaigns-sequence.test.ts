/** Journeys on a campaign page: build a three-step sequence with a condition branch and a message
 * variant, and be refused (with the reason shown) for an unknown merge field, for removing the last
 * step of a branch, for a schedule day that starts after it ends, and for editing while running. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Locator, Page } from 'playwright-core';
import { closeDemoApp, openDemoApp, screenshot } from './support/app.ts';
import type { RunningApp } from './support/app.ts';

let app: RunningApp;
let browser: Browser;
let page: Page & { errors: string[] };

const dialog = () => page.getByRole('dialog');
const stepCards = () => page.locator('.step-card');
const card = (n: number): Locator => page.locator(`.step-card[data-step-number="${n}"]`);

beforeAll(async () => ({ app, browser, page } = await openDemoApp()), 240_000);

afterAll(() => closeDemoApp(app, browser));

/** Waits until the locator's text holds `text` (the UI updates from live subscriptions). */
async function has(locator: Locator, text: string | RegExp): Promise<void> {
  await locator.filter({ hasText: text }).first().waitFor({ timeout: 15_000 });
}

async function openTab(name: string): Promise<void> {
  await page.getByRole('tab', { name }).click();
}

describe('campaign sequence editor', () => {
  it('creates a campaign on the demo lead list and gives it a sender', async () => {
    await page.locator('nav').getByRole('button', { name: /Campaigns/ }).click();
    await page.getByTestId('campaign-list').waitFor();
    await page.getByRole('button', { name: 'New campaign' }).click();
    await dialog().getByLabel('Campaign name').fill('E2E: sequence journey');
    // The demo's list with custom columns (Pain point, ...), which become merge fields.
    const lists = await dialog().getByLabel('Lead list').locator('option').allInnerTexts();
    const columns = (label: string) => Number(/\((\d+) columns\)/.exec(label)?.[1] ?? 0);
    const richest = lists.reduce((best, l) => (columns(l) > columns(best) ? l : best));
    expect(columns(richest)).toBeGreaterThan(8);
    await dialog().getByLabel('Lead list').selectOption({ label: richest });
    await dialog().getByRole('button', { name: 'Create campaign' }).click();
    await page.getByTestId('campaign-name').filter({ hasText: 'E2E: sequence journey' }).waitFor();

    await openTab('Senders');
    const senderSelect = page.getByLabel('Sender to add');
    await senderSelect.selectOption({ index: 1 });
    const senderName = (await senderSelect.locator('option:checked').innerText()).replace(/ \(.*\)$/, '');
    await page.getByRole('button', { name: 'Add to campaign' }).click();
    await page.locator('[data-testid="campaign-senders"] tbody tr').filter({ hasText: senderName }).waitFor();
  }, 60_000);

  it('shows an unknown merge field while typing and refuses to save it, then inserts a real one from the picker', async () => {
    await openTab('Sequence');
    await page.getByRole('button', { name: '+ Add the first step' }).click();
    await expect(dialog().getByRole('radio', { name: /^Message/ }).getAttribute('aria-checked')).resolves.toBe('true');
    const text = dialog().getByLabel('Text', { exact: true });
    await text.fill('Hi {{Frist name|there}}, quick question.');
    // Inline, as typed: the field is not one of the campaign's, with the near miss named.
    const inline = dialog().getByRole('alert').filter({ hasText: '{{Frist name}} is not a merge field of this campaign' });
    await inline.waitFor();
    await has(inline, 'did you mean {{First name}}');
    await screenshot(page, 'campaign-step-unknown-field');
    // Saving anyway: the campaign refuses it and says why.
    await dialog().getByTestId('save-step').click();
    const refusal = dialog().getByTestId('step-error');
    await refusal.getByRole('alert').waitFor();
    await has(refusal, /uses \{\{Frist name\}\}, which is not a column of the campaign's lead group/);

    // The picker offers only this campaign's fields and inserts {{Field|}} at the caret.
    await text.fill('Hi ');
    await text.press('End');
    await dialog().getByRole('button', { name: 'Insert a merge field into Text' }).click();
    const options = dialog().getByRole('listbox', { name: 'Merge fields of this campaign' }).getByRole('option');
    const names = await options.allInnerTexts();
    expect(names.some((n) => n.startsWith('Pain point'))).toBe(true);
    expect(names.some((n) => n.startsWith('Frist'))).toBe(false);
    await options.filter({ hasText: /^First name/ }).click();
    await page.keyboard.type('there');
    await page.keyboard.press('End');
    await page.keyboard.type(', how is {{Pain point|growth}} going?');
    await expect(text.inputValue()).resolves.toBe('Hi {{First name|there}}, how is {{Pain point|growth}} going?');
    await expect.poll(() => dialog().getByRole('alert').count()).toBe(0);

    // A variant with its own wording.
    await dialog().getByRole('button', { name: '+ Add variant' }).click();
    await dialog().getByLabel('Variant 1 name').fill('Short opener');
    await dialog().getByLabel('Variant 1 text', { exact: true }).fill('Hey {{First name|there}}!');
    await dialog().getByLabel('Variant assignment').selectOption('random');
    await dialog().getByTestId('save-step').click();
    await dialog().waitFor({ state: 'detached' });
    await has(card(1), 'Hi {{First name|there}}, how is {{Pain point|growth}} going?');
    await has(card(1), '1 variant · random');
  }, 60_000);

  it('adds a wait and a condition, whose yes and no paths show side by side, and a message on the yes path', async () => {
    await page.getByRole('button', { name: '+ Add a step at the end' }).click();
    await dialog().getByRole('radio', { name: /^Wait/ }).click();
    await dialog().getByLabel('Wait days').fill('2');
    await dialog().getByTestId('save-step').click();
    await dialog().waitFor({ state: 'detached' });
    await has(card(2), 'Wait 2 days');

    await page.getByRole('button', { name: '+ Add a step at the end' }).click();
    await dialog().getByRole('radio', { name: /^Condition/ }).click();
    await dialog().getByLabel('Condition test').selectOption('CONNECTED');
    await dialog().getByTestId('save-step').click();
    await dialog().waitFor({ state: 'detached' });
    const condition = card(3);
    await expect(condition.getAttribute('data-step-type')).resolves.toBe('CONDITION');
    await has(condition, 'If the lead: Connected with the sender');
    // Only a condition can end the main path: no "add at the end" any more.
    await expect.poll(() => page.getByRole('button', { name: '+ Add a step at the end' }).count()).toBe(0);

    const yes = condition.locator('[data-branch="yes"]');
    const no = condition.locator('[data-branch="no"]');
    await expect.poll(() => yes.locator('.step-card').count()).toBe(1);
    await expect.poll(() => no.locator('.step-card').count()).toBe(1);
    await yes.getByRole('button', { name: '+ Add to the yes path' }).click();
    await dialog().getByLabel('Text', { exact: true }).fill('Thanks for connecting, {{First name|there}}!');
    await dialog().getByTestId('save-step').click();
    await dialog().waitFor({ state: 'detached' });
    await expect.poll(() => yes.locator('.step-card').count()).toBe(2);
    await expect.poll(() => stepCards().count()).toBe(6);
    await has(page.getByTestId('sequence-editor'), 'Ready to start');
    await screenshot(page, 'campaign-sequence');
  }, 60_000);

  it('refuses to remove the only step of a condition path and says why', async () => {
    const no = card(3).locator('[data-branch="no"]');
    await no.getByRole('button', { name: /^Remove step/ }).click();
    const error = no.getByTestId('step-card-error').getByRole('alert');
    await error.waitFor();
    await has(error, /is the only step of the no path of its condition; add another step to that path before removing it/);
    await expect.poll(() => no.locator('.step-card').count()).toBe(1);
    await screenshot(page, 'campaign-remove-last-of-branch');
  }, 30_000);

  it('validates as you type: a connection note over 300 characters, a step the sender cannot perform, a voice note without its recording', async () => {
    const no = card(3).locator('[data-branch="no"]');
    await no.getByRole('button', { name: '+ Add to the no path' }).click();
    await dialog().getByRole('radio', { name: /^Connection request/ }).click();
    const note = dialog().getByLabel('Note (optional)', { exact: true });
    await note.fill(`Hi {{First name|there}}, ${'x'.repeat(301 - 'Hi {{First name|there}}, '.length)}`);
    await has(dialog().locator('.counter.over'), '301/300');
    await has(dialog().getByRole('alert'), 'A connection note fits 300 characters; this one has 301. Shorten it.');
    await screenshot(page, 'campaign-step-note-too-long');
    await dialog().getByTestId('save-step').click();
    await has(dialog().getByTestId('step-error'), /cannot perform .*the connection note has 301 characters; its limit is 300/);
    await note.fill('Hi {{First name|there}}, we met at the summit. Happy to connect!');
    await expect(dialog().getByRole('alert').count()).resolves.toBe(0);
    await dialog().getByTestId('save-step').click();
    await dialog().waitFor({ state: 'detached' });
    await expect.poll(() => no.locator('.step-card').count()).toBe(2);
    // With a second step on the path, its placeholder wait can go.
    await no.locator('.step-card[data-step-type="WAIT"]').getByRole('button', { name: /^Remove step/ }).click();
    await expect.poll(() => no.locator('.step-card').count()).toBe(1);
    await expect(no.locator('.step-card').getAttribute('data-step-type')).resolves.toBe('CONNECTION_REQUEST');

    // A sandbox social account cannot send email: said while typing, refused on save.
    const yes = card(3).locator('[data-branch="yes"]');
    await yes.getByRole('button', { name: '+ Add to the yes path' }).click();
    await dialog().getByRole('radio', { name: /^Email/ }).click();
    await has(dialog().getByTestId('capability-problems'), /cannot send emails; remove the sender from the campaign or choose another step/);
    await has(dialog().getByRole('alert'), 'An email needs a subject.');
    await dialog().getByLabel('Subject', { exact: true }).fill('Following up, {{First name|}}');
    await dialog().getByLabel('Text', { exact: true }).fill('Hi {{First name|there}}, one more note by email.');
    await dialog().getByTestId('save-step').click();
    await has(dialog().getByTestId('step-error'), /cannot perform .*\(Email\): its account cannot send emails/);
    await screenshot(page, 'campaign-step-capability');
    await dialog().getByRole('button', { name: 'Cancel' }).click();

    // Voice note modes: a pre-recorded note needs its recording.
    await yes.locator('.step-card[data-step-type="SEND_MESSAGE"]').getByRole('button', { name: 'Edit' }).click();
    await dialog().getByLabel('Voice note mode').selectOption('recorded');
    await has(dialog().getByRole('alert'), 'A pre-recorded voice note needs a recording from the library (its id).');
    await dialog().getByLabel('Recording id').fill('rec-intro-01');
    await dialog().getByTestId('save-step').click();
    await dialog().waitFor({ state: 'detached' });
    await has(yes.locator('.step-card[data-step-type="SEND_MESSAGE"]'), 'Recorded voice note');
    await dialog().waitFor({ state: 'detached' });
    await yes.locator('.step-card[data-step-type="SEND_MESSAGE"]').getByRole('button', { name: 'Edit' }).click();
    await dialog().getByLabel('Voice note mode').selectOption('ai_voice');
    await dialog().getByTestId('save-step').click();
    await dialog().waitFor({ state: 'detached' });
    await has(yes.locator('.step-card[data-step-type="SEND_MESSAGE"]'), 'AI voice note');
    await has(page.getByTestId('sequence-editor'), 'Ready to start');
  }, 60_000);

  it('flags a schedule day that starts after it ends, and the save is refused with the reason', async () => {
    await openTab('Schedule');
    const saturday = page.locator('tr[data-day="saturday"]');
    await saturday.getByLabel('Saturday enabled').check();
    // Times are typed and shown 24-hour, like the messages about them, whatever the browser's locale.
    await saturday.getByLabel('Saturday start').fill('6pm');
    await has(saturday.getByRole('alert'), '“6pm” is not a 24-hour start time: use HH:MM, e.g. 09:00.');
    await saturday.getByLabel('Saturday start').fill('18:00');
    await saturday.getByLabel('Saturday end').fill('09:00');
    await has(saturday.getByRole('alert'), 'Starts at 18:00, which is not before its end 09:00.');
    await page.getByRole('button', { name: 'Save schedule' }).click();
    const refusal = page.getByTestId('schedule-error').getByRole('alert');
    await refusal.waitFor();
    await has(refusal, "The sending schedule is not valid: Saturday's sending window starts at 18:00, which is not before it ends at 09:00.");
    await screenshot(page, 'campaign-schedule-refused');

    // A valid window saves.
    await saturday.getByLabel('Saturday start').fill('10:00');
    await saturday.getByLabel('Saturday end').fill('24:00');
    await page.getByRole('button', { name: 'Save schedule' }).click();
    await page.getByText('Schedule saved.').waitFor();
    await expect(saturday.getByLabel('Saturday end').inputValue()).resolves.toBe('24:00');
    await expect.poll(() => page.getByRole('button', { name: 'Save schedule' }).isDisabled()).toBe(true);
  }, 30_000);

  it('starts after confirmation, then refuses sequence edits while running and explains why', async () => {
    await page.getByRole('button', { name: 'Start campaign…' }).click();
    await dialog().getByTestId('readiness-ok').waitFor();
    await has(dialog(), 'Starting messages real people');
    await screenshot(page, 'campaign-start-confirm');
    await dialog().getByRole('button', { name: 'Start and message people' }).click();
    await dialog().waitFor({ state: 'detached' });
    await page.locator('.campaign-header .run-pill.running').waitFor();

    await openTab('Sequence');
    await page.getByTestId('sequence-running').waitFor();
    // A running campaign says so, and the buttons that cannot succeed are disabled with the reason.
    await has(page.getByTestId('sequence-state'), 'Running');
    await expect(card(1).getByRole('button', { name: 'Edit' }).isDisabled()).resolves.toBe(true);
    await expect(card(1).getByRole('button', { name: 'Edit' }).getAttribute('title')).resolves.toBe('Pause the campaign to change its sequence.');
    await expect(card(1).getByRole('button', { name: 'Remove step 1' }).isDisabled()).resolves.toBe(true);
    await has(page.getByTestId('sequence-running'), 'pause it to add, edit or remove a step');
    await screenshot(page, 'campaign-edit-while-running');
    await has(card(1), 'how is {{Pain point|growth}} going?');

    await page.getByRole('button', { name: 'Pause campaign' }).click();
    await page.locator('.campaign-header .run-pill.paused').waitFor();
    expect(page.errors).toEqual([]);
  }, 60_000);
});
