/** Connects a sender: the built-in sandbox network (simulated people, safe to try), a mailbox over SMTP,
 * or a social network through an HTTP connector. Secrets are not stored in the shared workspace. In a
 * workspace connected to a sync server, a mailbox or connector may run on the server instead of this
 * computer; the server refuses hosts of its own network, and the dialog shows what the operation
 * says about that (a refusal, or that it could not be checked from here). The user says whether the
 * account is new (it ramps up) or already warmed up (full limits at once, with the risk said). */
import { useState } from 'react';
import type { OpInput } from '../../../../shared/ops/index.ts';
import { Dialog } from '../../components/Dialog.tsx';
import { ErrorText } from '../../components/ErrorText.tsx';
import { run, useAction } from '../../lib/ops.ts';
import { useApp } from '../../state/app-store.ts';
import { OAuthSignIn } from './OAuthSignIn.tsx';
import { NEW_ACCOUNT, WARMED_UP_ACCOUNT, WARMED_UP_RISK } from './warm-up.ts';

type Channel = 'sandbox' | 'email' | 'http';
type HostedBy = 'desktop' | 'server';

const localZone = (): string => {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
  } catch {
    return 'UTC';
  }
};

export function ConnectSenderDialog({ onClose }: { onClose: () => void }) {
  const toast = useApp((s) => s.toast);
  const connected = useApp((s) => s.session?.state === 'open' && s.session.kind === 'connected');
  const [hostedBy, setHostedBy] = useState<HostedBy>('desktop');
  const [result, setResult] = useState<{ name: string; status: string } | null>(null);
  const [channel, setChannel] = useState<Channel>('sandbox');
  const server = connected && hostedBy === 'server' && channel !== 'sandbox';
  const [name, setName] = useState('');
  const [timeZone, setTimeZone] = useState(localZone);
  const [premium, setPremium] = useState(false);
  const [warmedUp, setWarmedUp] = useState(false);
  const [smtp, setSmtp] = useState({ host: '', port: '587', secure: false, user: '', from: '', password: '', dkimSelector: '' });
  // Reading the mailbox (replies, out-of-office answers, bounces): same login as SMTP unless given.
  const [imap, setImap] = useState({ enabled: true, host: '', port: '993', secure: true, user: '', password: '' });
  const [baseUrl, setBaseUrl] = useState('https://');
  const [warnings, setWarnings] = useState<string[]>([]);
  const action = useAction();

  function input(): OpInput<'sdrProfiles.create'> {
    const base = { name, timeZone, premium, warmedUp };
    if (channel === 'email') {
      return {
        ...base,
        channel,
        channelConfig: {
          host: smtp.host, port: Number(smtp.port), secure: smtp.secure, user: smtp.user, from: smtp.from, ...(smtp.password ? { password: smtp.password } : {}),
          ...(smtp.dkimSelector.trim() ? { dkimSelector: smtp.dkimSelector.trim() } : {}),
          ...(server ? { hostedBy } : {}),
          ...(imap.enabled && imap.host.trim()
            ? { imap: { host: imap.host.trim(), port: Number(imap.port), secure: imap.secure, ...(imap.user.trim() ? { user: imap.user.trim() } : {}), ...(imap.password ? { password: imap.password } : {}) } }
            : {}),
        },
      };
    }
    if (channel === 'http') return { ...base, channel, channelConfig: { baseUrl, ...(server ? { hostedBy } : {}) } };
    return { ...base, channel };
  }

  async function connect() {
    const r = await action.act(() => run('sdrProfiles.create', input()));
    if (!r) return;
    toast(r.status === 'disconnected' ? `${r.name} was added, but cannot send yet.` : `${r.name} is connected.`);
    if (r.warnings.length > 0) {
      setResult({ name: r.name, status: r.status });
      setWarnings(r.warnings);
    } else onClose();
  }

  return (
    <Dialog
      title="Connect a sender"
      onClose={onClose}
      footer={
        warnings.length > 0 ? (
          <button className="btn primary" onClick={onClose}>Done</button>
        ) : (
          <>
            <button className="btn" onClick={onClose}>Cancel</button>
            <button className="btn primary" disabled={action.busy || !name.trim()} onClick={() => void connect()}>{action.busy ? 'Connecting…' : 'Connect'}</button>
          </>
        )
      }
    >
      {warnings.length > 0 ? (
        <div className={`notice ${result?.status === 'disconnected' ? 'error' : 'warn'}`} role="alert" data-testid="connect-warnings">
          {result?.status === 'disconnected' && <strong>{result.name} was added as disconnected.</strong>}
          {warnings.map((w) => (
            <div key={w}>{w}</div>
          ))}
        </div>
      ) : (
        <form className="stack" onSubmit={(e) => { e.preventDefault(); void connect(); }}>
          <div className="tabs" role="tablist" style={{ margin: 0 }}>
            {(['sandbox', 'email', 'http'] as const).map((c) => (
              <button key={c} type="button" role="tab" aria-selected={channel === c} onClick={() => setChannel(c)}>
                {c === 'sandbox' ? 'Sandbox network' : c === 'email' ? 'Email (SMTP)' : 'HTTP connector'}
              </button>
            ))}
          </div>
          {channel === 'sandbox' && <p className="muted">Simulated people who accept, reply and book meetings, deterministically. Nobody real is contacted: try campaigns safely.</p>}
          {channel === 'http' && <p className="muted">A connector service that speaks the app's HTTP protocol to a social network on your behalf. This app never logs in to a social network itself.</p>}
          {channel === 'email' && (
            <p className="muted">
              Sends emails through your mailbox's SMTP server and reads its inbox over IMAP, so a reply stops the sequence and a bounce stops emailing that address.
              Connecting checks the logins, the Sent folder and your domain's SPF, DKIM and DMARC first; a mailbox that cannot log in is not added.{' '}
              {server ? 'Its passwords are kept by the sync server (set them there), never in the shared workspace.' : 'Passwords are kept on this computer only, never in the shared workspace.'}
            </p>
          )}
          {channel === 'email' && (
            // Google Workspace and Microsoft 365 mailboxes: sign in instead of a password (OAuth 2.0).
            <OAuthSignIn hostedBy={server ? 'server' : 'desktop'} onConnected={() => { toast('The mailbox is connected.'); onClose(); }} />
          )}
          {channel === 'email' && <p className="muted">Or enter the mailbox's SMTP and IMAP settings with its password:</p>}
          {channel !== 'sandbox' && connected && (
            <label className="field">
              <span>Runs on</span>
              <select value={hostedBy} onChange={(e) => setHostedBy(e.target.value === 'server' ? 'server' : 'desktop')} aria-label="Runs on">
                <option value="desktop">This computer (sends while the app is open here)</option>
                <option value="server">The team's sync server (sends around the clock; no private or local hosts)</option>
              </select>
            </label>
          )}
          <div className="controls">
            <label className="field">
              <span>Name</span>
              <input className="input" value={name} onChange={(e) => setName(e.target.value)} placeholder="Alex Morgan" aria-label="Sender name" />
            </label>
            <label className="field">
              <span>Time zone (daily limits reset at its midnight)</span>
              <input className="input" value={timeZone} onChange={(e) => setTimeZone(e.target.value)} aria-label="Sender time zone" />
            </label>
          </div>
          {channel !== 'email' && (
            <label className="row check-row">
              <input type="checkbox" className="check" checked={premium} onChange={(e) => setPremium(e.target.checked)} />
              <span>Premium account (can send InMails)</span>
            </label>
          )}
          {channel === 'email' && (
            <div className="controls">
              <label className="field">
                <span>SMTP host</span>
                <input className="input" value={smtp.host} onChange={(e) => setSmtp({ ...smtp, host: e.target.value })} placeholder="smtp.example.com" aria-label="SMTP host" />
              </label>
              <label className="field">
                <span>Port</span>
                <input className="input" type="number" value={smtp.port} onChange={(e) => setSmtp({ ...smtp, port: e.target.value })} aria-label="SMTP port" />
              </label>
              <label className="field">
                <span>User</span>
                <input className="input" value={smtp.user} onChange={(e) => setSmtp({ ...smtp, user: e.target.value })} aria-label="SMTP user" autoComplete="off" />
              </label>
              <label className="field">
                <span>Password</span>
                <input className="input" type="password" value={smtp.password} onChange={(e) => setSmtp({ ...smtp, password: e.target.value })} aria-label="SMTP password" autoComplete="new-password" />
              </label>
              <label className="field">
                <span>From address</span>
                <input className="input" value={smtp.from} onChange={(e) => setSmtp({ ...smtp, from: e.target.value })} placeholder="Alex Morgan <alex@example.com>" aria-label="From address" />
              </label>
              <label className="row check-row">
                <input type="checkbox" className="check" checked={smtp.secure} onChange={(e) => setSmtp({ ...smtp, secure: e.target.checked })} />
                <span>TLS from the start (port 465)</span>
              </label>
              <label className="field">
                <span>DKIM selector (optional; default: your provider's)</span>
                <input className="input" value={smtp.dkimSelector} onChange={(e) => setSmtp({ ...smtp, dkimSelector: e.target.value })} placeholder="google, selector1…" aria-label="DKIM selector" />
              </label>
            </div>
          )}
          {channel === 'email' && (
            <div className="controls">
              <label className="row check-row">
                <input type="checkbox" className="check" checked={imap.enabled} onChange={(e) => setImap({ ...imap, enabled: e.target.checked })} aria-label="Read replies and bounces over IMAP" />
                <span>Read replies and bounces over IMAP</span>
              </label>
              {imap.enabled && (
                <>
                  <label className="field">
                    <span>IMAP host</span>
                    <input className="input" value={imap.host} onChange={(e) => setImap({ ...imap, host: e.target.value })} placeholder="imap.example.com" aria-label="IMAP host" />
                  </label>
                  <label className="field">
                    <span>Port</span>
                    <input className="input" type="number" value={imap.port} onChange={(e) => setImap({ ...imap, port: e.target.value, secure: e.target.value === '993' ? true : imap.secure })} aria-label="IMAP port" />
                  </label>
                  <label className="field">
                    <span>IMAP user (empty: the SMTP user)</span>
                    <input className="input" value={imap.user} onChange={(e) => setImap({ ...imap, user: e.target.value })} aria-label="IMAP user" autoComplete="off" />
                  </label>
                  <label className="field">
                    <span>IMAP password (empty: the SMTP password)</span>
                    <input className="input" type="password" value={imap.password} onChange={(e) => setImap({ ...imap, password: e.target.value })} aria-label="IMAP password" autoComplete="new-password" />
                  </label>
                  <label className="row check-row">
                    <input type="checkbox" className="check" checked={imap.secure} onChange={(e) => setImap({ ...imap, secure: e.target.checked })} />
                    <span>TLS from the start (port 993)</span>
                  </label>
                </>
              )}
            </div>
          )}
          {channel === 'http' && (
            <label className="field">
              <span>Connector URL</span>
              <input className="input" value={baseUrl} onChange={(e) => setBaseUrl(e.target.value)} aria-label="Connector URL" />
            </label>
          )}
          <fieldset className="stack" style={{ border: 0, padding: 0, margin: 0 }} data-testid="warm-up-choice">
            <legend className="muted">The account</legend>
            <label className="row check-row">
              <input type="radio" name="warm-up" checked={!warmedUp} onChange={() => setWarmedUp(false)} aria-label="New account" />
              <span>{NEW_ACCOUNT}</span>
            </label>
            <label className="row check-row">
              <input type="radio" name="warm-up" checked={warmedUp} onChange={() => setWarmedUp(true)} aria-label="Already warmed up" />
              <span>{WARMED_UP_ACCOUNT}</span>
            </label>
            {warmedUp && <div className="notice warn" data-testid="warm-up-risk">{WARMED_UP_RISK}</div>}
          </fieldset>
          <ErrorText error={action.error} />
        </form>
      )}
    </Dialog>
  );
}
