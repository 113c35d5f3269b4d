/** Bearer API keys: `live_...` secrets looked up by their SHA-256 hash across workspaces. A key acts
 * as its member (role from the member document) inside its workspace. */
import type { Actor, Clock } from '../shared/context.ts';
import { DomainError } from '../shared/errors.ts';
import type { ApiKey, Member } from '../shared/model/index.ts';
import type { PgDatabase } from './pg-database.ts';
import { RateLimiter } from './rate-limit.ts';
import { hashApiKey } from './secrets.ts';

export type Authenticated = { actor: Actor; keyId: string };

/** lastUsedAt is written at most this often per key. */
const LAST_USED_EVERY_MS = 60_000;

/** Failed authentications allowed per client address and minute (unknown, revoked or malformed keys). */
export const DEFAULT_AUTH_FAILURES_PER_MINUTE = 300;

export class Authenticator {
  private readonly cache = new Map<string, { auth: Authenticated; until: number }>();
  private readonly lastUsedWritten = new Map<string, number>();
  private readonly pending = new Set<Promise<void>>();
  private readonly unsubscribe: () => void;
  private readonly failures: RateLimiter;

  constructor(
    private readonly db: PgDatabase,
    private readonly clock: Clock,
    /** How long a successful lookup is reused. Local key and member changes clear it at once; this
     * bounds how late another server process's revocation is noticed. */
    private readonly cacheMs = 2_000,
    /** Failed authentications per client address and minute before the address is refused without
     * a lookup (429). */
    failuresPerMinute = DEFAULT_AUTH_FAILURES_PER_MINUTE,
  ) {
    this.failures = new RateLimiter(failuresPerMinute, () => this.clock.now().getTime());
    this.unsubscribe = db.onCommit((e) => {
      if (e.collections.includes('apiKeys') || e.collections.includes('members')) this.cache.clear();
    });
  }

  /** Forget every cached lookup (a key or member changed, possibly in another process). */
  invalidate(): void {
    this.cache.clear();
  }

  /** `address` is the client's (req.ip): failures are counted against it. */
  async authenticate(header: string | undefined, address = 'unknown'): Promise<Authenticated> {
    try {
      return await this.lookup(header, address);
    } catch (e) {
      if (e instanceof DomainError && e.code === 'UNAUTHENTICATED') this.failures.take(address);
      throw e;
    }
  }

  private async lookup(header: string | undefined, address: string): Promise<Authenticated> {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
    if (!match?.[1]) {
      throw new DomainError('UNAUTHENTICATED', 'Send an API key: Authorization: Bearer live_...', { header: 'Authorization' });
    }
    const key = match[1];
    if (!key.startsWith('live_')) throw new DomainError('UNAUTHENTICATED', 'That is not an API key: keys start with live_.');
    const hash = hashApiKey(key);
    const now = this.clock.now().getTime();
    const hit = this.cache.get(hash);
    if (hit && hit.until > now) {
      this.touch(hit.auth, null, now);
      return hit.auth;
    }
    // An address that keeps sending unknown keys is refused before it costs a query.
    if (!this.failures.allows(address)) {
      const d = this.failures.take(address);
      throw new DomainError('RATE_LIMITED', `Too many requests with unknown or invalid API keys from this address; retry in ${d.retryAfterSeconds} s.`, {
        retryAfterSeconds: d.retryAfterSeconds,
        limitPerMinute: this.failures.perMinute,
        reason: 'auth_failures',
      });
    }
    const rows = await this.db.sql.query<{ key: ApiKey; member: Member | null }>(
      `SELECT k.doc AS key, m.doc AS member
         FROM documents k
         LEFT JOIN documents m ON m.collection = 'members' AND m.id = k.doc->>'memberId' AND m.workspace_id = k.workspace_id AND NOT m.deleted
        WHERE k.collection = 'apiKeys' AND k.doc->>'hash' = $1 AND NOT k.deleted`,
      [hash],
    );
    const row = rows[0];
    if (!row) throw new DomainError('UNAUTHENTICATED', 'This API key is not known.');
    if (row.key.revokedAt) throw new DomainError('UNAUTHENTICATED', `This API key was revoked at ${row.key.revokedAt}.`, { keyId: row.key.id });
    if (!row.member) throw new DomainError('UNAUTHENTICATED', 'The member this API key belongs to was removed from the workspace.', { keyId: row.key.id });
    const auth: Authenticated = {
      actor: { workspaceId: row.key.workspaceId, memberId: row.member.id, role: row.member.role },
      keyId: row.key.id,
    };
    this.cache.set(hash, { auth, until: now + this.cacheMs });
    this.touch(auth, row.key.lastUsedAt, now);
    return auth;
  }

  /** Records use of the key, at most once a minute, off the request's path. */
  private touch(auth: Authenticated, storedLastUsed: string | null, now: number): void {
    const written = this.lastUsedWritten.get(auth.keyId) ?? (storedLastUsed ? Date.parse(storedLastUsed) : 0);
    if (now - written < LAST_USED_EVERY_MS) return;
    this.lastUsedWritten.set(auth.keyId, now);
    const at = new Date(now).toISOString();
    const p = this.db
      .withStore(auth.actor.workspaceId, async (store) => {
        const doc = await store.get('apiKeys', auth.keyId);
        if (!doc || doc.revokedAt || (doc.lastUsedAt !== null && doc.lastUsedAt >= at)) return;
        await store.commit([{ collection: 'apiKeys', id: doc.id, before: doc, after: { ...doc, lastUsedAt: at } }]);
      })
      // A concurrent change to the key (a revocation) wins; the next use records the time again.
      .catch(() => {
        this.lastUsedWritten.delete(auth.keyId);
      })
      .finally(() => this.pending.delete(p));
    this.pending.add(p);
  }

  /** Waits for lastUsedAt writes in flight (before the database closes) and stops listening. */
  async settle(): Promise<void> {
    await Promise.all([...this.pending]);
    this.unsubscribe();
  }
}
