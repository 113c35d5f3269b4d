/** Standard Webhooks signatures: `v1,` + base64 HMAC-SHA256, keyed with the secret's decoded bytes,
 * of `<webhook-id>.<webhook-timestamp>.<body>`. Several secrets (during a rotation) give several
 * signatures, space-separated in one `webhook-signature` header; a receiver accepts any that matches. */
import { createHmac } from 'node:crypto';
import { SECRET_PREFIX } from '../../shared/webhooks/secret.ts';

/** The key bytes of a `whsec_...` secret. */
export function secretKey(secret: string): Buffer {
  if (!secret.startsWith(SECRET_PREFIX)) throw new Error('A webhook secret starts with whsec_.');
  return Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
}

export function signature(secret: string, id: string, timestampSeconds: number, body: string): string {
  return `v1,${createHmac('sha256', secretKey(secret)).update(`${id}.${timestampSeconds}.${body}`).digest('base64')}`;
}

/** The three headers of one attempt: the id stays the same for every attempt of an event, the
 * timestamp is the attempt's own (receivers refuse old ones: replay protection). */
export function webhookHeaders(secrets: readonly string[], id: string, at: Date, body: string): Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string> {
  const ts = Math.floor(at.getTime() / 1000);
  return {
    'webhook-id': id,
    'webhook-timestamp': String(ts),
    'webhook-signature': secrets.map((s) => signature(s, id, ts, body)).join(' '),
  };
}
