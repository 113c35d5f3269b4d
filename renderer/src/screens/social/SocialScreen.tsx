/** People from a post: paste a post's address, pick the sender whose account reads it, see who
 * commented and reacted with what is left of the day's search budget (and why a read stopped early),
 * then import the people chosen as leads of a lead list. */
import { useEffect, useMemo, useState } from 'react';
import type { OpOutput } from '../../../../shared/ops/index.ts';
import { ErrorText } from '../../components/ErrorText.tsx';
import { shortDate } from '../../lib/format.ts';
import { run, useAction, useOp } from '../../lib/ops.ts';
import { useSenders } from '../../lib/workspace-data.ts';
import { useApp } from '../../state/app-store.ts';
import './social.css';

type Engagement = OpOutput<'social.getPostEngagement'>;
type Imported = OpOutput<'social.importPostLeads'>;
type Person = Engagement['comments'][number] & { engagement: 'comment' | 'reaction' };

/** Commenters first, then reactors, each profile once (like the import). */
function people(r: Engagement): Person[] {
  const seen = new Set<string>();
  const out: Person[] = [];
  for (const [items, engagement] of [[r.comments, 'comment'], [r.reactions, 'reaction']] as const) {
    for (const item of items) {
      const key = item.authorDetails.profileUrl || `${item.author}|${engagement}`;
      if (seen.has(key)) continue;
      seen.add(key);
      out.push({ ...item, engagement });
    }
  }
  return out;
}

/** Why a read did not see everyone, in words; empty when it did. */
export function earlyStopReasons(r: Engagement, senderName: string, timeZone: string): string[] {
  const out: string[] = [];
  const resets = `The budget resets at midnight ${timeZone} time, when ${r.dailyUsage.day} ends there.`;
  // A read that could not even start: no search left, so not even the number of comments is known.
  if (r.stoppedEarlyComments && r.totalComments === 0 && r.comments.length === 0) {
    return [`Nothing was read: ${senderName}'s daily search budget (${r.dailyUsage.limit} searches) is already used up. ${resets}`];
  }
  if (r.stoppedEarlyComments) out.push(`Comments: ${r.comments.length} of ${r.totalComments} read. The daily search budget ran out while reading them (each search reads one page of people).`);
  if (r.reactionsSkippedDueToDailyLimit) out.push(`Reactions were not read at all (reactionsSkippedDueToDailyLimit): the comments used the last of the daily search budget. ${resets}`);
  else if (r.stoppedEarlyReactions) out.push(`Reactions: ${r.reactions.length} of ${r.totalReactions} read. The daily search budget ran out while reading them. ${resets}`);
  return out;
}

export function SocialScreen() {
  const toast = useApp((s) => s.toast);
  const openLead = useApp((s) => s.openLead);
  const { senders } = useSenders();
  const accounts = useOp('social.getAccountLimits', {});
  const groups = useOp('leadGroups.getAll', {});
  const readers = senders.filter((s) => s.capabilities.includes('post_reading'));
  const [senderId, setSenderId] = useState('');
  const [url, setUrl] = useState('');
  const [result, setResult] = useState<{ url: string; senderId: string; r: Engagement } | null>(null);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [groupId, setGroupId] = useState('');
  const [imported, setImported] = useState<Imported | null>(null);
  const reading = useAction();
  const importing = useAction();

  useEffect(() => {
    if (!senderId && readers[0]) setSenderId(readers[0].id);
  }, [readers, senderId]);
  useEffect(() => {
    const first = groups.data?.leadGroups[0];
    if (!groupId && first) setGroupId(first.id);
  }, [groups.data, groupId]);

  const account = accounts.data?.accounts.find((a) => a.senderProfileId === senderId);
  const sender = senders.find((s) => s.id === (result?.senderId ?? senderId));
  const found = useMemo(() => (result ? people(result.r) : []), [result]);
  const importable = found.filter((p) => p.authorDetails.profileUrl);

  async function read() {
    const r = await reading.act(() => run('social.getPostEngagement', { senderProfileId: senderId, postUrl: url.trim() }));
    if (!r) return;
    setResult({ url: url.trim(), senderId, r });
    setImported(null);
    setSelected(new Set(people(r).map((p) => p.authorDetails.profileUrl).filter(Boolean)));
  }

  async function doImport() {
    if (!result) return;
    const r = await importing.act(() =>
      run('social.importPostLeads', { senderProfileId: result.senderId, postUrl: result.url, leadGroupId: groupId, profileUrls: [...selected] }),
    );
    if (!r) return;
    setImported(r);
    toast(`Imported ${r.created} new lead${r.created === 1 ? '' : 's'}${r.duplicates ? `; ${r.duplicates} already in the CRM were linked` : ''}.`);
  }

  const toggle = (profileUrl: string) => {
    const next = new Set(selected);
    if (next.has(profileUrl)) next.delete(profileUrl);
    else next.add(profileUrl);
    setSelected(next);
  };

  const reasons = result ? earlyStopReasons(result.r, sender?.name ?? 'the sender', sender?.timeZone ?? 'the sender’s') : [];
  return (
    <>
      <div className="screen-header">
        <h1>People from a post</h1>
        <span className="sub">Import who commented on or reacted to a post</span>
      </div>
      <div className="screen-body social">
        <section className="card-box">
          <form className="social-form" onSubmit={(e) => { e.preventDefault(); void read(); }}>
            <label className="field grow">
              <span>Post address</span>
              <input className="input" type="url" value={url} onChange={(e) => setUrl(e.target.value)} placeholder="https://social.example/posts/…" aria-label="Post URL" />
            </label>
            <label className="field">
              <span>Read with</span>
              <select value={senderId} onChange={(e) => setSenderId(e.target.value)} aria-label="Sender reading the post">
                {readers.length === 0 && <option value="">No sender can read posts</option>}
                {readers.map((s) => (
                  <option key={s.id} value={s.id}>{s.name}</option>
                ))}
              </select>
            </label>
            <button className="btn primary" type="submit" disabled={!senderId || !url.trim() || reading.busy}>{reading.busy ? 'Reading…' : 'Read post'}</button>
          </form>
          {account && (
            <div className="budget" data-testid="search-budget">
              <div>
                <strong>{account.search.remaining}</strong> of {account.search.limit} searches left today for {account.name}
              </div>
              <div className={`meter${account.search.remaining === 0 ? ' full' : ''}`} aria-hidden="true">
                <div style={{ width: `${account.search.limit ? (account.search.used / account.search.limit) * 100 : 100}%` }} />
              </div>
              <span className="faint">Each search reads one page of commenters or reactors; comments are read first, then reactions. Importing reads the post again.</span>
            </div>
          )}
          {readers.length === 0 && senders.length > 0 && <div className="notice warn">None of your senders can read posts (email senders cannot). Connect a social account on the Senders screen.</div>}
          <div data-testid="read-error"><ErrorText error={reading.error} /></div>
          <ErrorText error={accounts.error?.message} />
        </section>

        {result && (
          <section className="card-box" data-testid="post-result">
            <div className="row wrap">
              <span className="grow">
                <strong>{result.r.comments.length}</strong> of {result.r.totalComments} comments and <strong>{result.r.reactions.length}</strong> of {result.r.totalReactions} reactions read
              </span>
              <span className="muted" data-testid="budget-after">
                Searches left today: <strong>{result.r.dailyUsage.remainingSearches}</strong> of {result.r.dailyUsage.limit} ({result.r.dailyUsageAfterComments.remainingSearches} were left after the comments)
              </span>
            </div>
            {reasons.length > 0 ? (
              <div className="notice warn" data-testid="early-stop">
                {reasons.map((r) => (
                  <div key={r}>{r}</div>
                ))}
              </div>
            ) : (
              <div className="notice ok">Everyone on the post was read.</div>
            )}
            {found.length > 0 && (
              <>
                <div className="row">
                  <label className="row check-row grow">
                    <input
                      type="checkbox"
                      className="check"
                      checked={importable.length > 0 && importable.every((p) => selected.has(p.authorDetails.profileUrl))}
                      onChange={(e) => setSelected(e.target.checked ? new Set(importable.map((p) => p.authorDetails.profileUrl)) : new Set())}
                      aria-label="Select everyone"
                    />
                    <span>{selected.size} of {found.length} selected</span>
                  </label>
                  <label className="row">
                    <span className="muted">Into lead list</span>
                    <select value={groupId} onChange={(e) => setGroupId(e.target.value)} aria-label="Lead list to import into">
                      {(groups.data?.leadGroups ?? []).map((g) => (
                        <option key={g.id} value={g.id}>{g.name}</option>
                      ))}
                    </select>
                  </label>
                  <button className="btn primary" disabled={selected.size === 0 || !groupId || importing.busy} onClick={() => void doImport()}>
                    {importing.busy ? 'Importing…' : `Import ${selected.size} as leads`}
                  </button>
                </div>
                <div data-testid="import-error"><ErrorText error={importing.error} /></div>
                {imported && <ImportOutcome result={imported} onOpen={openLead} />}
                <table className="plain people" data-testid="people">
                  <thead>
                    <tr>
                      <th />
                      <th>Person</th>
                      <th>Headline</th>
                      <th>Engagement</th>
                      <th>When</th>
                    </tr>
                  </thead>
                  <tbody>
                    {found.map((p) => (
                      <tr key={`${p.engagement}:${p.authorDetails.profileUrl || p.author}`} data-engagement={p.engagement}>
                        <td>
                          <input type="checkbox" className="check" disabled={!p.authorDetails.profileUrl} checked={selected.has(p.authorDetails.profileUrl)} onChange={() => toggle(p.authorDetails.profileUrl)} aria-label={`Select ${p.author}`} />
                        </td>
                        <td>
                          <strong>{p.author}</strong>
                          {p.authorDetails.profileUrl && <div className="faint mono ellipsis">{p.authorDetails.profileUrl}</div>}
                        </td>
                        <td className="muted">{p.authorDetails.headline}</td>
                        <td>
                          <span className={`engagement ${p.engagement}`}>{p.engagement === 'comment' ? 'Commented' : 'Reacted'}</span>
                          {p.text && <div className="quote">{p.engagement === 'comment' ? `“${p.text}”` : p.text}</div>}
                        </td>
                        <td className="muted">{shortDate(p.date)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </>
            )}
          </section>
        )}
      </div>
    </>
  );
}

function ImportOutcome({ result, onOpen }: { result: Imported; onOpen: (id: string) => void }) {
  return (
    <div className="stack" data-testid="import-outcome">
      <div className="notice ok">
        {result.created} new lead{result.created === 1 ? '' : 's'} created{result.duplicates > 0 ? `; ${result.duplicates} already in the CRM (linked to the list, not duplicated)` : ''}.
        {result.leadIds[0] && (
          <>
            {' '}
            <a href="#" onClick={(e) => { e.preventDefault(); onOpen(result.leadIds[0] ?? ''); }}>Open the first one</a>
          </>
        )}
      </div>
      {result.notFound.length > 0 && (
        <div className="notice warn" data-testid="import-not-found">
          {result.notFound.length} selected {result.notFound.length === 1 ? 'person was' : 'people were'} not imported: importing reads the post again, and {result.stoppedEarly ? 'the daily search budget ran out before reaching them' : 'they are no longer on the post'}.
          {' '}Searches left today: {result.dailyUsage.remainingSearches} of {result.dailyUsage.limit}.
        </div>
      )}
    </div>
  );
}
