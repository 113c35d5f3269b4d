/**
 * Where the sync server's API key is kept. The Electron main process provides a store encrypted with
 * the OS keychain (safeStorage); the web host and headless runs keep it in a file readable only by
 * the user, since a plain Node process has no keychain of its own.
 */
import { chmod, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { SenderCredentials } from '../../shared/context.ts';

export type CredentialStore = {
  get(name: string): Promise<string | null>;
  set(name: string, secret: string): Promise<void>;
  delete(name: string): Promise<void>;
  /** Said in Settings: how the key is protected on this machine. */
  readonly protection: string;
};

type Codec = { encode(plain: string): Buffer; decode(stored: Buffer): string };

/** A JSON map of name -> encoded secret in one file (mode 0600), written atomically. */
export function fileCredentialStore(file: string, codec: Codec = plainCodec, protection = 'a file readable only by your user account'): CredentialStore {
  async function load(): Promise<Record<string, string>> {
    try {
      const parsed: unknown = JSON.parse(await readFile(file, 'utf8'));
      return parsed !== null && typeof parsed === 'object' ? (parsed as Record<string, string>) : {};
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return {};
      throw e;
    }
  }
  async function save(map: Record<string, string>): Promise<void> {
    await mkdir(dirname(file), { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`;
    await writeFile(tmp, JSON.stringify(map), { mode: 0o600 });
    await chmod(tmp, 0o600);
    await rename(tmp, file);
  }
  return {
    protection,
    async get(name) {
      const v = (await load())[name];
      return v === undefined ? null : codec.decode(Buffer.from(v, 'base64'));
    },
    async set(name, secret) {
      const map = await load();
      map[name] = codec.encode(secret).toString('base64');
      await save(map);
    },
    async delete(name) {
      const map = await load();
      if (!(name in map)) return;
      delete map[name];
      if (Object.keys(map).length === 0) await rm(file, { force: true });
      else await save(map);
    },
  };
}

const plainCodec: Codec = {
  encode: (plain) => Buffer.from(plain, 'utf8'),
  decode: (stored) => stored.toString('utf8'),
};

/** How a CredentialStore turns secrets into bytes on disk: main.ts passes Electron's safeStorage
 * (the OS keychain) here; without it the file holds them as they are, readable only by the user. */
export type CredentialCodec = Codec;

/**
 * The desktop's credentials port (shared/context.ts SenderCredentials) for the senders whose channel
 * runs on this desktop (channelConfig.hostedBy absent or 'desktop'): their SMTP (and IMAP)
 * passwords and connector tokens, in the same CredentialStore as the sync server's key, i.e. under Electron a file
 * of the data folder (mode 0600) encrypted with safeStorage. Documents never hold them.
 */
export type DesktopSenderCredentials = SenderCredentials & {
  /** The local runner's read (passwordFor / tokenFor of the channels); null when none is kept. */
  secretFor(workspaceId: string, sdrProfileId: string): Promise<string | null>;
  /** Forgets a sender's secret (the sender was removed, or the workspace left). */
  forget(workspaceId: string, sdrProfileId: string): Promise<void>;
};

const senderCredentialName = (workspaceId: string, sdrProfileId: string): string => `sender:${workspaceId}:${sdrProfileId}`;

export function desktopSenderCredentials(store: CredentialStore): DesktopSenderCredentials {
  return {
    hostedBy: 'desktop',
    async set(workspaceId, sdrProfileId, secret) {
      await store.set(senderCredentialName(workspaceId, sdrProfileId), secret);
    },
    async has(workspaceId, sdrProfileId) {
      return (await store.get(senderCredentialName(workspaceId, sdrProfileId))) !== null;
    },
    secretFor: (workspaceId, sdrProfileId) => store.get(senderCredentialName(workspaceId, sdrProfileId)),
    async forget(workspaceId, sdrProfileId) {
      await store.delete(senderCredentialName(workspaceId, sdrProfileId));
      // An email sender's own IMAP password (shared/ops/credentials.ts imapCredentialId) goes with it.
      await store.delete(senderCredentialName(workspaceId, `${sdrProfileId}:imap`));
    },
  };
}
