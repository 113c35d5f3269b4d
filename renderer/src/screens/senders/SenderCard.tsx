/** One sender: status and pause/resume, daily limits against the plan maximums with today's usage,
 * and the daily search budget. A limit above the plan is lowered and the cap is said out loud. The
 * account's pace: a new account's ramp-up, or warmed up (full limits), changeable here. */
import { useState } from 'react';
import type { OpOutput } from '../../../../shared/ops/index.ts';
import { LIMIT_KEYS } from '../../../../shared/model/common.ts';
import type { LimitKey } from '../../../../shared/model/common.ts';
import { ErrorText } from '../../components/ErrorText.tsx';
import { dateTime } from '../../lib/format.ts';
import { OpError, run, useAction, useOp } from '../../lib/ops.ts';
import { useApp } from '../../state/app-store.ts';
import { OAuthSignIn } from './OAuthSignIn.tsx';
import { SenderCheckView } from './SenderCheckView.tsx';
import { WARMED_UP_RISK } from './warm-up.ts';

type Sender = OpOutput<'sdrProfiles.list'>['sdrProfiles'][number];
type LimitsResult = OpOutput<'sdrProfiles.setDailyLimits'>;

export const LIMIT_LABELS: Record<LimitKey, string> = {
  messages: 'Messages',
  inmails: 'InMails',
  connectionRequests: 'Connection requests',
  connectionRequestsWithNote: '… of which with a note',
  comments: 'Comments',
  reactions: 'Reactions',
  profileVisits: 'Profile visits',
};

const CHANNEL_LABELS: Record<string, string> = { sandbox: 'Sandbox network', email: 'Email (SMTP)', http: 'HTTP connector' };

const STATUS_WORDS: Record<string, string> = {
  available: 'Available',
  paused: 'Outreach paused',
  limited: 'Backing off',
  disconnected: 'Disconnected',
};

export function SenderCard({ sender }: { sender: Sender }) {
  const role = useApp((s) => (s.session?.state === 'open' ? s.session.member.role : 'member'));
  const toast = useApp((s) => s.toast);
  const usage = useOp('sdrProfiles.getUsage', { sdrProfileId: sender.id });
  const safety = useOp('social.getAccountLimits', { senderProfileId: sender.id });
  const account = safety.data?.accounts[0];
  const [draft, setDraft] = useState<Partial<Record<LimitKey, string>>>({});
  const [result, setResult] = useState<LimitsResult | null>(null);
  const limits = useAction();
  const pause = useAction();
  const warm = useAction();
  const [askWarm, setAskWarm] = useState(false);
  const dirty = Object.keys(draft).length > 0;
  const u = usage.data;
  // Right after a save the sender list may still hold the limits from before it: show what the save
  // stored (the same numbers the outcome sentence names) until the list catches up.
  const stale = result !== null && LIMIT_KEYS.every((k) => sender.limits[k] === result.before[k]);
  const current = (k: LimitKey): number => (stale && result ? result.after[k] : sender.limits[k]);

  async function saveLimits() {
    const asked: Partial<Record<LimitKey, number>> = {};
    for (const k of LIMIT_KEYS) {
      const v = draft[k];
      if (v !== undefined && v.trim() !== '') asked[k] = Math.max(0, Math.floor(Number(v)));
    }
    const r = await limits.act(async () => {
      try {
        return await run('sdrProfiles.setDailyLimits', { sdrProfileId: sender.id, limits: asked });
      } catch (e) {
        if (e instanceof OpError && e.code === 'PERMISSION_DENIED') {
          throw new Error(`${e.message} You can lower limits; ask an owner or admin to raise them.`, { cause: e });
        }
        throw e;
      }
    });
    if (r) {
      setResult(r);
      setDraft({});
    }
  }

  return (
    <section className="card-box sender-card" aria-label={`Sender ${sender.name}`} data-sender-id={sender.id}>
      <div className="row">
        <div className="avatar-sm" aria-hidden="true">{sender.name.slice(0, 1).toUpperCase()}</div>
        <div className="grow">
          <h2>{sender.name}</h2>
          <div className="muted">
            {CHANNEL_LABELS[sender.channel] ?? sender.channel} · {sender.timeZone}
            {sender.premium ? ' · Premium' : ''}
            {sender.hostedBy === 'server' ? ' · Runs on the sync server' : ''}
          </div>
        </div>
        <span className={`sender-status ${sender.status}`} data-testid="sender-status">{STATUS_WORDS[sender.status] ?? sender.status}</span>
        <button
          className="btn"
          disabled={pause.busy}
          onClick={() => void pause.act(() => run('sdrProfiles.pauseOutreach', { sdrProfileId: sender.id, paused: !sender.outreachPaused }))}
        >
          {sender.outreachPaused ? 'Resume outreach' : 'Pause outreach'}
        </button>
      </div>
      {sender.outreachPaused && <div className="notice">Outreach is paused on every campaign: its leads stay assigned and wait until you resume.</div>}
      {sender.status === 'limited' && (
        <div className="notice warn">The network asked this account to slow down{sender.statusReason ? ` (${sender.statusReason})` : ''}; it resumes {sender.backoffUntil ? `at ${dateTime(sender.backoffUntil)}` : 'soon'}.</div>
      )}
      {sender.status === 'disconnected' && (
        <ErrorText
          error={
            sender.hostedBy === 'server'
              ? // The reason is the sync server's (a refused host, or a login it refused) and says what to do.
                `Disconnected${sender.statusReason ? `: ${sender.statusReason.replace(/\.?$/, '.')}` : '. Set its credentials again on the sync server.'}`
              : `The account is disconnected${sender.statusReason ? `: ${sender.statusReason}` : ''}. Reconnect it on the computer that hosts it.`
          }
        />
      )}
      {sender.status === 'disconnected' && sender.signIn && (
        // Signing in again as the same mailbox reconnects this sender (same address, same campaigns).
        <details className="stack" data-testid="reconnect">
          <summary className="btn">Reconnect {sender.signIn.email}</summary>
          <OAuthSignIn target={{ email: sender.signIn.email, provider: sender.signIn.provider, issuer: sender.signIn.issuer }} hostedBy={sender.hostedBy} onConnected={() => toast(`${sender.signIn?.email ?? sender.name} is reconnected.`)} />
        </details>
      )}
      <ErrorText error={pause.error} />
      {/* What to fix before (and since) the first send comes first on a mailbox's card. */}
      {sender.channel === 'email' && <SenderCheckView sender={sender} />}
      {account?.rampUp.active && (
        <div className="notice" data-testid="ramp-up">
          New account ramping up: day {account.rampUp.day} of {account.rampUp.of}, sending at {account.rampUp.percent}% of its limits{account.rampUp.endsAt ? ` until ${dateTime(account.rampUp.endsAt)}` : ''}.{' '}
          {!askWarm && <button className="btn" onClick={() => setAskWarm(true)}>The account is already warmed up…</button>}
          {askWarm && (
            <div className="notice warn" data-testid="warm-up-risk">
              {WARMED_UP_RISK}{' '}
              <button className="btn primary" disabled={warm.busy} onClick={() => void warm.act(async () => { await run('sdrProfiles.setWarmedUp', { sdrProfileId: sender.id, warmedUp: true }); setAskWarm(false); })}>Send at full limits</button>{' '}
              <button className="btn" onClick={() => setAskWarm(false)}>Keep ramping up</button>
            </div>
          )}
        </div>
      )}
      {account?.rampUp.warmedUp && (
        <div className="notice" data-testid="warmed-up">
          Warmed-up account: sends at its full daily limits, no ramp-up.{' '}
          <button className="btn" disabled={warm.busy} onClick={() => void warm.act(() => run('sdrProfiles.setWarmedUp', { sdrProfileId: sender.id, warmedUp: false }))}>It is a new account: ramp up</button>
        </div>
      )}
      <ErrorText error={warm.error} />
      {account && (
        <div className="row" data-testid="weekly-cap">
          <span>Connection requests this week (any 7 days)</span>
          <span className="muted">{account.weekly.connectionRequests.used} of {account.weekly.connectionRequests.limit}</span>
          <Meter used={account.weekly.connectionRequests.used} limit={account.weekly.connectionRequests.limit} />
        </div>
      )}

      <table className="plain limits" data-testid="limits">
        <thead>
          <tr>
            <th>Daily limit</th>
            <th className="num">Used today</th>
            <th className="num">Remaining</th>
            <th>Limit</th>
            <th className="num">Plan maximum</th>
          </tr>
        </thead>
        <tbody>
          {LIMIT_KEYS.map((k) => {
            const value = draft[k] ?? String(current(k));
            const over = Number(value) > sender.planMax[k];
            const used = u?.used[k] ?? 0;
            return (
              <tr key={k} data-limit={k}>
                <td>{LIMIT_LABELS[k]}</td>
                <td className="num">{u ? used : '…'}</td>
                <td className="num">{u ? u.remaining[k] : '…'}</td>
                <td>
                  <input
                    className={`input limit-input${over ? ' over' : ''}`}
                    type="number"
                    min={0}
                    value={value}
                    onChange={(e) => setDraft({ ...draft, [k]: e.target.value })}
                    aria-label={`${LIMIT_LABELS[k]} daily limit`}
                  />
                  {over && <span className="faint cap-hint">above the plan: it will be lowered to {sender.planMax[k]}</span>}
                  <Meter used={used} limit={current(k)} />
                </td>
                <td className="num">{sender.planMax[k]}</td>
              </tr>
            );
          })}
          <tr data-limit="emails">
            <td>Emails</td>
            <td className="num">{u ? u.used.emails : '…'}</td>
            <td className="muted" colSpan={3}>counted against the messages limit</td>
          </tr>
        </tbody>
      </table>
      <div className="row">
        <button className="btn primary" disabled={!dirty || limits.busy} onClick={() => void saveLimits()}>{limits.busy ? 'Saving…' : 'Save limits'}</button>
        <button className="btn" disabled={!dirty || limits.busy} onClick={() => { setDraft({}); limits.clear(); }}>Undo</button>
        {role === 'member' && <span className="faint">Raising a limit needs an owner or admin; you can lower them.</span>}
      </div>
      <ErrorText error={limits.error} />
      {result && <LimitsOutcome result={result} />}

      <div className="search-budget" data-testid="search-budget">
        <div className="row">
          <strong className="grow">Search budget today</strong>
          <span className="muted">{u ? `${u.used.searches} used · ${u.remaining.searches} left of ${u.limits.searches}` : '…'}</span>
        </div>
        {u && <Meter used={u.used.searches} limit={u.limits.searches} />}
        <span className="faint">Reading a post's commenters and reactors spends searches; when none are left, reads stop early until tomorrow ({sender.timeZone} midnight).</span>
      </div>
      <ErrorText error={usage.error?.message} />
    </section>
  );
}

function Meter({ used, limit }: { used: number; limit: number }) {
  const pct = limit <= 0 ? 100 : Math.min(100, (used / limit) * 100);
  return (
    <div className={`meter${used >= limit ? ' full' : ''}`} aria-hidden="true">
      <div style={{ width: `${pct}%` }} />
    </div>
  );
}

function LimitsOutcome({ result }: { result: LimitsResult }) {
  return (
    <div className="stack" data-testid="limits-outcome">
      {result.changes.length === 0 && result.cappedAtPlan.length === 0 && <div className="notice">Nothing changed.</div>}
      {result.changes.length > 0 && (
        <div className="notice ok">
          Saved: {result.changes.map((c) => `${LIMIT_LABELS[c.limit as LimitKey] ?? c.limit} ${c.before} → ${c.after}`).join(', ')}.
        </div>
      )}
      {result.cappedAtPlan.length > 0 && (
        <div className="notice warn" data-testid="capped">
          {result.cappedAtPlan.map((c) => (
            <div key={c.limit}>
              <strong>{LIMIT_LABELS[c.limit as LimitKey] ?? c.limit}</strong>: you asked for {c.requested}, but the account's plan allows at most {c.planMax} a day, so the limit is {c.planMax}.
            </div>
          ))}
        </div>
      )}
    </div>
  );
}
