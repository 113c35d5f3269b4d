/**
 * The Sent folder of an email sender (channels/imap.ts): a copy of each sent email filed there,
 * and an interrupted send looked up there by its Message-ID.
 */
import type { ImapFlow } from 'imapflow';
import { ChannelFailure } from '../shared/engine/channel.ts';
import type { FindSentResult } from '../shared/engine/channel.ts';
import type { Sender } from '../shared/model/index.ts';
import type { ImapConfig } from './imap.ts';
import type { ImapConnections } from './imap-connections.ts';
import { messageIdsIn } from './inbound-mail.ts';

/** The mailbox marked SPECIAL-USE \Sent, or null when there is none. */
async function sentFolder(c: ImapFlow): Promise<string | null> {
  const boxes = await c.list();
  return boxes.find((b) => b.specialUse === '\\Sent')?.path ?? null;
}

/** Files a sent email (its exact bytes, marked seen) in Sent: on the sender's INBOX connection
 * when it is open, else on a connection of its own. */
export async function fileInSent(conns: ImapConnections, sender: Sender, cfg: ImapConfig, raw: Buffer): Promise<void> {
  const append = async (c: ImapFlow): Promise<void> => {
    const path = await sentFolder(c);
    if (!path) throw new ChannelFailure('failed', 'the mailbox has no Sent folder (SPECIAL-USE \\Sent)');
    await c.append(path, raw, ['\\Seen']);
  };
  const open = conns.usable(sender.id);
  if (open) await append(open);
  else await conns.withClient(sender, cfg, append);
}

/** Looks an email up in Sent by its Message-ID: found is sent (in the thread its References
 * name); missing proves nothing (the copy is filed after the server accepted the email, and a
 * crash in between leaves none), so it is unknown, as is a mailbox without a Sent folder. */
export async function lookUpSent(conns: ImapConnections, sender: Sender, cfg: ImapConfig, messageId: string): Promise<FindSentResult> {
  return conns.withClient(sender, cfg, async (c) => {
    const path = await sentFolder(c);
    if (!path) return { status: 'unknown' } satisfies FindSentResult;
    const lock = await c.getMailboxLock(path);
    try {
      const uids = await c.search({ header: { 'message-id': messageId } }, { uid: true });
      const uid = uids && uids.length > 0 ? uids[uids.length - 1] : undefined;
      if (uid === undefined) return { status: 'unknown' } satisfies FindSentResult;
      const m = await c.fetchOne(String(uid), { uid: true, headers: ['references'] }, { uid: true });
      const refs = m && m.headers ? messageIdsIn(m.headers.toString('utf8')) : [];
      return { status: 'sent', externalId: messageId, chatId: refs[0] ?? messageId } satisfies FindSentResult;
    } finally {
      lock.release();
    }
  });
}
