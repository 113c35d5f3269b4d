/**
 * Sender secrets on the sync server: the SMTP passwords and connector tokens of the senders its
 * runner hosts (`--runner`), in the sender_credentials table, encrypted at rest with AES-256-GCM
 * (the codec of channels/secret-codec.ts, shared with the desktop). The key comes from
 * CREDENTIALS_KEY (32 bytes, hex or base64), or from a key file generated in the data folder on
 * first use. Each ciphertext is bound to its workspace and sender (GCM additional
 * data), so a row copied onto another sender does not decrypt. Nothing here ever returns a secret to
 * an operation: only the runner reads them (secretFor).
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SenderCredentials } from '../shared/context.ts';
import { openSecret, parseCredentialsKey, sealSecret } from '../channels/secret-codec.ts';
import type { CredentialsKey } from '../channels/secret-codec.ts';
import type { SqlExecutor } from './db.ts';

export { openSecret, parseCredentialsKey, sealSecret };
export type { CredentialsKey };

export const KEY_FILE_NAME = 'credentials.key';

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
