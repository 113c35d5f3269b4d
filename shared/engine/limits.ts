/** Daily limits: which counters an action uses, the effective limit (capped at the plan maximum) and
 * the usage document of a sender's day (in the sender's time zone). */
import { emptyUsage } from '../model/factories.ts';
import type { LimitKey, Message, Sender, Usage, UsageCounts } from '../model/index.ts';
import { dayKey } from './schedule.ts';

export type CounterKey = keyof UsageCounts;
type Kind = Message['kind'];

/** A limit the runner checks before an action: the counter it increments and its daily limit. */
export type Budget = { counter: CounterKey; limit: number };

/** The configured limit capped at the plan maximum (a limit above the plan is never honoured),
 * and, given the moment, scaled by the sender's ramp-up. */
export const effectiveLimit = (sender: Sender, key: LimitKey, at?: Date): number => effectiveLimitAt(sender, key, at);

const effectiveLimitAt = (sender: Sender, key: LimitKey, at?: Date): number => {
  const limit = Math.max(0, Math.min(sender.limits[key], sender.planMax[key]));
  return at ? rampedLimit(limit, rampUpOf(sender, at).factor) : limit;
};

export const RAMP_UP_DAYS = 14;
export const RAMP_UP_FROM = 0.2;

/** Which pace applies to a sender's limits: a new account ramping up, an account its user said is
 * warmed up (full limits from the start), or neither (the ramp-up is over, or the sender is older
 * than ramp-ups). */
export type RampUp = { active: boolean; day: number; factor: number; endsAt: string | null; warmedUp: boolean };

/** A new sender's ramp-up: its limits grow linearly from 20% (day 1) to 100% after 14 days; none
 * for an account its user said is warmed up (senders.warmedUp). */
export function rampUpOf(sender: Pick<Sender, 'rampUpStartedAt' | 'warmedUp'>, at: Date): RampUp {
  if (sender.warmedUp === true) return { active: false, day: RAMP_UP_DAYS, factor: 1, endsAt: null, warmedUp: true };
  const start = sender.rampUpStartedAt ? Date.parse(sender.rampUpStartedAt) : Number.NaN;
  if (!Number.isFinite(start)) return { active: false, day: RAMP_UP_DAYS, factor: 1, endsAt: null, warmedUp: false };
  const days = Math.max(0, Math.floor((at.getTime() - start) / 86_400_000));
  if (days >= RAMP_UP_DAYS) return { active: false, day: RAMP_UP_DAYS, factor: 1, endsAt: null, warmedUp: false };
  return { active: true, day: days + 1, factor: RAMP_UP_FROM + ((1 - RAMP_UP_FROM) * days) / RAMP_UP_DAYS, endsAt: new Date(start + RAMP_UP_DAYS * 86_400_000).toISOString(), warmedUp: false };
}

/** The pace a limit explanation names ("reached a daily limit <phrase>"): "as a new account
 * ramping up, day 3 of 14 at 31% of its limits", "at the full limits of a warmed-up account", or
 * null when neither applies. */
export function rampUpPhrase(r: RampUp): string | null {
  if (r.warmedUp) return 'at the full limits of a warmed-up account';
  if (r.active) return `as a new account ramping up, day ${r.day} of ${RAMP_UP_DAYS} at ${Math.round(r.factor * 100)}% of its limits`;
  return null;
}

/** A limit under ramp-up: never more than the limit, at least one action while the limit allows any. */
export const rampedLimit = (limit: number, factor: number): number => (limit <= 0 ? 0 : Math.max(1, Math.min(limit, Math.ceil(limit * factor - 1e-9))));

export const DEFAULT_WEEKLY_CONNECTIONS = 100;
export const WEEK_MS = 7 * 86_400_000;

/** The weekly cap on connection requests: the sender's setting (default 100), at most 7 times the
 * plan's daily maximum, scaled by the ramp-up. */
export function weeklyConnectionCap(sender: Sender, at: Date): number {
  const wanted = sender.weeklyConnectionLimit ?? DEFAULT_WEEKLY_CONNECTIONS;
  const cap = Math.max(0, Math.min(wanted, sender.planMax.connectionRequests * 7));
  return rampedLimit(cap, rampUpOf(sender, at).factor);
}

/**
 * The counters an outbound action consumes and the limits that bound them. A connection request
 * with a note counts as a request and as a request with a note (the with-note allowance is a
 * sub-limit of all requests). Emails are counted in `emails` and bounded by the sender's messages
 * limit (an email sender has no other messaging action).
 */
export function budgetsFor(sender: Sender, kind: Kind, withNote = false, at?: Date): Budget[] {
  const effectiveLimit = (s: Sender, key: LimitKey): number => effectiveLimitAt(s, key, at);
  switch (kind) {
    case 'message':
    case 'voice_note':
      return [{ counter: 'messages', limit: effectiveLimit(sender, 'messages') }];
    case 'inmail':
      return [{ counter: 'inmails', limit: effectiveLimit(sender, 'inmails') }];
    case 'connection_request':
      return withNote
        ? [
            { counter: 'connectionRequests', limit: effectiveLimit(sender, 'connectionRequests') },
            { counter: 'connectionRequestsWithNote', limit: effectiveLimit(sender, 'connectionRequestsWithNote') },
          ]
        : [{ counter: 'connectionRequests', limit: effectiveLimit(sender, 'connectionRequests') }];
    case 'email':
      return [{ counter: 'emails', limit: effectiveLimit(sender, 'messages') }];
    case 'profile_visit':
      return [{ counter: 'profileVisits', limit: effectiveLimit(sender, 'profileVisits') }];
    case 'reaction':
      return [{ counter: 'reactions', limit: effectiveLimit(sender, 'reactions') }];
  }
}

export const usageId = (sdrProfileId: string, day: string): string => `${sdrProfileId}:${day}`;

/** The sender's day of `at` (in the sender's zone). */
export const senderDay = (sender: Sender, at: Date): string => dayKey(sender.timeZone, at);

/** The stored usage of a day, or an empty one (not yet stored). */
export function usageOrEmpty(stored: Usage | null, sender: Sender, day: string, now: string): Usage {
  return stored ?? emptyUsage(sender.workspaceId, sender.id, day, now);
}

/** Whether every budget has room for one more action. */
export const hasRoom = (usage: Usage, budgets: readonly Budget[]): boolean => budgets.every((b) => usage.counts[b.counter] < b.limit);

/** The usage after one more action. */
export function consume(usage: Usage, budgets: readonly Budget[], now: string): Usage {
  const counts = { ...usage.counts };
  for (const b of budgets) counts[b.counter] += 1;
  return { ...usage, counts, updatedAt: now };
}

/** The daily search budget: remaining searches of the day. */
export const searchesRemaining = (sender: Sender, usage: Usage): number => Math.max(0, sender.searchLimit - usage.counts.searches);
