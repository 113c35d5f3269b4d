/** Dates and names as people read them. */
const dateFmt = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric' });
const dateYearFmt = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', year: 'numeric' });
const timeFmt = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });

export function shortDate(iso: string | null | undefined): string {
  if (!iso) return '';
  const d = new Date(iso);
  return d.getFullYear() === new Date().getFullYear() ? dateFmt.format(d) : dateYearFmt.format(d);
}

export function dateTime(iso: string | null | undefined): string {
  if (!iso) return '';
  const d = new Date(iso);
  return `${shortDate(iso)}, ${timeFmt.format(d)}`;
}

/** "3 min ago", "in 2 days". */
export function relative(iso: string | null | undefined, now = Date.now(), style: 'long' | 'short' = 'long'): string {
  if (!iso) return '';
  const diff = new Date(iso).getTime() - now;
  const abs = Math.abs(diff);
  const rtf = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto', style });
  const steps: [number, Intl.RelativeTimeFormatUnit][] = [[60_000, 'second'], [3_600_000, 'minute'], [86_400_000, 'hour'], [7 * 86_400_000, 'day'], [30 * 86_400_000, 'week'], [365 * 86_400_000, 'month']];
  const unitMs: Record<string, number> = { second: 1000, minute: 60_000, hour: 3_600_000, day: 86_400_000, week: 7 * 86_400_000, month: 30 * 86_400_000, year: 365 * 86_400_000 };
  for (const [limit, unit] of steps) if (abs < limit) return rtf.format(Math.round(diff / (unitMs[unit] ?? 1)), unit);
  return rtf.format(Math.round(diff / (unitMs.year ?? 1)), 'year');
}

export function initials(name: string): string {
  const parts = name.trim().split(/\s+/).filter(Boolean);
  return ((parts[0]?.[0] ?? '?') + (parts.length > 1 ? (parts[parts.length - 1]?.[0] ?? '') : '')).toUpperCase();
}

/** An ISO instant as the value of a datetime-local input (local time). */
export function toLocalInput(iso: string | null | undefined): string {
  if (!iso) return '';
  const d = new Date(iso);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** A datetime-local or date input's value as an ISO instant; '' stays null. */
export function fromLocalInput(value: string): string | null {
  if (!value) return null;
  const d = new Date(value.length === 10 ? `${value}T09:00` : value);
  return Number.isNaN(d.getTime()) ? null : d.toISOString();
}

export function endOfToday(): Date {
  const d = new Date();
  d.setHours(23, 59, 59, 999);
  return d;
}

export const CLOSE_REASON_LABELS: Record<string, string> = {
  NOT_ICP: 'Not our ideal customer',
  NOT_INTERESTED: 'Not interested',
  BAD_TIMING: 'Bad timing',
  COMPETITOR: 'Went with a competitor',
  NO_RESPONSE: 'No response',
  OTHER: 'Other',
};
