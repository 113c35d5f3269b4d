/**
 * Mailboxes connected with OAuth 2.0 (authorization code with PKCE, RFC 6749 and RFC 7636): the
 * Google and Microsoft presets, any provider found by its OpenID discovery document, the
 * authorization URL, the code exchange and the refresh. Plain fetch over the RFCs: no OAuth client
 * library is installed here (openid-client / oauth4webapi would replace the request code below),
 * and the only cryptography is node:crypto's random bytes and SHA-256 for the S256 challenge. The
 * ID token's claims are read with `jose` (received straight from the token endpoint over TLS, so
 * its issuer is the one we called: OpenID Connect Core 3.1.3.7).
 *
 * Tokens never leave this module in an error message: refusals carry the provider's error code and
 * description only.
 */
import { createHash, randomBytes } from 'node:crypto';
import { decodeJwt } from 'jose';
import type { MailEndpoint, OAuthConnected, OAuthProviderInput } from '../shared/context.ts';

export type OAuthProviderKind = 'google' | 'microsoft' | 'oidc';

/** A provider as the flows use it: endpoints, the client, the scopes and the mail servers. */
export type OAuthProvider = {
  kind: OAuthProviderKind;
  /** Said to people: "Google", "Microsoft", or the issuer's host. */
  label: string;
  issuer: string | null;
  authorizationEndpoint: string;
  tokenEndpoint: string;
  userinfoEndpoint: string | null;
  clientId: string;
  clientSecret: string | null;
  scopes: string[];
  /** Parameters the provider needs to hand out a refresh token (Google: access_type=offline). */
  extraParams: Record<string, string>;
  smtp: MailEndpoint;
  imap: MailEndpoint;
};

/** The operator's or user's registered apps (README "Connecting Google and Microsoft mailboxes"). */
export type OAuthClientSettings = {
  google?: { clientId: string; clientSecret?: string | null } | null;
  microsoft?: { clientId: string; clientSecret?: string | null; tenant?: string | null } | null;
};

/** GOOGLE_OAUTH_CLIENT_ID / _SECRET, MICROSOFT_OAUTH_CLIENT_ID / _SECRET / MICROSOFT_OAUTH_TENANT. */
export function oauthClientSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): OAuthClientSettings {
  const v = (name: string): string | null => env[name]?.trim() || null;
  const googleId = v('GOOGLE_OAUTH_CLIENT_ID');
  const microsoftId = v('MICROSOFT_OAUTH_CLIENT_ID');
  return {
    google: googleId ? { clientId: googleId, clientSecret: v('GOOGLE_OAUTH_CLIENT_SECRET') } : null,
    microsoft: microsoftId ? { clientId: microsoftId, clientSecret: v('MICROSOFT_OAUTH_CLIENT_SECRET'), tenant: v('MICROSOFT_OAUTH_TENANT') } : null,
  };
}

/** A refusal of the flow (bad state, the provider said no, an unusable provider): said to people as is. */
export class OAuthError extends Error {
  constructor(
    /** The provider's error code (invalid_grant, access_denied, ...) or ours (state_unknown, discovery, ...). */
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'OAuthError';
  }
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

/** Whether a URL names this machine (RFC 8252 7.3: http is fine there, nowhere else). */
export const isLoopbackUrl = (u: URL): boolean => LOOPBACK_HOSTS.has(u.hostname);

/** https, or http on loopback only. */
export function checkProviderUrl(raw: string, what: string): URL {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new OAuthError('invalid_provider', `${what} is not a URL (${raw.slice(0, 200)}).`);
  }
  if (u.protocol === 'https:') return u;
  if (u.protocol === 'http:' && isLoopbackUrl(u)) return u;
  throw new OAuthError('invalid_provider', `${what} must be an https address (http is accepted only on this machine's loopback address): ${u.origin}.`);
}

/** The presets, with the client from the settings; null when that provider has no client set up. */
function preset(kind: 'google' | 'microsoft', settings: OAuthClientSettings): OAuthProvider {
  if (kind === 'google') {
    const client = settings.google;
    if (!client) throw new OAuthError('not_configured', 'Sign in with Google is not set up here: set GOOGLE_OAUTH_CLIENT_ID (and GOOGLE_OAUTH_CLIENT_SECRET) to the app registered in the Google Cloud console (README "Connecting Google and Microsoft mailboxes").');
    return {
      kind, label: 'Google', issuer: 'https://accounts.google.com',
      authorizationEndpoint: 'https://accounts.google.com/o/oauth2/v2/auth',
      tokenEndpoint: 'https://oauth2.googleapis.com/token',
      userinfoEndpoint: 'https://openidconnect.googleapis.com/v1/userinfo',
      clientId: client.clientId, clientSecret: client.clientSecret ?? null,
      scopes: ['openid', 'email', 'https://mail.google.com/'],
      // Google hands out a refresh token only for offline access, and again only on consent.
      extraParams: { access_type: 'offline', prompt: 'consent' },
      smtp: { host: 'smtp.gmail.com', port: 465, secure: true },
      imap: { host: 'imap.gmail.com', port: 993, secure: true },
    };
  }
  const client = settings.microsoft;
  if (!client) throw new OAuthError('not_configured', 'Sign in with Microsoft is not set up here: set MICROSOFT_OAUTH_CLIENT_ID (and MICROSOFT_OAUTH_TENANT for a single-tenant app) to the app registered in Microsoft Entra (README "Connecting Google and Microsoft mailboxes").');
  const tenant = encodeURIComponent(client.tenant || 'common');
  return {
    kind, label: 'Microsoft', issuer: null,
    authorizationEndpoint: `https://login.microsoftonline.com/${tenant}/oauth2/v2.0/authorize`,
    tokenEndpoint: `https://login.microsoftonline.com/${tenant}/oauth2/v2.0/token`,
    userinfoEndpoint: null,
    clientId: client.clientId, clientSecret: client.clientSecret ?? null,
    scopes: ['openid', 'email', 'offline_access', 'https://outlook.office.com/SMTP.Send', 'https://outlook.office.com/IMAP.AccessAsUser.All'],
    extraParams: {},
    // Exchange Online: SMTP AUTH submission with STARTTLS on 587, IMAP over TLS on 993.
    smtp: { host: 'smtp.office365.com', port: 587, secure: false },
    imap: { host: 'outlook.office365.com', port: 993, secure: true },
  };
}

type Fetch = typeof fetch;

const TIMEOUT_MS = 15_000;

async function getJson(f: Fetch, url: string, what: string, headers: Record<string, string> = {}): Promise<Record<string, unknown>> {
  let res: Response;
  try {
    res = await f(url, { headers: { accept: 'application/json', ...headers }, signal: AbortSignal.timeout(TIMEOUT_MS), redirect: 'error' });
  } catch (e) {
    throw new OAuthError('unreachable', `${what} could not be reached (${e instanceof Error ? e.message : String(e)}).`);
  }
  const body: unknown = await res.json().catch(() => null);
  if (!res.ok || body === null || typeof body !== 'object' || Array.isArray(body)) throw new OAuthError('bad_response', `${what} answered HTTP ${res.status} without the expected JSON.`);
  return body as Record<string, unknown>;
}

const str = (v: unknown): string | null => (typeof v === 'string' && v.trim() !== '' ? v : null);

/** A provider given by its issuer: its discovery document (OpenID Connect Discovery 1.0 section 4). */
async function discover(input: Extract<OAuthProviderInput, { issuer: string }>, f: Fetch): Promise<OAuthProvider> {
  const issuerUrl = checkProviderUrl(input.issuer, 'The issuer');
  const issuer = issuerUrl.toString().replace(/\/$/, '');
  const doc = await getJson(f, `${issuer}/.well-known/openid-configuration`, `The discovery document of ${issuerUrl.host}`);
  // Section 4.3: the document must name the issuer it was fetched for.
  if (str(doc.issuer)?.replace(/\/$/, '') !== issuer) throw new OAuthError('discovery', `The discovery document of ${issuerUrl.host} names another issuer (${String(doc.issuer).slice(0, 200)}).`);
  const authorizationEndpoint = str(doc.authorization_endpoint);
  const tokenEndpoint = str(doc.token_endpoint);
  if (!authorizationEndpoint || !tokenEndpoint) throw new OAuthError('discovery', `The discovery document of ${issuerUrl.host} has no authorization or token endpoint.`);
  const methods = Array.isArray(doc.code_challenge_methods_supported) ? doc.code_challenge_methods_supported : null;
  if (methods && !methods.includes('S256')) throw new OAuthError('discovery', `${issuerUrl.host} does not support PKCE with S256, which connecting a mailbox needs.`);
  checkProviderUrl(authorizationEndpoint, 'The authorization endpoint');
  checkProviderUrl(tokenEndpoint, 'The token endpoint');
  const userinfo = str(doc.userinfo_endpoint);
  return {
    kind: 'oidc', label: issuerUrl.host, issuer,
    authorizationEndpoint, tokenEndpoint, userinfoEndpoint: userinfo ? checkProviderUrl(userinfo, 'The userinfo endpoint').toString() : null,
    clientId: input.clientId, clientSecret: input.clientSecret ?? null,
    scopes: input.scopes && input.scopes.length > 0 ? [...new Set(['openid', 'email', 'offline_access', ...input.scopes])] : ['openid', 'email', 'offline_access'],
    // offline_access is granted only with consent (OpenID Connect Core 11).
    extraParams: { prompt: 'consent' },
    smtp: input.smtp, imap: input.imap,
  };
}

/** The provider of a begin request: a preset with the host's registered app, or discovery. */
export async function resolveProvider(input: OAuthProviderInput, settings: OAuthClientSettings, f: Fetch = fetch): Promise<OAuthProvider> {
  if (input === 'google' || input === 'microsoft') return preset(input, settings);
  return discover(input, f);
}

const base64url = (b: Buffer): string => b.toString('base64url');

/** A fresh PKCE pair (RFC 7636 4.1, 4.2: 32 random bytes, S256) and state. */
export function newPkce(): { verifier: string; challenge: string; state: string } {
  const verifier = base64url(randomBytes(32));
  return { verifier, challenge: base64url(createHash('sha256').update(verifier).digest()), state: base64url(randomBytes(32)) };
}

export function authorizationUrl(p: OAuthProvider, args: { redirectUri: string; state: string; challenge: string; email: string | null }): string {
  const u = new URL(p.authorizationEndpoint);
  u.searchParams.set('response_type', 'code');
  u.searchParams.set('client_id', p.clientId);
  u.searchParams.set('redirect_uri', args.redirectUri);
  u.searchParams.set('scope', p.scopes.join(' '));
  u.searchParams.set('state', args.state);
  u.searchParams.set('code_challenge', args.challenge);
  u.searchParams.set('code_challenge_method', 'S256');
  for (const [k, v] of Object.entries(p.extraParams)) u.searchParams.set(k, v);
  // Reconnecting: the provider preselects the same account.
  if (args.email) u.searchParams.set('login_hint', args.email);
  return u.toString();
}

/** What a pending authorization keeps until the redirect (never in a document: the verifier is a secret). */
export type PendingAuthorization = {
  state: string;
  workspaceId: string;
  memberId: string;
  verifier: string;
  redirectUri: string;
  email: string | null;
  hostedBy: 'desktop' | 'server';
  provider: OAuthProvider;
  /** Milliseconds since the epoch. */
  expiresAt: number;
};

export const PENDING_TTL_MS = 10 * 60_000;

/** The grant a sender's credential holds (JSON in the credentials port, like a password). */
export type OAuthGrant = {
  v: 1;
  kind: 'oauth2';
  provider: OAuthProviderKind;
  label: string;
  tokenEndpoint: string;
  clientId: string;
  clientSecret: string | null;
  refreshToken: string;
  accessToken: string;
  /** Milliseconds since the epoch. */
  expiresAt: number;
  issuedAt: number;
};

export const encodeGrant = (g: OAuthGrant): string => JSON.stringify(g);

/** The grant in a stored secret, or null when the secret is something else (a password). */
export function parseGrant(secret: string | null): OAuthGrant | null {
  if (!secret || !secret.startsWith('{')) return null;
  try {
    const g = JSON.parse(secret) as Partial<OAuthGrant>;
    if (g.kind !== 'oauth2' || typeof g.refreshToken !== 'string' || typeof g.tokenEndpoint !== 'string' || typeof g.clientId !== 'string') return null;
    return {
      v: 1, kind: 'oauth2', provider: g.provider ?? 'oidc', label: g.label ?? 'the provider', tokenEndpoint: g.tokenEndpoint, clientId: g.clientId,
      clientSecret: g.clientSecret ?? null, refreshToken: g.refreshToken, accessToken: g.accessToken ?? '', expiresAt: g.expiresAt ?? 0, issuedAt: g.issuedAt ?? 0,
    };
  } catch {
    return null;
  }
}

type TokenAnswer = { access_token?: unknown; refresh_token?: unknown; expires_in?: unknown; id_token?: unknown; error?: unknown; error_description?: unknown };

/** One call of the token endpoint (RFC 6749 4.1.3 / 6), the client authenticated by client_secret_post when it has a secret. */
async function tokenRequest(f: Fetch, endpoint: string, label: string, client: { clientId: string; clientSecret: string | null }, params: Record<string, string>): Promise<TokenAnswer> {
  const body = new URLSearchParams({ ...params, client_id: client.clientId, ...(client.clientSecret ? { client_secret: client.clientSecret } : {}) });
  let res: Response;
  try {
    res = await f(endpoint, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' }, body, signal: AbortSignal.timeout(TIMEOUT_MS), redirect: 'error' });
  } catch (e) {
    throw new OAuthError('unreachable', `${label}'s token endpoint could not be reached (${e instanceof Error ? e.message : String(e)}).`);
  }
  const answer = (await res.json().catch(() => null)) as TokenAnswer | null;
  if (!res.ok || !answer || typeof answer !== 'object') {
    const code = str(answer?.error) ?? `http_${res.status}`;
    // error_description is the provider's sentence; it never holds our tokens.
    const why = str(answer?.error_description);
    throw new OAuthError(code.slice(0, 64), `${label} refused (${code.slice(0, 64)}${why ? `: ${why.slice(0, 300)}` : ''}).`);
  }
  return answer;
}

const expiresAtOf = (answer: TokenAnswer, now: number): number => now + (typeof answer.expires_in === 'number' && answer.expires_in > 0 ? answer.expires_in : 3600) * 1000;

/** The mailbox address the grant belongs to: the ID token's email, else userinfo's, else preferred_username. */
async function emailOf(f: Fetch, p: OAuthProvider, answer: TokenAnswer, accessToken: string): Promise<string | null> {
  const idToken = str(answer.id_token);
  let claims: Record<string, unknown> = {};
  if (idToken) {
    try {
      claims = decodeJwt(idToken);
    } catch {
      claims = {};
    }
  }
  let email = str(claims.email) ?? (p.kind === 'microsoft' ? str(claims.preferred_username) : null);
  if (!email && p.userinfoEndpoint) {
    const info = await getJson(f, p.userinfoEndpoint, `${p.label}'s userinfo endpoint`, { authorization: `Bearer ${accessToken}` }).catch(() => ({}) as Record<string, unknown>);
    email = str(info.email);
  }
  return email && email.includes('@') ? email.trim().toLowerCase() : null;
}

/** Exchanges the code of a pending authorization (RFC 6749 4.1.3 with the PKCE verifier, RFC 7636 4.5). */
export async function exchangeCode(pending: PendingAuthorization, code: string, opts: { fetch?: Fetch; now: number }): Promise<OAuthConnected> {
  const f = opts.fetch ?? fetch;
  const p = pending.provider;
  const answer = await tokenRequest(f, p.tokenEndpoint, p.label, p, { grant_type: 'authorization_code', code, redirect_uri: pending.redirectUri, code_verifier: pending.verifier });
  const accessToken = str(answer.access_token);
  const refreshToken = str(answer.refresh_token);
  if (!accessToken) throw new OAuthError('bad_response', `${p.label} answered without an access token.`);
  if (!refreshToken) throw new OAuthError('no_refresh_token', `${p.label} gave no refresh token, so the mailbox could not stay connected: allow offline access when asked (for an OpenID provider, the client needs the refresh_token grant).`);
  const email = await emailOf(f, p, answer, accessToken);
  if (!email) throw new OAuthError('no_email', `${p.label} did not say which mailbox was signed in to (no email claim): grant the email scope.`);
  if (pending.email && pending.email.toLowerCase() !== email) {
    throw new OAuthError('wrong_account', `You signed in as ${email}, but this sender is ${pending.email}: sign in with that mailbox to reconnect it.`);
  }
  const grant: OAuthGrant = {
    v: 1, kind: 'oauth2', provider: p.kind, label: p.label, tokenEndpoint: p.tokenEndpoint, clientId: p.clientId, clientSecret: p.clientSecret,
    refreshToken, accessToken, expiresAt: expiresAtOf(answer, opts.now), issuedAt: opts.now,
  };
  return { email, provider: p.kind, providerLabel: p.label, issuer: p.issuer, smtp: p.smtp, imap: p.imap, hostedBy: pending.hostedBy, secret: encodeGrant(grant), accessToken };
}

/** A new access token for a grant (RFC 6749 6); the refresh token is kept unless the provider rotated it. */
export async function refreshGrant(g: OAuthGrant, opts: { fetch?: Fetch; now: number }): Promise<OAuthGrant> {
  const answer = await tokenRequest(opts.fetch ?? fetch, g.tokenEndpoint, g.label, g, { grant_type: 'refresh_token', refresh_token: g.refreshToken });
  const accessToken = str(answer.access_token);
  if (!accessToken) throw new OAuthError('bad_response', `${g.label} answered a refresh without an access token.`);
  return { ...g, accessToken, refreshToken: str(answer.refresh_token) ?? g.refreshToken, expiresAt: expiresAtOf(answer, opts.now), issuedAt: opts.now };
}
