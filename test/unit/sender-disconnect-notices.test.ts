/** A disconnected sender's owner is told once per disconnection, with the reason; other members are
 * not; a sender connected again and disconnected later is told again. */
import { describe, expect, it } from 'vitest';
import type { Notice } from '../../electron/bridge.ts';
import { noticeDisconnectedSenders } from '../../renderer/src/screens/senders/disconnect-notices.ts';
import type { NoticeMemory, SenderState } from '../../renderer/src/screens/senders/disconnect-notices.ts';

function memory(): NoticeMemory & { told: Record<string, string> } {
  const m = { told: {} as Record<string, string>, load: () => ({ ...m.told }), save: (t: Record<string, string>) => void (m.told = { ...t }) };
  return m;
}

const sam = (status: string, statusReason: string | null = null): SenderState => ({ id: 's1', name: 'sam@acme.test', status, statusReason, ownerMemberId: 'm-sam' });

describe('disconnected senders are told to their owner once', () => {
  it('tells the owner once, with the reason; not another member; again after a reconnection', async () => {
    const mem = memory();
    const shown: Notice[] = [];
    const notify = async (n: Notice) => (shown.push(n), true);
    const reason = "Google no longer accepts sam@acme.test's sign-in (invalid_grant). Reconnect the mailbox to go on; its leads wait until then.";
    expect(await noticeDisconnectedSenders([sam('disconnected', reason)], 'm-other', notify, mem)).toBe(0);
    expect(await noticeDisconnectedSenders([sam('disconnected', reason)], 'm-sam', notify, mem)).toBe(1);
    expect(await noticeDisconnectedSenders([sam('disconnected', reason)], 'm-sam', notify, mem)).toBe(0);
    expect(shown).toHaveLength(1);
    expect(shown[0]).toMatchObject({ title: 'sam@acme.test is disconnected', tag: 'sender-disconnected:s1', leadId: null });
    expect(shown[0]?.body).toContain('invalid_grant');
    expect(await noticeDisconnectedSenders([sam('available')], 'm-sam', notify, mem)).toBe(0);
    expect(mem.told).toEqual({});
    expect(await noticeDisconnectedSenders([sam('disconnected', reason)], 'm-sam', notify, mem)).toBe(1);
    expect(shown).toHaveLength(2);
  });
});
