/**
 * Secret handling both hosts share (Node only): the AES-256-GCM codec the sync server seals sender
 * secrets (SMTP/IMAP passwords, connector tokens) with, and the Secrets port of shared/context.ts
 * (API keys: `live_` + 40 base62 characters, stored as SHA-256 hashes) that the desktop backend and
 * the sync server both serve operations with. Neither host imports the other for these.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import type { Secrets } from '../shared/context.ts';

export type CredentialsKey = { key: Buffer; id: string };

const VERSION = 'v1';

/** The key itself, from hex (64 characters) or base64 (44 characters) of 32 random bytes. */
export function parseCredentialsKey(raw: string): CredentialsKey {
  const text = raw.trim();
  let key: Buffer | null = null;
  if (/^[0-9a-fA-F]{64}$/.test(text)) key = Buffer.from(text, 'hex');
  else if (/^[A-Za-z0-9+/_-]{43}=?$/.test(text)) key = Buffer.from(text.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  if (!key || key.length !== 32) {
    throw new Error('CREDENTIALS_KEY must be 32 random bytes written as 64 hex characters or as base64 (for example the output of `openssl rand -base64 32`).');
  }
  return { key, id: createHash('sha256').update(key).digest('hex').slice(0, 16) };
}

const aad = (workspaceId: string, senderId: string): Buffer => Buffer.from(`sender-credential\u0000${workspaceId}\u0000${senderId}`, 'utf8');

/** Each ciphertext is bound to its workspace and sender (GCM additional data), so a row copied onto
 * another sender does not decrypt. */
export function sealSecret(k: CredentialsKey, workspaceId: string, senderId: string, secret: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', k.key, iv);
  cipher.setAAD(aad(workspaceId, senderId));
  const data = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return [VERSION, iv.toString('base64'), cipher.getAuthTag().toString('base64'), data.toString('base64')].join(':');
}

export function openSecret(k: CredentialsKey, workspaceId: string, senderId: string, sealed: string): string {
  const [version, iv, tag, data] = sealed.split(':');
  if (version !== VERSION || iv === undefined || tag === undefined || data === undefined) throw new Error('The stored credential has an unknown format.');
  const decipher = createDecipheriv('aes-256-gcm', k.key, Buffer.from(iv, 'base64'));
  decipher.setAAD(aad(workspaceId, senderId));
  decipher.setAuthTag(Buffer.from(tag, 'base64'));
  return Buffer.concat([decipher.update(Buffer.from(data, 'base64')), decipher.final()]).toString('utf8');
}

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
  randomBytes: (length) => new Uint8Array(randomBytes(length)),
};
