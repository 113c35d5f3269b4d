/**
 * Task reminders: a task that falls due raises a desktop notification, once per task and due time
 * (a new due date reminds again). Electron's renderer shows the HTML Notification as a native one;
 * in a browser the first reminder asks for permission. Which reminders were shown is kept on this
 * machine, so a reload or restart does not repeat them.
 */
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

async function allowed(): Promise<boolean> {
  if (typeof Notification === 'undefined') return false;
  if (Notification.permission === 'granted') return true;
  if (Notification.permission === 'denied') return false;
  return (await Notification.requestPermission()) === 'granted';
}

/** Notifies each due task not yet reminded at its due time; `open` opens the task's lead. */
export async function remindDueTasks(tasks: readonly DueTask[], now: number, open: (leadId: string) => void): Promise<number> {
  const seen = shown();
  const fresh = tasks.filter((t) => t.dueAt !== null && Date.parse(t.dueAt) <= now && !seen.has(`${t.id}|${t.dueAt}`));
  if (fresh.length === 0) return 0;
  for (const t of fresh) seen.add(`${t.id}|${t.dueAt ?? ''}`);
  remember(seen);
  const recent = fresh.filter((t) => now - Date.parse(t.dueAt ?? '') <= STALE_MS);
  if (recent.length === 0 || !(await allowed())) return 0;
  for (const t of recent.slice(0, 3)) {
    const who = [t.lead.fullName, t.lead.company].filter(Boolean).join(', ');
    const n = new Notification('Task due', { body: who ? `${t.content} (${who})` : t.content, tag: `task-${t.id}` });
    n.onclick = () => {
      window.focus();
      open(t.leadId);
    };
  }
  if (recent.length > 3) new Notification('Tasks due', { body: `${recent.length - 3} more tasks are due.`, tag: 'tasks-more' });
  return recent.length;
}
