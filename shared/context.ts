/** What a handler may use besides its input: the actor, time, ids, randomness, the store and the
 * injected ports. Handlers never read Date.now(), Math.random() or globals. */
import type { Role, Sender, SenderCheckName } from './model/index.ts';
import type { StoreReader } from './store.ts';
import type { Tx } from './tx.ts';
import type { ChannelHost } from './engine/channel.ts';
import type { WebhookPort } from './webhooks/port.ts';

export type Actor = {
  workspaceId: string;
  memberId: string;
  role: Role;
  /** The runner or a server process acting for the workspace rather than a person. */
  isSystem?: boolean;
};

/** The actor of work the server or the runner does for a workspace (admin commands, the runner,
 * housekeeping), which the rules let through where a member would need a role. */
export const systemActor = (workspaceId: string): Actor => ({ workspaceId, memberId: 'system', role: 'owner', isSystem: true });

export type Clock = { now(): Date };
export type Ids = { uuid(): string };
/** Secret generation and hashing, injected because shared/ has no crypto module of its own. */
/** Cryptographically strong random bytes: the material of keys, tokens and nonces (never an id,
 * which carries the time it was made). */
export type RandomBytes = (length: number) => Uint8Array;
export type Secrets = { newApiKey(): string; hash(secret: string): string; randomBytes: RandomBytes };

/**
 * Where a sender's secret (SMTP password, connector token) is kept: beside the runner that uses it,
 * never in a document, since documents replicate to every member's desktop. The sync server keeps
 * them encrypted in its database, a desktop in a file of its data folder. `hostedBy` says which
 * senders' runner reads the secrets kept here (channelConfig.hostedBy, 'desktop' when absent).
 */
export type SenderCredentials = {
  readonly hostedBy: 'server' | 'desktop';
  set(workspaceId: string, sdrProfileId: string, secret: string, meta: { at: string; by: string }): Promise<void>;
  has(workspaceId: string, sdrProfileId: string): Promise<boolean>;
};

/**
 * Whether the sync server's runner, which runs server-hosted senders (channelConfig.hostedBy
 * 'server'), will connect to these SMTP, IMAP or connector hosts: null when it will, else the
 * sentence saying why not (it refuses addresses of its own network unless its operator allows
 * them). The sync server answers it itself (the check resolves names); a desktop connected to one
 * asks it over the network, and throws, saying why, when it cannot (offline).
 */
export type SenderHostCheck = {
  /** The guard's sentence when this server's runner would refuse one of the hosts, else null. */
  refusal(hosts: readonly string[]): Promise<string | null>;
  /** The sentence when one of the hosts is refused whatever the operator allows (link-local and
   * cloud metadata addresses): such a sender is not created at all. Absent where it cannot be asked. */
  forbidden?(hosts: readonly string[]): Promise<string | null>;
};

/** A mail server of a mailbox connected with OAuth (sdrProfiles.oauth.*). */
export type MailEndpoint = { host: string; port: number; secure: boolean };

/** Which provider signs a mailbox in: a preset, or any OpenID provider by its issuer. */
export type OAuthProviderInput =
  | 'google'
  | 'microsoft'
  | { issuer: string; clientId: string; clientSecret?: string | undefined; scopes?: string[] | undefined; smtp: MailEndpoint; imap: MailEndpoint };

/** What a completed authorization gives the operation: the mailbox and its grant (`secret`, kept
 * like a password through the credentials port, never in a document or an answer), and the access
 * token in it, with which the mailbox is checked before it is connected (never stored apart). */
export type OAuthConnected = {
  email: string;
  provider: 'google' | 'microsoft' | 'oidc';
  providerLabel: string;
  issuer: string | null;
  smtp: MailEndpoint;
  imap: MailEndpoint;
  hostedBy: 'desktop' | 'server';
  secret: string;
  accessToken: string;
};

/**
 * The authorization flows of this host (channels/oauth.ts does the protocol): begin keeps the state
 * and PKCE verifier on this host (the sync server in PostgreSQL, a desktop in its own memory) for
 * 10 minutes; complete takes them back once (an unknown, expired or replayed state is refused and
 * nothing is stored) and exchanges the code. `hostedBy` says whose senders this host connects.
 */
export type OAuthConnectPort = {
  readonly hostedBy: 'server' | 'desktop';
  begin(req: { workspaceId: string; memberId: string; provider: OAuthProviderInput; email: string | null; redirectUri: string | null }): Promise<{ authorizationUrl: string; state: string; redirectUri: string; expiresAt: string }>;
  complete(req: { workspaceId: string; memberId: string; state: string; code: string }): Promise<OAuthConnected>;
  /** Where a sign-in begun here stands (the desktop's loopback flow completes by itself). */
  status?(req: { workspaceId: string; state: string }): Promise<OAuthFlowStatus>;
};

export type OAuthFlowStatus = { status: 'waiting' | 'connected' | 'failed' | 'unknown'; sdrProfileId: string | null; message: string | null };

/** One line of a sender check: what was looked at, how it went, and what to do about it. */
export type SenderCheckLine = { check: SenderCheckName; status: 'pass' | 'warn' | 'fail'; message: string; fix: string | null };

/** Secrets just given for a check (a sender being connected): passwords, or an OAuth 2.0 access
 * token (both logins then use XOAUTH2 with it). Never stored by the check. */
export type SenderCheckSecrets = { smtp?: string | null; imap?: string | null; accessToken?: string | null };

/**
 * Checks an email sender from the host that will run it (channels/verify-sender.ts): the SMTP login,
 * the IMAP login and its Sent folder, and the From domain's SPF, DKIM and DMARC records. `hostedBy`
 * says which senders' network this host is (like SenderCredentials): a desktop checks the senders it
 * runs, the sync server its server-hosted ones. `secrets` are the ones just given (a new sender);
 * without them the host's credential store (or, for OAuth senders, its tokens) is used. Never throws
 * for a failed check: that is a 'fail' line.
 */
export type SenderVerifier = {
  readonly hostedBy: 'server' | 'desktop';
  verify(sender: Sender, opts: { secrets?: SenderCheckSecrets; dkimSelector?: string | null }): Promise<SenderCheckLine[]>;
};

export type Ctx = {
  actor: Actor;
  clock: Clock;
  ids: Ids;
  /** Uniform in [0, 1). */
  random: () => number;
  /** Reads see this call's own staged writes; writes are staged and committed after the rules pass. */
  db: Tx;
  secrets: Secrets;
  /** Channels for operations that must talk to a network (social reading). Absent offline. */
  channels: ChannelHost | null;
  /** Where sender secrets are kept on this host; absent where none are kept. */
  credentials?: SenderCredentials | null;
  /** The sync server's check of server-hosted senders' hosts; absent where there is no sync server. */
  senderHosts?: SenderHostCheck | null;
  /** Mailbox sign-in with OAuth 2.0 on this host (sdrProfiles.oauth.*); absent where not offered. */
  oauth?: OAuthConnectPort | null;
  /** Checks email senders from this host's network (sdrProfiles.create, sdrProfiles.verify); absent where none can be. */
  senderVerifier?: SenderVerifier | null;
  /** The sync server's webhook endpoints and delivery log; absent elsewhere (desktops forward). */
  webhooks?: WebhookPort | null;
  /** True when the call is a preview: the handler computes the same answer and nothing is committed. */
  dryRun: boolean;
  /** What the operation's `prepare` found before its transaction (shared/ops/define.ts), if it has one. */
  prepared?: unknown;
};

/** What an operation's `prepare` may use: the ports and a reader of the workspace, no writes. */
export type PrepareCtx = Omit<Ctx, 'db' | 'prepared' | 'dryRun'> & { db: StoreReader };

/** ISO 8601 timestamp of the ctx clock. */
export const nowIso = (ctx: { clock: Clock }): string => ctx.clock.now().toISOString();
