/** "Sign in with Google", "Sign in with Microsoft" and "Other provider (OpenID)": connects (or
 * reconnects) a mailbox with OAuth. The backend begins the sign-in and waits on a loopback address;
 * the system browser is opened on the provider's page (Electron's shell through the main process,
 * a new tab for the web host); the dialog follows the sign-in until it is connected, refused,
 * cancelled at the provider or timed out, and says which. No password is typed here. */
import { useEffect, useRef, useState } from 'react';
import type { OpInput } from '../../../../shared/ops/index.ts';
import { bridge } from '../../bridge/index.ts';
import { ErrorText } from '../../components/ErrorText.tsx';
import { errorText, run } from '../../lib/ops.ts';

type Provider = OpInput<'sdrProfiles.oauth.begin'>['provider'];

export type SignInTarget = { email?: string; provider?: 'google' | 'microsoft' | 'oidc'; issuer?: string | null };

const POLL_MS = 1000;

/** `hostedBy: 'server'`: the sync server runs the mailbox and keeps its sign-in (this desktop only
 * receives the browser's redirect and hands it on). */
export function OAuthSignIn({ target, hostedBy, onConnected }: { target?: SignInTarget; hostedBy?: 'desktop' | 'server'; onConnected: (sdrProfileId: string) => void }) {
  const [phase, setPhase] = useState<'idle' | 'starting' | 'waiting'>('idle');
  const [error, setError] = useState<string | null>(null);
  const [other, setOther] = useState(target?.provider === 'oidc');
  const [oidc, setOidc] = useState({ issuer: target?.issuer ?? '', clientId: '', clientSecret: '', smtpHost: '', smtpPort: '587', imapHost: '', imapPort: '993' });
  const cancelled = useRef(false);

  useEffect(() => () => {
    cancelled.current = true;
  }, []);

  async function follow(state: string) {
    for (;;) {
      await new Promise((r) => setTimeout(r, POLL_MS));
      if (cancelled.current) return;
      const s = await run('sdrProfiles.oauth.status', { state });
      if (s.status === 'waiting') continue;
      setPhase('idle');
      if (s.status === 'connected' && s.sdrProfileId) onConnected(s.sdrProfileId);
      else setError(s.message ?? 'The sign-in ended without connecting the mailbox; start again.');
      return;
    }
  }

  async function signIn(provider: Provider) {
    setError(null);
    cancelled.current = false;
    setPhase('starting');
    try {
      const begun = await run('sdrProfiles.oauth.begin', { provider, ...(target?.email ? { email: target.email } : {}), ...(hostedBy === 'server' ? { hostedBy } : {}) });
      bridge.openExternal(begun.authorizationUrl);
      setPhase('waiting');
      await follow(begun.state);
    } catch (e) {
      setPhase('idle');
      setError(errorText(e));
    }
  }

  const busy = phase !== 'idle';
  const issuerProvider = (): Provider => ({
    issuer: oidc.issuer.trim(), clientId: oidc.clientId.trim(), ...(oidc.clientSecret ? { clientSecret: oidc.clientSecret } : {}),
    smtp: { host: oidc.smtpHost.trim(), port: Number(oidc.smtpPort), secure: oidc.smtpPort === '465' },
    imap: { host: oidc.imapHost.trim(), port: Number(oidc.imapPort), secure: oidc.imapPort === '993' },
  });

  return (
    <div className="stack" data-testid="oauth-sign-in">
      <div className="row">
        {(!target?.provider || target.provider === 'google') && (
          <button type="button" className="btn primary" disabled={busy} onClick={() => void signIn('google')}>Sign in with Google</button>
        )}
        {(!target?.provider || target.provider === 'microsoft') && (
          <button type="button" className="btn primary" disabled={busy} onClick={() => void signIn('microsoft')}>Sign in with Microsoft</button>
        )}
        {!target?.provider && (
          <button type="button" className="btn" disabled={busy} aria-expanded={other} onClick={() => setOther(!other)}>Other provider (OpenID)</button>
        )}
      </div>
      {other && (
        <div className="controls">
          <label className="field"><span>Issuer</span><input className="input" value={oidc.issuer} onChange={(e) => setOidc({ ...oidc, issuer: e.target.value })} placeholder="https://login.example.com" aria-label="Issuer" /></label>
          <label className="field"><span>Client ID</span><input className="input" value={oidc.clientId} onChange={(e) => setOidc({ ...oidc, clientId: e.target.value })} aria-label="Client ID" autoComplete="off" /></label>
          <label className="field"><span>Client secret (if the provider requires one)</span><input className="input" type="password" value={oidc.clientSecret} onChange={(e) => setOidc({ ...oidc, clientSecret: e.target.value })} aria-label="Client secret" autoComplete="new-password" /></label>
          <label className="field"><span>SMTP host</span><input className="input" value={oidc.smtpHost} onChange={(e) => setOidc({ ...oidc, smtpHost: e.target.value })} aria-label="OpenID SMTP host" /></label>
          <label className="field"><span>SMTP port</span><input className="input" type="number" value={oidc.smtpPort} onChange={(e) => setOidc({ ...oidc, smtpPort: e.target.value })} aria-label="OpenID SMTP port" /></label>
          <label className="field"><span>IMAP host</span><input className="input" value={oidc.imapHost} onChange={(e) => setOidc({ ...oidc, imapHost: e.target.value })} aria-label="OpenID IMAP host" /></label>
          <label className="field"><span>IMAP port</span><input className="input" type="number" value={oidc.imapPort} onChange={(e) => setOidc({ ...oidc, imapPort: e.target.value })} aria-label="OpenID IMAP port" /></label>
          <button type="button" className="btn primary" disabled={busy || !oidc.issuer.trim() || !oidc.clientId.trim() || !oidc.smtpHost.trim() || !oidc.imapHost.trim()} onClick={() => void signIn(issuerProvider())}>
            Sign in
          </button>
        </div>
      )}
      {phase === 'starting' && <div className="muted" role="status">Opening the sign-in page in your browser…</div>}
      {phase === 'waiting' && (
        <div className="notice" role="status" data-testid="oauth-waiting">
          Waiting for you to sign in and allow access in your browser (up to 10 minutes).{' '}
          <button type="button" className="btn" onClick={() => { cancelled.current = true; setPhase('idle'); }}>Stop waiting</button>
        </div>
      )}
      <ErrorText error={error} />
    </div>
  );
}
