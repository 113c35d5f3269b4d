/** What the tests against a real provider cannot reach: the Google and Microsoft presets (their
 * endpoints, scopes and mail servers), the PKCE pair, and the grant kept as a secret. The flows
 * themselves run against oidc-provider in test/integration/oauth-*.test.ts. */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { OAuthError, authorizationUrl, checkProviderUrl, encodeGrant, newPkce, parseGrant, resolveProvider } from '../../channels/oauth.ts';

const settings = { google: { clientId: 'g-id', clientSecret: 'g-secret' }, microsoft: { clientId: 'm-id', tenant: 'contoso.onmicrosoft.com' } };

describe('OAuth presets and PKCE', () => {
  it('Google: the full mail scope, offline access with consent, Gmail SMTP and IMAP over TLS', async () => {
    const p = await resolveProvider('google', settings);
    expect(p.scopes).toContain('https://mail.google.com/');
    expect(p.smtp).toEqual({ host: 'smtp.gmail.com', port: 465, secure: true });
    expect(p.imap).toEqual({ host: 'imap.gmail.com', port: 993, secure: true });
    const u = new URL(authorizationUrl(p, { redirectUri: 'http://127.0.0.1:5000/oauth/callback', state: 'st', challenge: 'ch', email: 'sam@acme.test' }));
    expect(`${u.origin}${u.pathname}`).toBe('https://accounts.google.com/o/oauth2/v2/auth');
    expect(Object.fromEntries(u.searchParams)).toMatchObject({ response_type: 'code', client_id: 'g-id', access_type: 'offline', prompt: 'consent', code_challenge_method: 'S256', login_hint: 'sam@acme.test' });
    expect(u.searchParams.has('client_secret')).toBe(false);
  });

  it('Microsoft: v2.0 endpoints of the tenant, offline_access and the Outlook SMTP.Send and IMAP scopes', async () => {
    const p = await resolveProvider('microsoft', settings);
    expect(p.authorizationEndpoint).toBe('https://login.microsoftonline.com/contoso.onmicrosoft.com/oauth2/v2.0/authorize');
    expect(p.tokenEndpoint).toBe('https://login.microsoftonline.com/contoso.onmicrosoft.com/oauth2/v2.0/token');
    expect(p.scopes).toEqual(expect.arrayContaining(['offline_access', 'https://outlook.office.com/SMTP.Send', 'https://outlook.office.com/IMAP.AccessAsUser.All']));
    expect(p.smtp).toEqual({ host: 'smtp.office365.com', port: 587, secure: false });
    expect(p.imap).toEqual({ host: 'outlook.office365.com', port: 993, secure: true });
    const common = await resolveProvider('microsoft', { microsoft: { clientId: 'm' } });
    expect(common.tokenEndpoint).toContain('/common/');
  });

  it('a preset without a registered app says which setting to give', async () => {
    await expect(resolveProvider('google', {})).rejects.toThrow(/GOOGLE_OAUTH_CLIENT_ID/);
    await expect(resolveProvider('microsoft', {})).rejects.toBeInstanceOf(OAuthError);
  });

  it('PKCE: a 43-character verifier and its S256 challenge; a fresh state each time', () => {
    const a = newPkce();
    const b = newPkce();
    expect(a.verifier).toMatch(/^[\w-]{43}$/);
    expect(a.challenge).toBe(createHash('sha256').update(a.verifier).digest('base64url'));
    expect(a.state).not.toBe(b.state);
    expect(a.verifier).not.toBe(b.verifier);
  });

  it('http issuers only on loopback', () => {
    expect(checkProviderUrl('http://127.0.0.1:4000', 'x').host).toBe('127.0.0.1:4000');
    expect(checkProviderUrl('https://login.example.com', 'x').host).toBe('login.example.com');
    expect(() => checkProviderUrl('http://login.example.com', 'The issuer')).toThrow(/https address/);
    expect(() => checkProviderUrl('ftp://127.0.0.1', 'The issuer')).toThrow(OAuthError);
  });

  it('a grant round-trips as a secret; a password is not a grant', () => {
    const g = { v: 1 as const, kind: 'oauth2' as const, provider: 'google' as const, label: 'Google', tokenEndpoint: 'https://oauth2.googleapis.com/token', clientId: 'g-id', clientSecret: null, refreshToken: 'r', accessToken: 'a', expiresAt: 2, issuedAt: 1 };
    expect(parseGrant(encodeGrant(g))).toEqual(g);
    expect(parseGrant('hunter2')).toBeNull();
    expect(parseGrant('{"kind":"other"}')).toBeNull();
    expect(parseGrant(null)).toBeNull();
  });
});
