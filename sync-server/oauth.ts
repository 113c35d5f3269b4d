/**
 * Mailbox sign-in with OAuth 2.0 on the sync server (for the senders its runner hosts): the pending
 * authorizations in PostgreSQL (migration 018: any server process may receive the redirect), and
 * `GET /oauth/callback`, where the provider sends the browser back when the flow was begun without
 * a redirectUri of the caller's own (PUBLIC_URL/oauth/callback). That route needs no API key: the
 * state is the capability (32 random bytes, taken once, 10 minutes), and it completes as the member
 * who began. Its page never shows a token.
 */
import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Clock, Ids, OAuthConnectPort, Secrets, SenderHostCheck, SenderVerifier } from '../shared/context.ts';
import { isDomainError } from '../shared/errors.ts';
import { execute, prepareOperation } from '../shared/ops/execute.ts';
import { createOAuthConnect } from '../channels/oauth-connect.ts';
import { processRenewalLock } from '../channels/oauth-tokens.ts';
import type { RenewalLock } from '../channels/oauth-tokens.ts';
import type { PendingStore } from '../channels/oauth-connect.ts';
import type { OAuthClientSettings, PendingAuthorization } from '../channels/oauth.ts';
import { openSecret, sealSecret } from '../channels/secret-codec.ts';
import type { CredentialsKey } from '../channels/secret-codec.ts';
import type { ServerCredentials } from './credentials.ts';
import type { SqlDatabase, SqlExecutor } from './db.ts';
import type { PgDatabase } from './pg-database.ts';
import { escapeHtml } from '../shared/html.ts';

/** The advisory lock class of OAuth renewals (key: the sender's id); beside pg-store.ts's writer lock. */
export const OAUTH_RENEWAL_LOCK_CLASS = 728;

/**
 * Renewals of a sender's OAuth grant one at a time across this server's processes
 * (channels/oauth-tokens.ts says why): on PostgreSQL a transaction holding an advisory lock on the
 * sender around the renewal (read, refresh at the provider, write back on other connections); the
 * provider's answer is bounded by the token request's timeout. PGlite is one process, which holds
 * its data directory alone, so the process's own lock is the whole of it (and a transaction there
 * would hold the only connection the write-back needs).
 */
export function serverRenewalLock(sql: SqlDatabase): RenewalLock {
  if (sql.kind === 'pglite') return processRenewalLock;
  const across = advisoryRenewalLock(sql);
  return (senderId, work) => processRenewalLock(senderId, () => across(senderId, work));
}

/** The PostgreSQL part of serverRenewalLock: other processes' renewals of the sender wait. */
export function advisoryRenewalLock(sql: SqlDatabase): RenewalLock {
  return (senderId, work) => sql.transaction(() => work(), { lock: { classId: OAUTH_RENEWAL_LOCK_CLASS, key: senderId } });
}

const stateHash = (state: string): string => createHash('sha256').update(state).digest('hex');
const sealId = (hash: string): string => `oauth-pending:${hash}`;

/** The pending authorizations of one transaction (an operation's), sealed with the server's key. */
export function sqlPendingStore(sql: SqlExecutor, key: () => CredentialsKey, now: () => number): PendingStore {
  return {
    async put(p) {
      const k = key();
      const hash = stateHash(p.state);
      await sql.query('DELETE FROM oauth_pending WHERE expires_at < $1', [new Date(now()).toISOString()]);
      await sql.query(
        'INSERT INTO oauth_pending (state_hash, workspace_id, member_id, sealed, key_id, expires_at) VALUES ($1, $2, $3, $4, $5, $6)',
        [hash, p.workspaceId, p.memberId, sealSecret(k, p.workspaceId, sealId(hash), JSON.stringify(p)), k.id, new Date(p.expiresAt).toISOString()],
      );
    },
    async take(workspaceId, state) {
      const hash = stateHash(state);
      const rows = await sql.query<{ sealed: string; key_id: string }>('DELETE FROM oauth_pending WHERE state_hash = $1 AND workspace_id = $2 RETURNING sealed, key_id', [hash, workspaceId]);
      const row = rows[0];
      if (!row) return null;
      const k = key();
      if (row.key_id !== k.id) return null;
      try {
        return JSON.parse(openSecret(k, workspaceId, sealId(hash), row.sealed)) as PendingAuthorization;
      } catch {
        return null;
      }
    },
    async has(workspaceId, state) {
      const rows = await sql.query('SELECT 1 FROM oauth_pending WHERE state_hash = $1 AND workspace_id = $2 AND expires_at > $3', [stateHash(state), workspaceId, new Date(now()).toISOString()]);
      return rows.length > 0;
    },
  };
}

/**
 * Forgets a pending sign-in whose completion failed. The completion took it inside its transaction,
 * which the failure rolled back; its code is spent at the provider either way, so the state must
 * not be presentable again. Runs after the transaction, on the database itself.
 */
export async function forgetPending(sql: SqlExecutor, workspaceId: string, state: unknown): Promise<void> {
  if (typeof state !== 'string' || state === '') return;
  await sql.query('DELETE FROM oauth_pending WHERE state_hash = $1 AND workspace_id = $2', [stateHash(state), workspaceId]);
}

export type ServerOAuthOptions = {
  key: () => CredentialsKey;
  settings: OAuthClientSettings;
  clock: Clock;
  /** PUBLIC_URL (https), where the provider may send the browser back; null: callers give redirectUri. */
  publicUrl: string | null;
  fetch?: typeof fetch;
};

export const CALLBACK_PATH = '/oauth/callback';

/** The connect port of one operation's transaction (PGlite has one connection: a query beside the
 * transaction would wait for it). A completion that fails rolls back with its transaction, taking
 * of the pending row included: the callers then forget it (forgetPending). */
export function serverOAuthPort(sql: SqlExecutor, opts: ServerOAuthOptions): OAuthConnectPort {
  const now = () => opts.clock.now().getTime();
  return createOAuthConnect({
    hostedBy: 'server',
    pending: sqlPendingStore(sql, opts.key, now),
    settings: opts.settings,
    now,
    ...(opts.fetch ? { fetch: opts.fetch } : {}),
    defaultRedirectUri: () => (opts.publicUrl ? `${opts.publicUrl}${CALLBACK_PATH}` : null),
  });
}


function page(title: string, body: string): string {
  return `<!doctype html><html><head><meta charset="utf-8"><meta name="referrer" content="no-referrer"><title>${escapeHtml(title)}</title></head><body style="font-family:system-ui,sans-serif;max-width:40em;margin:4em auto"><h1>${escapeHtml(title)}</h1><p>${escapeHtml(body)}</p></body></html>`;
}

/** GET /oauth/callback: completes the sign-in as the member who began it. */
export function registerOAuthCallback(
  app: FastifyInstance,
  deps: {
    db: PgDatabase; sql: SqlDatabase; clock: Clock; ids: Ids; random: () => number; secrets: Secrets; credentials: ServerCredentials | null; oauth: ServerOAuthOptions;
    /** The mailbox check the completion runs before it connects anything (as the operation's route does). */
    senderHosts: SenderHostCheck; senderVerifierFor: (sql: SqlExecutor) => SenderVerifier;
  },
): void {
  app.get(CALLBACK_PATH, async (req, reply) => {
    const q = req.query as Record<string, unknown>;
    const state = typeof q.state === 'string' ? q.state : '';
    const code = typeof q.code === 'string' ? q.code : '';
    const error = typeof q.error === 'string' ? q.error.slice(0, 64) : '';
    void reply.header('cache-control', 'no-store').type('text/html; charset=utf-8');
    const rows = state ? await deps.sql.query<{ workspace_id: string; member_id: string }>('SELECT workspace_id, member_id FROM oauth_pending WHERE state_hash = $1', [stateHash(state)]) : [];
    const row = rows[0];
    if (!row) return reply.code(400).send(page('Sign-in not recognised', 'This sign-in is unknown, was already used or is over 10 minutes old. Nothing was connected: start connecting the mailbox again.'));
    if (error || !code) {
      // The user said no (access_denied) or the provider failed: forget the attempt, store nothing.
      await sqlPendingStore(deps.sql, deps.oauth.key, () => deps.clock.now().getTime()).take(row.workspace_id, state);
      const why = error === 'access_denied' ? 'the access was not granted' : `the provider answered ${error || 'without a code'}`;
      return reply.code(400).send(page('Mailbox not connected', `The sign-in ended without connecting the mailbox (${why}). Nothing was stored; you can close this tab.`));
    }
    try {
      const member = await deps.db.forWorkspace(row.workspace_id).get('members', row.member_id);
      if (!member) throw new Error('The member who began this sign-in is no longer in the workspace.');
      const actor = { workspaceId: row.workspace_id, memberId: member.id, role: member.role };
      const base = { actor, clock: deps.clock, ids: deps.ids, random: deps.random, secrets: deps.secrets, senderHosts: deps.senderHosts };
      // The code exchange and the mailbox check (network work) run before the transaction, as on the
      // operation's route: the pending sign-in is taken there, once.
      const pre = await prepareOperation('sdrProfiles.oauth.complete', { state, code }, {
        ...base, reader: deps.db.forWorkspace(row.workspace_id), senderVerifier: deps.senderVerifierFor(deps.sql), oauth: serverOAuthPort(deps.sql, deps.oauth),
      });
      const out = await deps.db.withStore(row.workspace_id, async (store, tx) => execute('sdrProfiles.oauth.complete', { state, code }, {
        ...base, store,
        credentials: deps.credentials?.port(tx) ?? null,
        senderVerifier: deps.senderVerifierFor(tx),
        oauth: serverOAuthPort(tx, deps.oauth),
        ...(pre ? { prepared: pre.prepared } : {}),
      }));
      return reply.send(page('Mailbox connected', `${out.name} is ${out.reconnected ? 'reconnected' : 'connected'}; its emails go out from the sync server. You can close this tab.`));
    } catch (e) {
      await forgetPending(deps.sql, row.workspace_id, state).catch(() => undefined);
      // The message is ours or the provider's error code and description: never a token.
      const message = isDomainError(e) || e instanceof Error ? e.message : String(e);
      req.log.warn({ oauthError: isDomainError(e) ? e.details.oauthError : undefined }, 'an OAuth sign-in was refused');
      return reply.code(400).send(page('Mailbox not connected', message));
    }
  });
}
