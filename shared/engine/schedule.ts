/** Sending windows and calendar days in a time zone. All arithmetic goes through luxon so that DST
 * transitions move windows with the wall clock (09:00-17:00 stays 09:00-17:00 local time). */
import { DateTime, IANAZone } from 'luxon';
import { DAYS } from '../model/index.ts';
import type { Schedule } from '../model/index.ts';

const zones = new Map<string, IANAZone>();

/** The zone for a name, else UTC (a broken zone must not stop the runner or widen a window).
 * Zones are cached: validating a name builds an Intl formatter, which is slow. */
export function safeZone(name: string): IANAZone {
  let z = zones.get(name);
  if (!z) {
    z = IANAZone.isValidZone(name) ? IANAZone.create(name) : IANAZone.create('UTC');
    zones.set(name, z);
  }
  return z;
}

const local = (at: Date, zone: string): DateTime => DateTime.fromMillis(at.getTime(), { zone: safeZone(zone) });

/** The calendar day (YYYY-MM-DD) of `at` in `zone`. */
export function dayKey(zone: string, at: Date): string {
  return local(at, zone).toISODate() ?? at.toISOString().slice(0, 10);
}

/** The first instant of the day after `at`'s day in `zone` (a limit resets then). */
export function startOfNextDay(zone: string, at: Date): Date {
  return local(at, zone).startOf('day').plus({ days: 1 }).toJSDate();
}

type Window = { start: DateTime; end: DateTime };

function hhmm(s: string): { hour: number; minute: number } {
  const [h = '0', m = '0'] = s.split(':');
  return { hour: Number(h), minute: Number(m) };
}

/** The window of the local calendar day `day` (a DateTime at that day's start), or null when off. */
function windowOn(schedule: Schedule, day: DateTime): Window | null {
  const name = DAYS[day.weekday - 1];
  if (!name) return null;
  const w = schedule.days[name];
  if (!w.enabled) return null;
  const s = hhmm(w.start);
  const start = day.set({ hour: s.hour, minute: s.minute, second: 0, millisecond: 0 });
  const e = hhmm(w.end);
  const end = e.hour === 24 ? day.plus({ days: 1 }).startOf('day') : day.set({ hour: e.hour, minute: e.minute, second: 0, millisecond: 0 });
  if (end <= start) return null;
  return { start, end };
}

/** Whether `at` falls inside the schedule's window of its local day (start inclusive, end exclusive). */
export function isOpen(schedule: Schedule, at: Date): boolean {
  const t = local(at, schedule.timeZone);
  const w = windowOn(schedule, t.startOf('day'));
  return w !== null && t >= w.start && t < w.end;
}

/** The first instant at or after `from` inside a window, or null when no day is enabled. */
export function nextOpening(schedule: Schedule, from: Date): Date | null {
  const t = local(from, schedule.timeZone);
  const today = t.startOf('day');
  for (let d = 0; d <= 7; d++) {
    const w = windowOn(schedule, today.plus({ days: d }).startOf('day'));
    if (!w || t >= w.end) continue;
    return (t > w.start ? t : w.start).toJSDate();
  }
  return null;
}

/** The UTC offset of the zone at `at`, in minutes (the spec's utcOffsetMinutes). */
export function utcOffsetMinutes(zone: string, at: Date): number {
  return local(at, zone).offset;
}
