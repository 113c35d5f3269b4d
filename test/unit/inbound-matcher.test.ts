/**
 * The inbound matcher of the hosts' channels (channels/host.ts storeMatcher): a reply is matched to
 * the lead by the sender's address through the lead's email key, so a lead stored with another
 * case or with spaces around its address is found like every other look-up of a person; and only a
 * lead this sender emailed before the reply arrived counts.
 */
import { describe, expect, it } from 'vitest';
import { storeMatcher } from '../../channels/host.ts';
import { newMessage } from '../../shared/model/factories.ts';
import { makeHarness } from '../support/harness.ts';

async function world() {
  const h = await makeHarness();
  const sender = await h.addSender({ name: 'Sam' });
  const other = await h.addSender({ name: 'Ola' });
  const lead = await h.addLead({ firstName: 'Eve', email: '  Eve.Mail@Example.COM ' });
  const sentAt = '2026-11-20T10:00:00.000Z';
  const sent = newMessage(h.stamp(), { leadId: lead.id, sdrProfileId: sender.id, chatId: 'chat-1', direction: 'out', kind: 'email', text: 'Hi Eve', status: 'sent', sentAt, externalId: '<m1@acme.test>' });
  await h.seed([{ collection: 'messages', id: sent.id, before: null, after: sent }]);
  return { h, sender, other, lead, sentAt, matcher: storeMatcher(h.store) };
}

describe('inbound matching by address', () => {
  it('finds the lead whatever the case and spaces of the stored and the incoming address', async () => {
    const { sender, lead, matcher } = await world();
    for (const from of ['eve.mail@example.com', 'EVE.MAIL@EXAMPLE.COM', ' Eve.Mail@example.com ']) {
      expect(await matcher.byAddress(sender, from, '2026-11-21T00:00:00.000Z')).toEqual({ leadId: lead.id, chatId: 'chat-1' });
    }
  });

  it('matches only a lead this sender emailed before the message arrived', async () => {
    const { sender, other, matcher } = await world();
    expect(await matcher.byAddress(sender, 'eve.mail@example.com', '2026-11-19T00:00:00.000Z')).toBeNull();
    expect(await matcher.byAddress(other, 'eve.mail@example.com', '2026-11-21T00:00:00.000Z')).toBeNull();
    expect(await matcher.byAddress(sender, 'someone.else@example.com', '2026-11-21T00:00:00.000Z')).toBeNull();
    expect(await matcher.byAddress(sender, 'not an address', '2026-11-21T00:00:00.000Z')).toBeNull();
  });
});
