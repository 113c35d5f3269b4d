/** How campaign numbers, waits and schedules read. */

export function percent(rate: number): string {
  if (!Number.isFinite(rate) || rate === 0) return '0%';
  const p = rate * 100;
  return `${p < 10 ? p.toFixed(1) : Math.round(p)}%`;
}

/** "2 days", "3 h", "1 day 4 h", "45 min". */
export function waitLength(seconds: number): string {
  if (seconds <= 0) return 'no wait';
  const days = Math.floor(seconds / 86_400);
  const hours = Math.floor((seconds % 86_400) / 3600);
  const minutes = Math.floor((seconds % 3600) / 60);
  const parts: string[] = [];
  if (days) parts.push(`${days} day${days === 1 ? '' : 's'}`);
  if (hours) parts.push(`${hours} h`);
  if (minutes && !days) parts.push(`${minutes} min`);
  return parts.join(' ') || `${seconds} s`;
}

export const CONDITION_LABELS: Record<string, string> = {
  CONNECTED: 'Connected with the sender',
  REPLIED: 'Replied',
  HAS_EMAIL: 'Has an email address',
  OPENED_EMAIL: 'Opened an email',
};

export const DAY_LABELS: Record<string, string> = {
  monday: 'Monday',
  tuesday: 'Tuesday',
  wednesday: 'Wednesday',
  thursday: 'Thursday',
  friday: 'Friday',
  saturday: 'Saturday',
  sunday: 'Sunday',
};

/** "+01:00" for an offset in minutes. */
export function utcOffset(minutes: number): string {
  const sign = minutes < 0 ? '−' : '+';
  const abs = Math.abs(minutes);
  return `UTC${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
}
