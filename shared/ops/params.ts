/** Input building blocks shared by operation schemas. GET operations take query strings, so their
 * booleans, numbers and lists accept the string forms too. */
import { z } from 'zod';

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
