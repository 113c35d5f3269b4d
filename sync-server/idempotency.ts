/** Idempotency-Key on POST: the first response for (API key, Idempotency-Key) is stored in the same
 * transaction as the operation's writes and replayed for 24 hours. A concurrent duplicate waits on
 * the row lock of the first and then replays it. Refusals are not stored: they changed nothing, so
 * repeating the request is safe and answers from the current state. */
import { createHash } from 'node:crypto';
import { DomainError } from '../shared/errors.ts';
import type { SqlExecutor } from './db.ts';

export const IDEMPOTENCY_TTL_MS = 24 * 3_600_000;
const MAX_KEY_LENGTH = 255;

export type StoredResponse = { status: number; body: unknown };

/** Deepest body the hash walks; the JSON body parser refuses deeper bodies first (MAX_BODY_DEPTH). */
const MAX_HASH_DEPTH = 64;

/** Canonical JSON (sorted keys) so the same body in another key order counts as the same request.
 * The walk is bounded: a body nested deeper than MAX_HASH_DEPTH is refused (400), never recursed. */
export function requestHash(operation: string, body: unknown): string {
  const canon = (v: unknown, depth: number): unknown => {
    if (v === null || typeof v !== 'object') return v;
    if (depth >= MAX_HASH_DEPTH) {
      throw new DomainError('INVALID_INPUT', `The body is nested more than ${MAX_HASH_DEPTH} levels deep; no request of this API needs that.`, { maxDepth: MAX_HASH_DEPTH });
    }
    if (Array.isArray(v)) return v.map((x) => canon(x, depth + 1));
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, canon((v as Record<string, unknown>)[k], depth + 1)]),
    );
  };
  return createHash('sha256').update(JSON.stringify([operation, canon(body, 0)])).digest('hex');
}

/** A key is 1 to 255 visible ASCII characters (a UUID, a ULID, any token): it is stored and compared
 * as text, so control characters (NUL) and non-ASCII are refused rather than half-stored. */
const KEY_PATTERN = /^[\x21-\x7e]+$/;

export function checkIdempotencyKey(key: string): void {
  if (key.length === 0 || key.length > MAX_KEY_LENGTH || !KEY_PATTERN.test(key)) {
    throw new DomainError('INVALID_INPUT', `Idempotency-Key must be 1 to ${MAX_KEY_LENGTH} visible ASCII characters (letters, digits, punctuation; no spaces), like a UUID.`, {
      header: 'Idempotency-Key',
    });
  }
}

/** Claims the key inside the transaction. Returns the stored response to replay, or null when this
 * request is the first (then `record` must be called before the transaction commits). */
export async function claim(tx: SqlExecutor, apiKeyId: string, key: string, hash: string, now: Date): Promise<StoredResponse | null> {
  const cutoff = new Date(now.getTime() - IDEMPOTENCY_TTL_MS).toISOString();
  const inserted = await tx.query(
    `INSERT INTO idempotency_keys (api_key_id, key, request_hash, created_at) VALUES ($1, $2, $3, $4::timestamptz)
     ON CONFLICT (api_key_id, key) DO UPDATE
       SET request_hash = EXCLUDED.request_hash, status = NULL, response = NULL, created_at = EXCLUDED.created_at
       WHERE idempotency_keys.created_at < $5::timestamptz
     RETURNING 1`,
    [apiKeyId, key, hash, now.toISOString(), cutoff],
  );
  if (inserted.length > 0) return null;
  const rows = await tx.query<{ request_hash: string; status: number | null; response: unknown }>(
    'SELECT request_hash, status, response FROM idempotency_keys WHERE api_key_id = $1 AND key = $2',
    [apiKeyId, key],
  );
  const row = rows[0];
  if (!row || row.status === null) {
    // Cannot happen after the insert waited for the first request; refuse rather than run twice.
    throw new DomainError('CONFLICT', 'A request with this Idempotency-Key is still being processed; retry shortly.');
  }
  if (row.request_hash !== hash) {
    throw new DomainError('IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was already used with a different request; use a new key for a new request.', {
      header: 'Idempotency-Key',
    });
  }
  return { status: row.status, body: row.response };
}

export async function record(tx: SqlExecutor, apiKeyId: string, key: string, response: StoredResponse): Promise<void> {
  await tx.query('UPDATE idempotency_keys SET status = $3, response = $4::jsonb WHERE api_key_id = $1 AND key = $2', [
    apiKeyId,
    key,
    response.status,
    JSON.stringify(response.body ?? null),
  ]);
}

export async function purgeExpired(db: SqlExecutor, now: Date): Promise<void> {
  await db.query('DELETE FROM idempotency_keys WHERE created_at < $1::timestamptz', [new Date(now.getTime() - IDEMPOTENCY_TTL_MS).toISOString()]);
}
