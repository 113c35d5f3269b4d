/** The field limits of stored documents (shared/model: defined once, checked on every write) and the
 * reference rules (shared/rules/references.ts), on the in-memory store the desktop's rules also see. */
import { describe, expect, it } from 'vitest';
import { DOCUMENT_MAX_DEPTH, DOCUMENT_MAX_ITEMS, INDEXED_TEXT_MAX_BYTES, TEXT_LIMITS, timestampProblem, unstorableText } from '../../shared/model/common.ts';
import { emptyUsage, newCampaign, newLead, newMessage, newSender } from '../../shared/model/factories.ts';
import { schemaProblem } from '../../shared/model/validate.ts';
import { validateChange, validateWrites } from '../../shared/rules/index.ts';
import type { Change } from '../../shared/rules/index.ts';
import type { CollectionName } from '../../shared/model/index.ts';
import { makeHarness } from '../support/harness.ts';

const stamp = { id: '00000000-0000-4000-8000-000000000001', workspaceId: '00000000-0000-4000-8000-0000000000aa', now: '2026-11-16T10:00:00.000Z' };
const lead = newLead(stamp, '00000000-0000-4000-8000-0000000000bb', { firstName: 'Ada', email: 'ada@example.test' });

describe('document limits (schemaProblem)', () => {
  it('accepts a valid document and text exactly at its limit', () => {
    expect(schemaProblem('leads', lead)).toBeNull();
    const email = `${'a'.repeat(TEXT_LIMITS.email - 13)}@example.test`;
    expect(email.length).toBe(TEXT_LIMITS.email);
    expect(schemaProblem('leads', { ...lead, email })).toBeNull();
    expect(schemaProblem('leads', { ...lead, company: 'c'.repeat(TEXT_LIMITS.leadField) })).toBeNull();
    expect(schemaProblem('leads', { ...lead, firstName: 'Zoë 🙂 Ñ' })).toBeNull();
  });

  it('refuses text over its limit, in characters and (indexed fields) in UTF-8 bytes', () => {
    expect(schemaProblem('leads', { ...lead, email: `${'a'.repeat(2_800)}@x.test` })).toMatch(/^\/email must not be longer than 320 characters/);
    expect(schemaProblem('leads', { ...lead, company: 'c'.repeat(TEXT_LIMITS.leadField + 1) })).toMatch(/\/company must not be longer than 2000/);
    expect(schemaProblem('leads', { ...lead, variables: { col: 'v'.repeat(TEXT_LIMITS.leadField + 1) } })).toMatch(/\/variables\/col must not be longer/);
    expect(schemaProblem('leads', { ...lead, socialUrl: `https://x.test/${'字'.repeat(600)}` })).toBe(`/socialUrl must not be longer than ${INDEXED_TEXT_MAX_BYTES} bytes of UTF-8`);
    expect(schemaProblem('tags', { id: 't', workspaceId: 'w', createdAt: stamp.now, updatedAt: stamp.now, name: 'x', color: '#123456', extra: 1 })).toMatch(/additional/);
  });

  it('refuses NUL and lone surrogates in any text, values and field names', () => {
    expect(schemaProblem('leads', { ...lead, company: 'a\u0000b' })).toMatch(/\/company must not contain NUL/);
    expect(schemaProblem('leads', { ...lead, lastName: 'x\udfffy' })).toMatch(/\/lastName must not contain unpaired UTF-16 surrogates/);
    expect(schemaProblem('leads', { ...lead, variables: { 'a\u0000': 'x' } })).toMatch(/field name must not contain NUL/);
    expect(unstorableText('paired 🙂 is fine')).toBeNull();
    expect(unstorableText('\ud83d')).not.toBeNull();
  });

  it('refuses timestamps that are not ISO date-times in the years 1900-9999', () => {
    for (const bad of ['0000-01-01T00:00:00Z', '2026-02-30T00:00:00Z', '2026-11-16', 'next tuesday', '2026-11-16T25:00:00Z', '1899-12-31T23:59:59Z']) {
      expect(timestampProblem(bad), bad).not.toBeNull();
      expect(schemaProblem('leads', { ...lead, followUpAt: bad }), bad).toMatch(/^\/followUpAt /);
    }
    for (const good of ['2026-11-16T10:00:00.000Z', '2026-11-16T10:00:00+01:00', '2026-11-16T10:00Z', '9999-12-31T23:59:59.999Z']) expect(timestampProblem(good), good).toBeNull();
  });

  it('judges a text at each field by that field\'s limit, however often the same text was good elsewhere', () => {
    const short = 'x'.repeat(40);
    for (let i = 0; i < 3; i++) expect(schemaProblem('leads', { ...lead, company: short, variables: { col: short } })).toBeNull();
    // The same 40 characters, good as a company a moment ago, are no timestamp.
    expect(schemaProblem('leads', { ...lead, company: short, followUpAt: short })).toMatch(/^\/followUpAt must be an ISO 8601 date-time/);
    const timestamp = '2026-11-16T10:00:00.000Z';
    expect(schemaProblem('leads', { ...lead, followUpAt: timestamp })).toBeNull();
    expect(schemaProblem('leads', { ...lead, followUpAt: timestamp, company: 'a\u0000b' })).toMatch(/\/company must not contain NUL/);
  });

  it('refuses deep nesting and huge arrays without recursing', () => {
    let config: unknown = 1;
    for (let i = 0; i < 20_000; i++) config = { a: config };
    const campaign = newCampaign(stamp, 'Deep', lead.leadGroupId, stamp.id);
    expect(schemaProblem('campaigns', { ...campaign, config })).toMatch(new RegExp(`nested more than ${DOCUMENT_MAX_DEPTH} levels`));
    expect(schemaProblem('leads', { ...lead, groupIds: Array.from({ length: DOCUMENT_MAX_ITEMS + 1 }, () => lead.leadGroupId) })).toMatch(/more than 10000 items/);
  });
});

describe('references (shared/rules/references.ts)', () => {
  it('refuses references to documents of another workspace or to nothing, and keeps unchanged ones', async () => {
    const h = await makeHarness();
    const judge = <C extends CollectionName>(change: Change<C>) => validateChange(change as Change<CollectionName>, { actor: h.owner, read: h.store, now: h.clock.now() });
    const foreignTag = { id: h.ids.uuid(), workspaceId: h.other.workspaceId, createdAt: h.now(), updatedAt: h.now(), name: 'Theirs', color: '#654321' };
    await h.db.forWorkspace(h.other.workspaceId).commit([{ collection: 'tags', id: foreignTag.id, before: null, after: foreignTag }]);
    const mine = await h.addLead({ firstName: 'Mine' });

    await expect(judge({ collection: 'leads', before: mine, after: { ...mine, tagId: foreignTag.id } })).rejects.toMatchObject({ code: 'NOT_FOUND', details: { what: 'Tag', id: foreignTag.id } });
    await expect(judge({ collection: 'leads', before: mine, after: { ...mine, tagId: h.ids.uuid() } })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(judge({ collection: 'leads', before: mine, after: { ...mine, groupIds: [...mine.groupIds, h.other.leadGroupId] } })).rejects.toMatchObject({ code: 'NOT_FOUND', details: { what: 'Lead group' } });
    // A reference that was already there (a tag deleted since) does not block other edits.
    const dangling = { ...mine, tagId: h.ids.uuid() };
    await expect(judge({ collection: 'leads', before: dangling, after: { ...dangling, company: 'Acme' } })).resolves.toBeUndefined();

    const sender = await h.addSender();
    const message = newMessage(h.stamp(), { leadId: h.ids.uuid(), sdrProfileId: sender.id, chatId: 'c', direction: 'out', kind: 'message', text: 'hi' });
    await expect(judge({ collection: 'messages', before: null, after: message })).rejects.toMatchObject({ code: 'NOT_FOUND', details: { what: 'Lead' } });
    await expect(judge({ collection: 'messages', before: null, after: { ...message, leadId: mine.id } })).resolves.toBeUndefined();
    await expect(judge({ collection: 'messages', before: null, after: { ...message, leadId: mine.id, campaignId: h.ids.uuid() } })).rejects.toMatchObject({ details: { what: 'Campaign' } });
    await expect(judge({ collection: 'usage', before: null, after: emptyUsage(h.main.workspaceId, h.ids.uuid(), '2026-11-16', h.now()) })).rejects.toMatchObject({ details: { what: 'Sender' } });
    const stranger = newSender(h.stamp(), { name: 'S', ownerMemberId: h.other.ownerId, channel: 'sandbox' });
    await expect(judge({ collection: 'senders', before: null, after: stranger })).rejects.toMatchObject({ code: 'NOT_FOUND', details: { what: 'Member' } });
  });

  it('checks new leads whose rules read nothing (their list already seen) without a turn of the microtask queue per lead', async () => {
    const h = await makeHarness();
    const writes = Array.from({ length: 1000 }, (_, i) => {
      const after = newLead(h.stamp(), h.main.leadGroupId, { firstName: `Lead ${i}` });
      return { collection: 'leads' as const, id: after.id, before: null, after };
    });
    // Turns of the microtask queue while the check runs: a chain that takes one step a turn.
    let turns = 0;
    let done = false;
    const step = () => {
      if (done) return;
      turns++;
      queueMicrotask(step);
    };
    queueMicrotask(step);
    await validateWrites(writes, { actor: h.owner, read: h.store, now: h.clock.now() });
    done = true;
    // The first lead's list is looked up (a few turns); awaiting each rule of each lead took 8,003.
    expect(turns).toBeLessThan(50);
    // The refusals are those of each rule in turn, as before.
    const stray = newLead(h.stamp(), h.ids.uuid(), {});
    await expect(validateWrites([...writes, { collection: 'leads', id: stray.id, before: null, after: stray }], { actor: h.owner, read: h.store, now: h.clock.now() })).rejects.toMatchObject({ code: 'NOT_FOUND', details: { what: 'Lead group' } });
    const lost = newLead(h.stamp(), h.main.leadGroupId, { pipelineStageId: h.ids.uuid() });
    await expect(validateWrites([{ collection: 'leads', id: lost.id, before: null, after: lost }], { actor: h.owner, read: h.store, now: h.clock.now() })).rejects.toMatchObject({ code: 'NOT_FOUND', details: { what: 'pipeline stage' } });
  });

  it('a lead import reports a row whose email is over the stored limit and imports the others', async () => {
    const h = await makeHarness();
    const out = await h.call('campaigns.leads.create', {
      leadGroupId: h.main.leadGroupId,
      leads: [{ firstName: 'Long', email: `${'x'.repeat(400)}@example.test` }, { firstName: 'Fine', email: 'fine@example.test' }],
    });
    expect(out.created).toBe(1);
    expect(out.errors).toEqual([{ index: 0, message: expect.stringMatching(/email is longer than 320 characters/) }]);
  });

  it('an operation refuses the same reference with nothing stored', async () => {
    const h = await makeHarness();
    const lead = await h.addLead({ firstName: 'Op' });
    await h.expectRefused(h.call('campaigns.leads.updateTag', { leadGroupId: h.main.leadGroupId, leadId: lead.id, tagId: h.ids.uuid() }), 'NOT_FOUND');
  });
});
