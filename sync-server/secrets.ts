/** Node implementation of the Secrets port: `live_` + 40 base62 characters, SHA-256 hashes. */
import { createHash, randomBytes } from 'node:crypto';
import type { Secrets } from '../shared/context.ts';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const b of randomBytes(length * 2)) {
      // 248 = 4 * 62: reject the tail so every character is equally likely.
      if (b < 248 && out.length < length) out += BASE62[b % 62];
    }
  }
  return out;
}

export const hashApiKey = (key: string): string => createHash('sha256').update(key).digest('hex');

export const nodeSecrets: Secrets = {
  newApiKey: () => `live_${randomBase62(40)}`,
  hash: hashApiKey,
};
