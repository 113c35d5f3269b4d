/** The IMAP channel's poll steps on their own (channels/imap-inbox.ts), without a server: the
 * cursor, whether to look, how the interval grows, which UIDs are read, and what an inbound email
 * is and which of our sends it answers. The channel against a real Dovecot is tested in
 * test/integration/channels-imap.test.ts. */
import { describe, expect, it } from 'vitest';
import type { InboundMatch, InboundMatcher } from '../../channels/imap.ts';
import { inboundEvent, lookDue, newUids, nextInterval, parseCursor, readInbound } from '../../channels/imap-inbox.ts';
import type { InboundMail } from '../../channels/imap-inbox.ts';
import { newSender } from '../../shared/model/factories.ts';

const sender = newSender({ id: 'sender-1', workspaceId: 'w', now: '2026-11-16T10:00:00.000Z' }, { name: 'Sam Sender', ownerMemberId: 'm', channel: 'email' });
const NOW = Date.parse('2026-11-16T12:00:00.000Z');
const settings = { now: () => NOW, log: () => undefined };

const source = (headers: string[], body = 'Hello.'): Buffer => Buffer.from([...headers, 'MIME-Version: 1.0', 'Content-Type: text/plain; charset=utf-8', '', body, ''].join('\r\n'));

async function inbound(headers: string[], body?: string, internalDate?: Date): Promise<InboundMail> {
  const read = await readInbound(sender, { uid: 7, source: source(headers, body), ...(internalDate ? { internalDate } : {}) }, settings);
  if (!read) throw new Error('not read');
  return read;
}

/** A matcher over fixed answers that notes what it was asked. */
function matcher(answers: { byIds?: InboundMatch; byAddress?: InboundMatch; recorded?: boolean } = {}) {
  const asked: string[] = [];
  const m: InboundMatcher = {
    async byMessageIds(_s, ids) {
      asked.push(`ids ${ids.join(' ')}`);
      return answers.byIds ?? null;
    },
    async byAddress(_s, address, before) {
      asked.push(`address ${address} before ${before}`);
      return answers.byAddress ?? null;
    },
    async recorded(_s, id) {
      asked.push(`recorded ${id}`);
      return answers.recorded ?? false;
    },
  };
  return { m, asked };
}

describe('the poll cursor and when to look', () => {
  it('a cursor names the mailbox and the last UID read; anything else is no cursor', () => {
    expect(parseCursor('imap:1700000000:42')).toEqual({ validity: '1700000000', last: 42 });
    expect(parseCursor(null)).toBeNull();
    expect(parseCursor('42')).toBeNull();
    expect(parseCursor('imap:x:42')).toBeNull();
  });

  it('announced mail is looked at at once; otherwise with IDLE after the recheck interval, without it after the growing interval', () => {
    const quiet = { dirty: false, lastFetchAt: 1_000, interval: 30_000 };
    expect(lookDue({ ...quiet, dirty: true, idle: true }, 300_000, 1_001)).toBe(true);
    expect(lookDue({ ...quiet, idle: true }, 300_000, 1_000 + 299_999)).toBe(false);
    expect(lookDue({ ...quiet, idle: true }, 300_000, 1_000 + 300_000)).toBe(true);
    expect(lookDue({ ...quiet, idle: false }, 300_000, 1_000 + 29_999)).toBe(false);
    expect(lookDue({ ...quiet, idle: false }, 300_000, 1_000 + 30_000)).toBe(true);
  });

  it('the interval goes back to the shortest after mail, and doubles while quiet up to the recheck interval', () => {
    const s = { pollMs: 30_000, recheckMs: 100_000 };
    expect(nextInterval(30_000, false, s)).toBe(60_000);
    expect(nextInterval(60_000, false, s)).toBe(100_000);
    expect(nextInterval(100_000, true, s)).toBe(30_000);
  });

  it('the UIDs read are those after the cursor, in order, a batch at a time', () => {
    // `n:*` answers the highest message even when it is below n.
    expect(newUids([5], 5, 10)).toEqual({ wanted: [], more: false });
    expect(newUids([9, 6, 8, 7], 5, 3)).toEqual({ wanted: [6, 7, 8], more: true });
    expect(newUids([6, 7], 5, 2)).toEqual({ wanted: [6, 7], more: false });
    expect(newUids(false, 0, 10)).toEqual({ wanted: [], more: false });
  });
});

describe('what an inbound email is, and which send it answers', () => {
  it('its arrival is the server\'s date, else its Date header, else now; its Message-ID, else one made from its UID', async () => {
    const withId = ['From: ada@example.test', 'Subject: Re: Idea', 'Message-ID:  <reply-1@example.test> ', 'Date: Mon, 16 Nov 2026 09:30:00 +0000'];
    expect((await inbound(withId, 'x', new Date('2026-11-16T09:45:00.000Z'))).at).toBe('2026-11-16T09:45:00.000Z');
    const byHeader = await inbound(withId);
    expect([byHeader.at, byHeader.messageId]).toEqual(['2026-11-16T09:30:00.000Z', '<reply-1@example.test>']);
    const bare = await inbound(['From: ada@example.test', 'Subject: Re: Idea']);
    expect([bare.at, bare.messageId]).toEqual([new Date(NOW).toISOString(), '<imap-7@sender-1>']);
    expect(await readInbound(sender, { uid: 8 }, settings)).toBeNull();
  });

  it('a reply is matched by the Message-IDs it cites (newest first), else by its sender\'s address, and not recorded twice', async () => {
    const match = { leadId: 'lead-1', chatId: 'chat-1' };
    const reply = await inbound(['From: Ada <ada@example.test>', 'Subject: Re: Idea', 'Message-ID: <r@example.test>', 'References: <first@acme.test> <second@acme.test>'], 'Yes, Tuesday.');
    const cited = matcher({ byIds: match });
    expect(await inboundEvent(cited.m, sender, 'sam@acme.test', reply)).toEqual({ kind: 'reply', leadId: 'lead-1', chatId: 'chat-1', text: 'Yes, Tuesday.', at: reply.at, externalId: '<r@example.test>' });
    expect(cited.asked).toEqual(['ids <second@acme.test> <first@acme.test>', 'recorded <r@example.test>']);

    const byAddress = matcher({ byAddress: match });
    expect((await inboundEvent(byAddress.m, sender, 'sam@acme.test', reply))?.kind).toBe('reply');
    expect(byAddress.asked).toEqual(['ids <second@acme.test> <first@acme.test>', `address ada@example.test before ${reply.at}`, 'recorded <r@example.test>']);

    expect(await inboundEvent(matcher({ byIds: match, recorded: true }).m, sender, 'sam@acme.test', reply)).toBeNull();
    expect(await inboundEvent(matcher().m, sender, 'sam@acme.test', reply)).toBeNull();
  });

  it('our own mail is nobody\'s reply; an automatic reply is one, with why', async () => {
    const match = { leadId: 'lead-1', chatId: 'chat-1' };
    const own = matcher({ byIds: match });
    expect(await inboundEvent(own.m, sender, 'sam@acme.test', await inbound(['From: Sam <SAM@acme.test>', 'Subject: Idea', 'In-Reply-To: <x@acme.test>']))).toBeNull();
    expect(own.asked).toEqual([]);
    const away = await inbound(['From: bo@example.test', 'Subject: Out of Office: Idea', 'Auto-Submitted: auto-replied', 'In-Reply-To: <x@acme.test>'], 'Away until December.');
    expect(await inboundEvent(matcher({ byIds: match }).m, sender, 'sam@acme.test', away)).toEqual({
      kind: 'auto_reply', leadId: 'lead-1', chatId: 'chat-1', at: away.at, subject: 'Out of Office: Idea', text: 'Away until December.', why: 'Auto-Submitted: auto-replied', externalId: away.messageId,
    });
  });

  it('a bounce is matched by the original Message-ID it returns, else by its recipient', async () => {
    const dsn = await inbound([
      'From: Mail Delivery System <MAILER-DAEMON@mx.example.test>', 'Subject: Undelivered Mail Returned to Sender', 'Message-ID: <dsn-1@mx.example.test>',
      'Content-Type: multipart/report; report-type=delivery-status; boundary="B"',
    ], [
      '--B', 'Content-Type: text/plain', '', 'Your message could not be delivered.', '',
      '--B', 'Content-Type: message/delivery-status', '', 'Reporting-MTA: dns; mx.example.test', '',
      'Final-Recipient: rfc822; cy@example.test', 'Action: failed', 'Status: 5.1.1', 'Diagnostic-Code: smtp; 550 5.1.1 User unknown', '',
      '--B', 'Content-Type: text/rfc822-headers', '', 'From: sam@acme.test', 'To: cy@example.test', 'Message-ID: <orig-1@acme.test>', '',
      '--B--',
    ].join('\r\n'));
    const byId = matcher({ byIds: { leadId: 'lead-cy', chatId: 'chat-cy' } });
    expect(await inboundEvent(byId.m, sender, 'sam@acme.test', dsn)).toEqual({
      kind: 'bounce', leadId: 'lead-cy', chatId: 'chat-cy', at: dsn.at, severity: 'hard', status: '5.1.1', recipient: 'cy@example.test', reason: '550 5.1.1 User unknown',
      externalId: '<dsn-1@mx.example.test>', originalMessageId: '<orig-1@acme.test>',
    });
    expect(byId.asked).toEqual(['ids <orig-1@acme.test>']);
    const byRecipient = matcher({ byAddress: { leadId: 'lead-cy', chatId: 'chat-cy' } });
    expect((await inboundEvent(byRecipient.m, sender, 'sam@acme.test', dsn))?.kind).toBe('bounce');
    expect(byRecipient.asked).toEqual(['ids <orig-1@acme.test>', `address cy@example.test before ${dsn.at}`]);
  });
});
