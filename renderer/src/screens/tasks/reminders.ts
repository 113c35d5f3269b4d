/**
 * Task reminders: a task that falls due raises a desktop notification, once per task and due time
 * (a new due date reminds again). They go through the bridge: the desktop app shows them from its
 * main process as the system's notifications; in a browser they are the browser's, and the first
 * one asks for permission. Clicking one opens the task's lead (the bridge's `open-lead` command).
 * Which reminders were shown is kept on this machine, so a reload or restart does not repeat them.
 */
import { NOTICE_LIMITS } from '../../../../electron/bridge.ts';
import type { Notice } from '../../../../electron/bridge.ts';

const KEY = 'outreach.taskReminders.v1';
/** Tasks overdue by more than this when first seen are counted in the sidebar but not notified. */
const STALE_MS = 24 * 3_600_000;

export type DueTask = { id: string; leadId: string; content: string; dueAt: string | null; lead: { fullName: string; company: string } };

function shown(): Set<string> {
  try {
    const raw: unknown = JSON.parse(localStorage.getItem(KEY) ?? '[]');
    return new Set(Array.isArray(raw) ? raw.filter((x): x is string => typeof x === 'string') : []);
  } catch {
    return new Set();
  }
}

function remember(keys: Set<string>): void {
  // The newest 500 are enough to never repeat a reminder a member could still see.
  localStorage.setItem(KEY, JSON.stringify([...keys].slice(-500)));
}

/** `text` within `max` characters, an ellipsis marking the cut (never half a surrogate pair). */
function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = text.slice(0, max - 1);
  return `${/[\uD800-\uDBFF]$/.test(cut) ? cut.slice(0, -1) : cut}…`;
}

/** Notifies each due task not yet reminded at its due time, through `notify` (the bridge's). */
export async function remindDueTasks(tasks: readonly DueTask[], now: number, notify: (notice: Notice) => Promise<boolean>): Promise<number> {
  const seen = shown();
  const fresh = tasks.filter((t) => t.dueAt !== null && Date.parse(t.dueAt) <= now && !seen.has(`${t.id}|${t.dueAt}`));
  if (fresh.length === 0) return 0;
  for (const t of fresh) seen.add(`${t.id}|${t.dueAt ?? ''}`);
  remember(seen);
  const recent = fresh.filter((t) => now - Date.parse(t.dueAt ?? '') <= STALE_MS);
  if (recent.length === 0) return 0;
  const notices: Notice[] = recent.slice(0, 3).map((t) => {
    const who = [t.lead.fullName, t.lead.company].filter(Boolean).join(', ');
    return { title: 'Task due', body: clip(who ? `${t.content} (${who})` : t.content, NOTICE_LIMITS.body), tag: `task-${t.id}`, leadId: t.leadId };
  });
  if (recent.length > 3) notices.push({ title: 'Tasks due', body: `${recent.length - 3} more tasks are due.`, tag: 'tasks-more', leadId: null });
  // The first asks for permission in a browser: refused or unavailable, the others would be too.
  const [first, ...rest] = notices;
  if (!first || !(await notify(first))) return 0;
  for (const n of rest) await notify(n);
  return recent.length;
}
