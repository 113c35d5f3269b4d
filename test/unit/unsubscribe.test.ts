/**
 * Unsubscribe: the signed tokens of List-Unsubscribe (shared/replies/unsubscribe-token.ts), and what
 * the runner does with an unsubscribe mail read from a sender's mailbox (inbound.ts): a token this
 * sender signed for this lead marks the lead Do Not Contact with unsubscribedAt/unsubscribeSource,
 * stops its sequences in every campaign and says so on the timeline; a forged, altered or foreign
 * token changes nothing. An email sender from before keys existed gets one from its runner.
 */
import { describe, expect, it } from 'vitest';
import { newStep } from '../../shared/model/factories.ts';
import type { Sender } from '../../shared/model/index.ts';
import {
  newUnsubscribeKey,
  readUnsubscribeToken,
  signUnsubscribeToken,
  tokenInSubject,
  unsubscribeSubject,
  unsubscribeUrl,
  verifyUnsubscribeToken,
} from '../../shared/replies/unsubscribe-token.ts';
import { recordingBytes, testSecrets } from '../support/harness.ts';
import { engineWorld } from './engine-fixtures.ts';

const WS = 'b0000000-0000-4000-8000-00000000000a';
const SENDER = 'b0000000-0000-4000-8000-0000000000b2';
const LEAD = 'b0000000-0000-4000-8000-0000000000c3';
const KEY = newUnsubscribeKey(testSecrets.randomBytes);


/** The token with one character changed at `i` (to another valid base64url character). */
const flip = (t: string, i: number): string => `${t.slice(0, i)}${t[i] === 'A' ? 'B' : 'A'}${t.slice(i + 1)}`;

describe('unsubscribe tokens', () => {
  it('round-trips: the claim comes back from a token signed with the key, 87 URL-safe characters', async () => {
    const token = await signUnsubscribeToken(KEY, { workspaceId: WS, sdrProfileId: SENDER, leadId: LEAD });
    expect(token).toMatch(/^[A-Za-z0-9_-]{87}$/);
    expect(await verifyUnsubscribeToken(KEY, token ?? '')).toEqual({ workspaceId: WS, sdrProfileId: SENDER, leadId: LEAD });
    expect(readUnsubscribeToken(token ?? '')).toEqual({ workspaceId: WS, sdrProfileId: SENDER, leadId: LEAD });
  });

  it('refuses another key, any changed character (claim or signature), another version, and garbage', async () => {
    const token = (await signUnsubscribeToken(KEY, { workspaceId: WS, sdrProfileId: SENDER, leadId: LEAD })) ?? '';
    expect(await verifyUnsubscribeToken(newUnsubscribeKey(testSecrets.randomBytes), token)).toBeNull();
    // Character 40 lies in the lead id, 80 in the signature.
    expect(readUnsubscribeToken(flip(token, 40))).not.toBeNull();
    expect(await verifyUnsubscribeToken(KEY, flip(token, 40))).toBeNull();
    expect(await verifyUnsubscribeToken(KEY, flip(token, 80))).toBeNull();
    // The last character's 2 low bits encode no byte: its 3 other spellings decode to the same
    // bytes, and are refused all the same (one token, one text).
    const last = token.charCodeAt(86);
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const group = alphabet.indexOf(String.fromCharCode(last)) & ~3;
    const spellings = [0, 1, 2, 3].map((i) => `${token.slice(0, 86)}${alphabet[group + i] ?? ''}`).filter((t) => t !== token);
    expect(spellings).toHaveLength(3);
    for (const t of spellings) {
      expect(Buffer.from(t, 'base64url').equals(Buffer.from(token, 'base64url')), t).toBe(true);
      expect(readUnsubscribeToken(t), t).toBeNull();
      expect(await verifyUnsubscribeToken(KEY, t), t).toBeNull();
    }
    // The version byte is the first: a token of version 2 is none we know.
    const bytes = Buffer.from(token, 'base64url');
    expect(bytes[0]).toBe(1);
    bytes[0] = 2;
    expect(readUnsubscribeToken(bytes.toString('base64url'))).toBeNull();
    for (const bad of ['', 'x', token.slice(0, 86), `${token}A`, `${token.slice(0, 86)}!`]) {
      expect(await verifyUnsubscribeToken(KEY, bad), bad).toBeNull();
    }
    expect(await verifyUnsubscribeToken('', token)).toBeNull();
  });

  it('makes a key of 256 bits from the host\'s random bytes, as 64 hex characters, never from ids', () => {
    const given = recordingBytes();
    const key = newUnsubscribeKey(given.bytes);
    expect(given.asked).toEqual([32]);
    expect(key).toBe(Buffer.from(given.made[0] ?? []).toString('hex'));
    expect(key).toMatch(/^[0-9a-f]{64}$/);
  });

  it('signs nothing for ids that are not UUIDs, or without a key', async () => {
    expect(await signUnsubscribeToken(KEY, { workspaceId: WS, sdrProfileId: SENDER, leadId: 'not-a-uuid' })).toBeNull();
    expect(await signUnsubscribeToken('', { workspaceId: WS, sdrProfileId: SENDER, leadId: LEAD })).toBeNull();
  });

  it('finds the token in an unsubscribe subject, behind Re:/Fwd:, and nowhere else', async () => {
    const token = (await signUnsubscribeToken(KEY, { workspaceId: WS, sdrProfileId: SENDER, leadId: LEAD })) ?? '';
    expect(tokenInSubject(unsubscribeSubject(token))).toBe(token);
    expect(tokenInSubject(`Re: Fwd: UNSUBSCRIBE ${token}`)).toBe(token);
    expect(tokenInSubject('unsubscribe')).toBeNull();
    expect(tokenInSubject(`Please unsubscribe ${token}`)).toBeNull();
    expect(unsubscribeUrl('https://crm.acme.example/', token)).toBe(`https://crm.acme.example/unsubscribe/${token}`);
  });
});

describe('an unsubscribe mail read by the runner', () => {
  async function world() {
    const w = await engineWorld();
    // An email sender (the scripted channel plays its mailbox) with its key, and a sandbox sender.
    const mail = await w.h.addSender({ name: 'Mia Mailer', channel: 'email', capabilities: ['email'], unsubscribeKey: newUnsubscribeKey(testSecrets.randomBytes) });
    const social = await w.h.addSender({ name: 'Sam Social' });
    const lead = await w.h.addLead({ fullName: 'Ada Lovelace', email: 'ada@example.test' });
    const emails = await w.h.addCampaign({ name: 'Email run', senderIds: [mail.id], steps: [newStep(w.h.ids.uuid(), 'EMAIL', { subject: 'Hi', content: 'Hi' }), newStep(w.h.ids.uuid(), 'WAIT', { waitTimeSeconds: 86_400 }), newStep(w.h.ids.uuid(), 'EMAIL', { subject: 'Again', content: 'Again' })] });
    const messages = await w.h.addCampaign({ name: 'Social run', senderIds: [social.id], steps: [newStep(w.h.ids.uuid(), 'WAIT', { waitTimeSeconds: 3 * 86_400 }), newStep(w.h.ids.uuid(), 'SEND_MESSAGE', { content: 'Hello' })] });
    await w.start(emails);
    await w.start(messages);
    const inEmail = await w.enroll(lead, emails, { sdrProfileId: mail.id });
    const inSocial = await w.enroll(lead, messages, { sdrProfileId: social.id });
    const token = async (s: Pick<Sender, 'id' | 'unsubscribeKey'>, leadId = lead.id) =>
      (await signUnsubscribeToken(s.unsubscribeKey ?? '', { workspaceId: w.h.main.workspaceId, sdrProfileId: s.id, leadId })) ?? '';
    return { w, mail, social, lead, inEmail, inSocial, token };
  }

  it('marks the lead Do Not Contact, stops its sequences in every campaign and records it, once', async () => {
    const { w, mail, lead, inEmail, inSocial, token } = await world();
    await w.runner().tick();
    expect(w.scripted.sent).toHaveLength(1);
    w.scripted.events.push({ kind: 'unsubscribe', leadId: lead.id, token: await token(mail), at: '2026-11-16T09:30:00.000Z', externalId: '<u1@example.test>' });
    await w.runner().tick();
    const after = await w.h.store.get('leads', lead.id);
    expect(after).toMatchObject({ doNotContact: true, unsubscribedAt: '2026-11-16T09:30:00.000Z', unsubscribeSource: 'mailto' });
    for (const id of [inEmail.id, inSocial.id]) expect(await w.enrollment(id)).toMatchObject({ status: 'STOPPED', stoppedReason: 'unsubscribed', nextActionAt: null });
    const events = await w.events('lead_unsubscribed');
    expect(events).toHaveLength(1);
    expect(events[0]?.content).toBe('Ada Lovelace unsubscribed by email to the unsubscribe address of an email: marked Do Not Contact. The sequences in "Email run", "Social run" stopped.');
    expect(events[0]?.metadata.sdrProfileId).toBe(mail.id);
    // The same mail read again (a rebuilt mailbox) records nothing twice; nothing more is sent.
    w.scripted.events.push({ kind: 'unsubscribe', leadId: lead.id, token: await token(mail), at: '2026-11-16T09:31:00.000Z', externalId: '<u1@example.test>' });
    w.h.clock.advance(2 * 86_400_000);
    await w.runner().tick();
    expect(await w.events('lead_unsubscribed')).toHaveLength(1);
    expect((await w.h.store.get('leads', lead.id))?.unsubscribedAt).toBe('2026-11-16T09:30:00.000Z');
    expect(w.scripted.sent).toHaveLength(1);
  });

  it('changes nothing for a token signed with another key, for another sender or another lead, or altered', async () => {
    const { w, mail, social, lead, inEmail, token } = await world();
    const other = await w.h.addLead({ fullName: 'Grace Hopper', email: 'grace@example.test' });
    const withOtherKey = { id: mail.id, unsubscribeKey: newUnsubscribeKey(testSecrets.randomBytes) };
    const socialKeyed = { id: social.id, unsubscribeKey: mail.unsubscribeKey ?? null };
    const forged = [
      await token(withOtherKey),
      // Signed with the right key but naming another sender: not this mailbox's token.
      await token(socialKeyed),
      flip(await token(mail), 80),
    ];
    for (const t of forged) w.scripted.events.push({ kind: 'unsubscribe', leadId: lead.id, token: t, at: '2026-11-16T09:30:00.000Z', externalId: `<f-${t.slice(-6)}@x>` });
    // A valid token of another lead, delivered as if for Ada.
    w.scripted.events.push({ kind: 'unsubscribe', leadId: lead.id, token: await token(mail, other.id), at: '2026-11-16T09:30:00.000Z', externalId: '<f-other@x>' });
    const report = await w.runner().tick();
    expect(await w.h.store.get('leads', lead.id)).toMatchObject({ doNotContact: false });
    expect((await w.h.store.get('leads', lead.id))?.unsubscribedAt ?? null).toBeNull();
    expect((await w.h.store.get('leads', other.id))?.doNotContact).toBe(false);
    expect((await w.enrollment(inEmail.id)).status).toBe('IN_PROGRESS');
    expect(await w.events('lead_unsubscribed')).toHaveLength(0);
    expect(report.errors.filter((e) => /did not sign; nothing was changed/.test(e.message))).toHaveLength(4);
  });

  it('gives an email sender from before unsubscribe keys one, before it sends; other senders get none', async () => {
    const w = await engineWorld();
    const old = await w.h.addSender({ name: 'Old Mailer', channel: 'email', capabilities: ['email'] });
    const social = await w.h.addSender({ name: 'Sam Social' });
    expect(old.unsubscribeKey ?? null).toBeNull();
    const lead = await w.h.addLead({ fullName: 'Ada', email: 'ada@example.test' });
    const c = await w.h.addCampaign({ senderIds: [old.id], steps: [newStep(w.h.ids.uuid(), 'EMAIL', { subject: 'Hi', content: 'Hi' })] });
    await w.start(c);
    await w.enroll(lead, c, { sdrProfileId: old.id });
    const given = recordingBytes();
    await w.runner({ randomBytes: given.bytes }).tick();
    const key = (await w.h.store.get('senders', old.id))?.unsubscribeKey;
    expect(key).toMatch(/^[0-9a-f]{64}$/);
    // The runner's random bytes, not its ids.
    expect(given.asked).toEqual([32]);
    expect(key).toBe(Buffer.from(given.made[0] ?? []).toString('hex'));
    // The first email already went out with it: the channel was handed the sender with its key.
    expect(w.scripted.sent[0]?.sender.unsubscribeKey).toBe(key);
    expect((await w.h.store.get('senders', social.id))?.unsubscribeKey ?? null).toBeNull();
    await w.runner().tick();
    expect((await w.h.store.get('senders', old.id))?.unsubscribeKey).toBe(key);
  });
});
