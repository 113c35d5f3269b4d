/**
 * A mailbox whose sign-in the provider stopped accepting (or whose login was refused) disconnects
 * its sender and its leads wait: its owner is told once, by a desktop notification, with the reason
 * and what to do (Reconnect on the Senders screen). Once per disconnection: which were told is kept
 * on this machine, and forgotten when the sender is connected again, so a later disconnection tells
 * again. Through the bridge like task reminders (the main process's notification, or the browser's).
 */
import { NOTICE_LIMITS } from '../../../../electron/bridge.ts';
import type { Notice } from '../../../../electron/bridge.ts';

const KEY = 'outreach.senderDisconnects.v1';

export type SenderState = { id: string; name: string; status: string; statusReason: string | null; ownerMemberId: string };

/** What was told, kept across reloads: sender id -> the reason it was told with. */
export type NoticeMemory = { load(): Record<string, string>; save(told: Record<string, string>): void };

export const localNoticeMemory: NoticeMemory = {
  load() {
    try {
      const raw: unknown = JSON.parse(localStorage.getItem(KEY) ?? '{}');
      return raw !== null && typeof raw === 'object' && !Array.isArray(raw) ? Object.fromEntries(Object.entries(raw).filter((e): e is [string, string] => typeof e[1] === 'string')) : {};
    } catch {
      return {};
    }
  },
  save(told) {
    localStorage.setItem(KEY, JSON.stringify(told));
  },
};

const clip = (text: string, max: number): string => (text.length <= max ? text : `${text.slice(0, max - 1)}…`);

/** Tells `memberId` about each of their senders newly disconnected; returns how many were told. */
export async function noticeDisconnectedSenders(senders: readonly SenderState[], memberId: string, notify: (notice: Notice) => Promise<boolean>, memory: NoticeMemory = localNoticeMemory): Promise<number> {
  const told = memory.load();
  let changed = false;
  let count = 0;
  for (const s of senders) {
    if (s.status !== 'disconnected') {
      if (s.id in told) {
        delete told[s.id];
        changed = true;
      }
      continue;
    }
    if (s.ownerMemberId !== memberId || s.id in told) continue;
    const reason = s.statusReason ?? 'its login was refused';
    told[s.id] = reason;
    changed = true;
    count++;
    await notify({
      title: clip(`${s.name} is disconnected`, NOTICE_LIMITS.title),
      body: clip(`${reason} Its leads wait; reconnect it on the Senders screen.`, NOTICE_LIMITS.body),
      tag: clip(`sender-disconnected:${s.id}`, NOTICE_LIMITS.tag),
      leadId: null,
    });
  }
  if (changed) memory.save(told);
  return count;
}
