/**
 * Sender secrets on the sync server: the SMTP passwords and connector tokens of the senders its
 * runner hosts (`--runner`), in the sender_credentials table, encrypted at rest with AES-256-GCM.
 * The key comes from CREDENTIALS_KEY (32 bytes, hex or base64), or from a key file generated in the
 * data folder on first use. Each ciphertext is bound to its workspace and sender (GCM additional
 * data), so a row copied onto another sender does not decrypt. Nothing here ever returns a secret to
 * an operation: only the runner reads them (secretFor).
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SenderCredentials } from '../shared/context.ts';
import type { SqlExecutor } from './db.ts';

export type CredentialsKey = { key: Buffer; id: string };

export const KEY_FILE_NAME = 'credentials.key';
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

/**
 * CREDENTIALS_KEY when set; otherwise the key file in dataDir, created (mode 0600) when missing. An
 * in-memory database (`memory://`) gets a key that lives as long as the process, like its data.
 */
export function loadCredentialsKey(opts: { envKey?: string | undefined; dataDir: string }): CredentialsKey {
  if (opts.envKey !== undefined && opts.envKey.trim() !== '') return parseCredentialsKey(opts.envKey);
  if (opts.dataDir.startsWith('memory://')) return parseCredentialsKey(randomBytes(32).toString('hex'));
  const file = join(opts.dataDir, KEY_FILE_NAME);
  mkdirSync(opts.dataDir, { recursive: true });
  try {
    // 'wx': when two processes start together, one creates the file and both read the same key.
    writeFileSync(file, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
  return parseCredentialsKey(readFileSync(file, 'utf8'));
}

const aad = (workspaceId: string, senderId: string): Buffer => Buffer.from(`sender-credential\u0000${workspaceId}\u0000${senderId}`, 'utf8');

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

/** The stored secret could not be used (another key, or tampered with): say how to fix it. */
export class CredentialUnreadable extends Error {}

export type ServerCredentials = {
  /** The credentials port of one database transaction (an operation's). */
  port(sql: SqlExecutor): SenderCredentials;
  /** The runner's read; null when none is stored. */
  secretFor(sql: SqlExecutor, workspaceId: string, senderId: string): Promise<string | null>;
};

/** Over a key, or a function that yields it on first use (so a server that never stores a secret
 * never creates a key file). */
export function serverCredentials(key: CredentialsKey | (() => CredentialsKey)): ServerCredentials {
  let resolved: CredentialsKey | null = typeof key === 'function' ? null : key;
  const keyOf = (): CredentialsKey => (resolved ??= (key as () => CredentialsKey)());
  return {
    port(sql) {
      return {
        hostedBy: 'server',
        async set(workspaceId, senderId, secret, meta) {
          const k = keyOf();
          await sql.query(
            `INSERT INTO sender_credentials (workspace_id, sender_id, secret, key_id, updated_at, updated_by)
             VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (workspace_id, sender_id) DO UPDATE
               SET secret = EXCLUDED.secret, key_id = EXCLUDED.key_id, updated_at = EXCLUDED.updated_at, updated_by = EXCLUDED.updated_by`,
            [workspaceId, senderId, sealSecret(k, workspaceId, senderId, secret), k.id, meta.at, meta.by],
          );
        },
        async has(workspaceId, senderId) {
          const rows = await sql.query('SELECT 1 FROM sender_credentials WHERE workspace_id = $1 AND sender_id = $2', [workspaceId, senderId]);
          return rows.length > 0;
        },
      };
    },
    async secretFor(sql, workspaceId, senderId) {
      const rows = await sql.query<{ secret: string; key_id: string }>('SELECT secret, key_id FROM sender_credentials WHERE workspace_id = $1 AND sender_id = $2', [workspaceId, senderId]);
      const row = rows[0];
      if (!row) return null;
      const k = keyOf();
      if (row.key_id !== k.id) {
        throw new CredentialUnreadable(`the stored secret was encrypted with another CREDENTIALS_KEY (key id ${row.key_id}, this server has ${k.id}); start the server with that key, or set the secret again`);
      }
      try {
        return openSecret(k, workspaceId, senderId, row.secret);
      } catch {
        throw new CredentialUnreadable('the stored secret does not decrypt (it was altered); set it again');
      }
    },
  };
}
