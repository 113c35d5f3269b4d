/** Task reminders: once per task and due time, only due ones, remembered across reloads, a new due
 * date reminds again, texts within the bridge's limits. In a browser tab (the web bridge) they are
 * the browser's notifications: permission asked once, a refusal respected, and a click opens the
 * task's lead through the bridge's open-lead command, as the desktop's main process does. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { NOTICE_LIMITS } from '../../electron/bridge.ts';
import type { Notice, ShellCommand } from '../../electron/bridge.ts';
import { createBridgeClient } from '../../electron/bridge-client.ts';
import { browserNotify } from '../../renderer/src/bridge/browser-notify.ts';
import { remindDueTasks } from '../../renderer/src/screens/tasks/reminders.ts';
import type { DueTask } from '../../renderer/src/screens/tasks/reminders.ts';

type Shown = { title: string; body: string; tag: string };
let shown: Shown[] = [];
let browserNotifications: FakeNotification[] = [];
let permission: 'default' | 'granted' | 'denied' = 'default';
let asked = 0;
let answer: 'granted' | 'denied' = 'granted';
let focused = 0;

class FakeNotification {
  static get permission() {
    return permission;
  }
  static async requestPermission() {
    asked++;
    permission = answer;
    return answer;
  }
  onclick: (() => void) | null = null;
  constructor(title: string, opts: { body: string; tag: string }) {
    shown.push({ title, body: opts.body, tag: opts.tag });
    browserNotifications.push(this);
  }
}

/** The bridge's notify as the desktop has it: records each notice, shown or refused. */
function recordingNotify(result = true) {
  const notices: Notice[] = [];
  return {
    notices,
    notify: async (n: Notice) => {
      notices.push(n);
      return result;
    },
  };
}

const NOW = Date.parse('2026-11-16T10:00:00.000Z');
const task = (id: string, dueAt: string | null, content = `Call ${id}`): DueTask => ({ id, leadId: `lead-${id}`, content, dueAt, lead: { fullName: `Person ${id}`, company: 'Acme' } });

beforeEach(() => {
  const data = new Map<string, string>();
  Object.assign(globalThis, {
    Notification: FakeNotification,
    localStorage: { getItem: (k: string) => data.get(k) ?? null, setItem: (k: string, v: string) => void data.set(k, v) },
    window: {
      focus: () => {
        focused++;
      },
    },
  });
  shown = [];
  browserNotifications = [];
  permission = 'default';
  asked = 0;
  answer = 'granted';
  focused = 0;
});
afterEach(() => {
  for (const k of ['Notification', 'localStorage', 'window']) Reflect.deleteProperty(globalThis, k);
});

describe('remindDueTasks', () => {
  it('notifies each due task once per due time, not tasks due later or undated', async () => {
    const { notices, notify } = recordingNotify();
    const tasks = [task('a', '2026-11-16T09:59:00.000Z'), task('b', '2026-11-16T11:00:00.000Z'), task('c', null)];
    expect(await remindDueTasks(tasks, NOW, notify)).toBe(1);
    expect(notices).toEqual([{ title: 'Task due', body: 'Call a (Person a, Acme)', tag: 'task-a', leadId: 'lead-a' }]);
    // Again (a re-render, a reload): nothing new.
    expect(await remindDueTasks(tasks, NOW, notify)).toBe(0);
    expect(notices).toHaveLength(1);
    // b falls due; a is moved to a new due time and reminds again.
    const later = NOW + 2 * 3_600_000;
    expect(await remindDueTasks([task('a', '2026-11-16T11:30:00.000Z'), tasks[1] as DueTask], later, notify)).toBe(2);
    expect(notices.map((n) => n.body)).toEqual(['Call a (Person a, Acme)', 'Call a (Person a, Acme)', 'Call b (Person b, Acme)']);
  });

  it('does not notify tasks overdue for more than a day, and stops at a refusal', async () => {
    const shownOk = recordingNotify();
    expect(await remindDueTasks([task('old', '2026-11-14T10:00:00.000Z')], NOW, shownOk.notify)).toBe(0);
    expect(shownOk.notices).toEqual([]);
    const refused = recordingNotify(false);
    expect(await remindDueTasks([task('d', '2026-11-16T09:00:00.000Z'), task('e', '2026-11-16T09:10:00.000Z')], NOW, refused.notify)).toBe(0);
    expect(refused.notices.map((n) => n.tag)).toEqual(['task-d']);
  });

  it('shows three tasks and sums up the rest; a long task fits the bridge limit', async () => {
    const { notices, notify } = recordingNotify();
    const long = 'Prepare the renewal call: '.repeat(60);
    const tasks = [task('a', '2026-11-16T09:00:00.000Z', long), ...['b', 'c', 'd', 'e'].map((id) => task(id, '2026-11-16T09:30:00.000Z'))];
    expect(await remindDueTasks(tasks, NOW, notify)).toBe(5);
    expect(notices.map((n) => n.tag)).toEqual(['task-a', 'task-b', 'task-c', 'tasks-more']);
    expect(notices[3]).toEqual({ title: 'Tasks due', body: '2 more tasks are due.', tag: 'tasks-more', leadId: null });
    const body = notices[0]?.body ?? '';
    expect(body.length).toBe(NOTICE_LIMITS.body);
    expect(body.endsWith('…')).toBe(true);
  });
});

describe('notifications in a browser tab (the web bridge)', () => {
  it('asks for permission once, shows the notice, and respects a refusal', async () => {
    const notice: Notice = { title: 'Task due', body: 'Call a', tag: 'task-a', leadId: 'lead-a' };
    expect(await browserNotify(notice, () => undefined)).toBe(true);
    expect(shown).toEqual([{ title: 'Task due', body: 'Call a', tag: 'task-a' }]);
    expect(asked).toBe(1);
    expect(await browserNotify(notice, () => undefined)).toBe(true);
    expect(asked).toBe(1);

    permission = 'default';
    answer = 'denied';
    expect(await browserNotify(notice, () => undefined)).toBe(false);
    expect(await browserNotify(notice, () => undefined)).toBe(false);
    expect(asked).toBe(2);
    expect(shown).toHaveLength(2);
  });

  it('a click focuses the tab and opens the lead through the open-lead command', async () => {
    const client = createBridgeClient({ platform: 'web', send: () => undefined, openExternal: () => undefined, notify: browserNotify });
    const commands: ShellCommand[] = [];
    client.bridge.commands.subscribe((c) => commands.push(c));
    expect(await client.bridge.notify({ title: 'Task due', body: 'Call a', tag: 'task-a', leadId: 'lead-a' })).toBe(true);
    expect(commands).toEqual([]);
    browserNotifications[0]?.onclick?.();
    expect(focused).toBe(1);
    expect(commands).toEqual([{ kind: 'open-lead', leadId: 'lead-a' }]);
  });
});
