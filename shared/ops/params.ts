/** Input building blocks shared by operation schemas. GET operations take query strings, so their
 * booleans, numbers and lists accept the string forms too. */
import { z } from 'zod';
import { DomainError } from '../errors.ts';

export const uuid = z.string().uuid({ message: 'must be a UUID' });
/** ISO 8601 date-time (with offset or Z). */
export const isoDateTime = z.string().datetime({ offset: true, message: 'must be an ISO 8601 date-time' });

export const qBool = z.preprocess((v) => (v === 'true' ? true : v === 'false' ? false : v), z.boolean());
export const qInt = (min: number, max: number) =>
  z.preprocess((v) => (typeof v === 'string' && /^-?\d+$/.test(v) ? Number(v) : v), z.number().int().min(min).max(max));
/** A list given as repeated query parameters, a comma list, or a JSON array. */
export const qList = <T extends z.ZodType>(item: T) =>
  z.preprocess((v) => (typeof v === 'string' ? v.split(',').map((s) => s.trim()).filter(Boolean) : v), z.array(item));

export const dryRun = z.boolean().optional();
export const cursor = z.string().min(1).nullish();
export const pageLimit = qInt(1, 200).optional();
export const DEFAULT_PAGE_SIZE = 50;

/** A limit capped at a plan maximum (API contract, "Strict inputs"): any non-negative number is
 * accepted however large (JSON's 1e999 arrives as Infinity), fractions are rounded down, and the
 * operation lowers what exceeds the plan and reports it; only non-numbers and negatives are refused. */
export const planCappedLimit = z.preprocess(
  (v) => (v === Number.POSITIVE_INFINITY ? Number.MAX_VALUE : v),
  z.number({ message: 'must be a number' }).min(0, 'must not be negative').transform((n) => Math.floor(n)),
);

/** A page cursor that carries its sort, so a cursor is never applied to a different ordering
 * (lead search, lead export): the store's cursor behind `<sortBy>.<dir>.`. */
export function sortedCursor(sortBy: string, dir: string, inner: string | null): string | null {
  return inner === null ? null : `${sortBy}.${dir}.${inner}`;
}

/** The store's cursor inside a `sortedCursor`; refuses one made for another sort. */
export function storeCursor(c: string | null | undefined, sortBy: string, dir: string): string | null {
  if (!c) return null;
  const prefix = `${sortBy}.${dir}.`;
  if (!c.startsWith(prefix) || c.length === prefix.length) {
    throw new DomainError('INVALID_INPUT', 'The cursor belongs to another sort order or is not valid; start again without a cursor.', { field: 'cursor' });
  }
  return c.slice(prefix.length);
}
