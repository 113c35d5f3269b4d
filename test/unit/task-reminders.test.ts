/** Task reminders: once per task and due time, only due ones, remembered across reloads, a new due
 * date reminds again, permission asked once and a refusal respected. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { remindDueTasks } from '../../renderer/src/screens/tasks/reminders.ts';
import type { DueTask } from '../../renderer/src/screens/tasks/reminders.ts';

type Shown = { title: string; body: string };
let shown: Shown[] = [];
let permission: 'default' | 'granted' | 'denied' = 'default';
let asked = 0;
let answer: 'granted' | 'denied' = 'granted';

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
  constructor(title: string, opts: { body: string }) {
    shown.push({ title, body: opts.body });
  }
}

const NOW = Date.parse('2026-11-16T10:00:00.000Z');
const task = (id: string, dueAt: string | null): DueTask => ({ id, leadId: `lead-${id}`, content: `Call ${id}`, dueAt, lead: { fullName: `Person ${id}`, company: 'Acme' } });

beforeEach(() => {
  const data = new Map<string, string>();
  Object.assign(globalThis, {
    Notification: FakeNotification,
    localStorage: { getItem: (k: string) => data.get(k) ?? null, setItem: (k: string, v: string) => void data.set(k, v) },
    window: { focus: () => undefined },
  });
  shown = [];
  permission = 'default';
  asked = 0;
  answer = 'granted';
});
afterEach(() => {
  for (const k of ['Notification', 'localStorage', 'window']) Reflect.deleteProperty(globalThis, k);
});

describe('remindDueTasks', () => {
  it('notifies each due task once per due time, not tasks due later or undated', async () => {
    const tasks = [task('a', '2026-11-16T09:59:00.000Z'), task('b', '2026-11-16T11:00:00.000Z'), task('c', null)];
    expect(await remindDueTasks(tasks, NOW, () => undefined)).toBe(1);
    expect(shown).toEqual([{ title: 'Task due', body: 'Call a (Person a, Acme)' }]);
    expect(asked).toBe(1);
    // Again (a re-render, a reload): nothing new.
    expect(await remindDueTasks(tasks, NOW, () => undefined)).toBe(0);
    expect(shown).toHaveLength(1);
    // b falls due; a is moved to a new due time and reminds again.
    const later = NOW + 2 * 3_600_000;
    expect(await remindDueTasks([task('a', '2026-11-16T11:30:00.000Z'), tasks[1] as DueTask], later, () => undefined)).toBe(2);
    expect(shown.map((s) => s.body)).toEqual(['Call a (Person a, Acme)', 'Call a (Person a, Acme)', 'Call b (Person b, Acme)']);
    expect(asked).toBe(1);
  });

  it('does not notify tasks overdue for more than a day, nor when permission is refused', async () => {
    expect(await remindDueTasks([task('old', '2026-11-14T10:00:00.000Z')], NOW, () => undefined)).toBe(0);
    expect(shown).toEqual([]);
    answer = 'denied';
    expect(await remindDueTasks([task('d', '2026-11-16T09:00:00.000Z')], NOW, () => undefined)).toBe(0);
    expect(shown).toEqual([]);
    expect(asked).toBe(1);
    // Refused once: not asked again.
    expect(await remindDueTasks([task('e', '2026-11-16T09:30:00.000Z')], NOW, () => undefined)).toBe(0);
    expect(asked).toBe(1);
  });
});
