/** The last check of an email sender (sdrProfiles.create made it, sdrProfiles.verify makes a new one):
 * one line per finding, pass / warn / fail, with what to fix in plain words, and "Check again" (with
 * an optional DKIM selector, kept for the next checks). The check runs where the sender runs; a
 * server-hosted one is checked by the sync server. */
import { useState } from 'react';
import type { OpOutput } from '../../../../shared/ops/index.ts';
import { ErrorText } from '../../components/ErrorText.tsx';
import { dateTime } from '../../lib/format.ts';
import { run, useAction } from '../../lib/ops.ts';

type Sender = OpOutput<'sdrProfiles.list'>['sdrProfiles'][number];
type Check = NonNullable<Sender['lastCheck']>;
type Line = Check['lines'][number];

const CHECK_LABELS: Record<Line['check'], string> = {
  smtp: 'SMTP login',
  imap: 'IMAP login',
  sent_folder: 'Sent folder',
  spf: 'SPF',
  dkim: 'DKIM',
  dmarc: 'DMARC',
  hosts: 'Host',
  setup: 'Check',
};

const STATUS_MARKS: Record<Line['status'], string> = { pass: '✓', warn: '!', fail: '✕' };
const STATUS_WORDS: Record<Line['status'], string> = { pass: 'Passed', warn: 'Warning', fail: 'Failed' };

export function SenderCheckView({ sender }: { sender: Sender }) {
  const verify = useAction();
  // What the last "Check again" answered, shown until the sender list (updated by the same write) catches up.
  const [fresh, setFresh] = useState<Check | null>(null);
  const [selector, setSelector] = useState('');
  const stored = sender.lastCheck;
  const check = fresh && (!stored || stored.at < fresh.at) ? fresh : stored;
  const counts = { fail: 0, warn: 0, pass: 0 };
  for (const l of check?.lines ?? []) counts[l.status] += 1;

  async function again() {
    const r = await verify.act(() => run('sdrProfiles.verify', { sdrProfileId: sender.id, ...(selector.trim() ? { dkimSelector: selector.trim() } : {}) }));
    if (r) setFresh({ at: r.checkedAt, dkimSelector: r.dkimSelector, lines: r.lines });
  }

  return (
    <div className="sender-check" data-testid="sender-check">
      <div className="row">
        <strong className="grow">Mailbox check</strong>
        <span className="muted" data-testid="sender-check-summary">
          {check
            ? `${counts.fail > 0 ? `${counts.fail} to fix` : counts.warn > 0 ? `${counts.warn} warning${counts.warn === 1 ? '' : 's'}` : 'All passed'} · checked ${dateTime(check.at)}${check.dkimSelector ? ` · DKIM selector ${check.dkimSelector}` : ''}`
            : 'Not checked yet'}
        </span>
      </div>
      {check && (
        <ul className="check-lines">
          {check.lines.map((l, i) => (
            <li key={`${l.check}-${i}`} className={`check-line ${l.status}`} data-check={l.check} data-status={l.status}>
              <span className="check-mark" role="img" aria-label={STATUS_WORDS[l.status]}>{STATUS_MARKS[l.status]}</span>
              <div className="grow">
                {/* The label says what was checked; the sentence's own prefix (for lists elsewhere) would repeat it. */}
                <div><strong>{CHECK_LABELS[l.check]}</strong> {l.message.replace(/^(SMTP|IMAP|SPF|DKIM|DMARC|Sent folder): /, '')}</div>
                {l.fix && <div className="check-fix">Fix: {l.fix}</div>}
              </div>
            </li>
          ))}
        </ul>
      )}
      <div className="row">
        <label className="field inline-field">
          <span className="faint">DKIM selector (optional)</span>
          <input className="input selector-input" value={selector} onChange={(e) => setSelector(e.target.value)} placeholder={check?.dkimSelector ?? 'google, selector1…'} aria-label="DKIM selector" />
        </label>
        <button className="btn" disabled={verify.busy} onClick={() => void again()}>{verify.busy ? 'Checking…' : 'Check again'}</button>
      </div>
      <ErrorText error={verify.error} />
    </div>
  );
}
