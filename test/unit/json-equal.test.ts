import { describe, expect, it } from 'vitest';
import { sameJson } from '../../shared/json-equal.ts';
import { MemoryDatabase } from '../../shared/memory-store.ts';
import { newLead } from '../../shared/model/factories.ts';
import { validateChange } from '../../shared/rules/index.ts';
import { makeHarness } from '../support/harness.ts';

describe('sameJson, the one JSON equality of every store', () => {
  it('ignores key order and undefined keys, and nothing else', () => {
    expect(sameJson({ a: 1, b: { c: [1, { d: 'x' }] } }, { b: { c: [1, { d: 'x' }] }, a: 1 })).toBe(true);
    expect(sameJson({ a: 1, gone: undefined }, { a: 1 })).toBe(true);
    expect(sameJson(null, null)).toBe(true);
    expect(sameJson({ a: 1 }, { a: '1' })).toBe(false);
    expect(sameJson([1, 2], [2, 1])).toBe(false);
    expect(sameJson({ a: null }, {})).toBe(false);
    expect(sameJson([], {})).toBe(false);
    expect(sameJson({}, null)).toBe(false);
    // An own key is not found on the other side's prototype.
    expect(sameJson({ constructor: 1 }, { other: 1 })).toBe(false);
  });

  it("lets the memory store accept a write based on the stored document with its keys in another order (jsonb's order)", async () => {
    const db = new MemoryDatabase();
    const store = db.forWorkspace('ws-1');
    const lead = newLead({ id: 'lead-1', workspaceId: 'ws-1', now: '2026-01-01T00:00:00.000Z' }, 'group-1', { firstName: 'Ann' });
    await store.commit([{ collection: 'leads', id: lead.id, before: null, after: lead }]);
    const reordered = Object.fromEntries(Object.entries(lead).reverse()) as typeof lead;
    await store.commit([{ collection: 'leads', id: lead.id, before: reordered, after: { ...lead, firstName: 'Anna' } }]);
    expect((await store.get('leads', lead.id))?.firstName).toBe('Anna');
    await expect(store.commit([{ collection: 'leads', id: lead.id, before: lead, after: lead }])).rejects.toMatchObject({ code: 'CONFLICT' });
  });
});

/** A document as PostgreSQL's jsonb hands it back: keys ordered by length, then bytes. */
function jsonbOrder<T>(v: T): T {
  if (Array.isArray(v)) return v.map(jsonbOrder) as T;
  if (v === null || typeof v !== 'object') return v;
  const keys = Object.keys(v).sort((a, b) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0));
  return Object.fromEntries(keys.map((k) => [k, jsonbOrder((v as Record<string, unknown>)[k])])) as T;
}

describe('the rules compare what a write changes by value, not by key order', () => {
  it("a member's rename of their sender is not taken for a change of its plan, nor a running campaign's rename for a sequence change", async () => {
    const h = await makeHarness();
    const sender = await h.addSender({ ownerMemberId: h.member.memberId });
    const campaign = await h.addCampaign({ senderIds: [sender.id], running: true });
    // The stored state as the server reads it (jsonb's key order); the pushed one as a desktop wrote it.
    const rctx = { actor: h.member, read: h.store, now: h.clock.now() };
    await expect(validateChange({ collection: 'senders', before: jsonbOrder(sender), after: { ...sender, name: 'Sam S.' } }, rctx)).resolves.toBeUndefined();
    await expect(validateChange({ collection: 'campaigns', before: jsonbOrder(campaign), after: { ...campaign, name: 'Q4 outreach (DE)' } }, rctx)).resolves.toBeUndefined();
    // A real change is still one.
    await expect(validateChange({ collection: 'senders', before: jsonbOrder(sender), after: { ...sender, planMax: { ...sender.planMax, messages: 999 } } }, rctx)).rejects.toMatchObject({ code: 'PERMISSION_DENIED' });
    const [step] = campaign.steps;
    await expect(validateChange({ collection: 'campaigns', before: jsonbOrder(campaign), after: { ...campaign, steps: step ? [{ ...step, content: 'Hello' }] : [] } }, rctx)).rejects.toMatchObject({ code: 'CAMPAIGN_NOT_PAUSED' });
  });
});
