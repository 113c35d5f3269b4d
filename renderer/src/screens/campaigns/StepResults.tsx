/** A campaign's results step by step (and per message variant): what each step sent, to how many
 * people, the connections it got accepted and the replies it got (a reply counts for the last step
 * sent before it) and the positive ones among them (replies labelled interested in the inbox, or
 * suggested so), from campaigns.getStepMetrics. */
import { Fragment } from 'react';
import { ErrorText } from '../../components/ErrorText.tsx';
import { useOp } from '../../lib/ops.ts';
import { percent } from './format.ts';

/** Steps that act on no one: a sentence instead of zeros. */
const QUIET: Record<string, string> = { CONDITION: 'Chooses the path; sends nothing.', WAIT: 'Waits; sends nothing.' };

export function StepResults({ campaignId }: { campaignId: string }) {
  const results = useOp('campaigns.getStepMetrics', { campaignId });
  const r = results.data;
  return (
    <section className="card-box" aria-label="Results by step" data-testid="step-results">
      <div className="row">
        <h3 className="grow">Results by step</h3>
        <span className="faint">A reply counts for the last step sent before it.</span>
      </div>
      <ErrorText error={results.error?.message} />
      {!r && results.loading && <span className="muted">Loading the results…</span>}
      {r && r.steps.length === 0 && <span className="muted">The sequence has no steps yet.</span>}
      {r && r.steps.length > 0 && (
        <table className="plain step-results">
          <thead>
            <tr>
              <th scope="col">Step</th>
              <th scope="col" className="num">Sent</th>
              <th scope="col" className="num">People</th>
              <th scope="col" className="num">Accepted</th>
              <th scope="col" className="num">Replies</th>
              <th scope="col" className="num">Reply rate</th>
              <th scope="col" className="num" title="Replies labelled interested, and their share of the replies">Positive</th>
            </tr>
          </thead>
          <tbody>
            {r.steps.map((s) => (
              <Fragment key={s.stepId}>
                <tr data-step={s.number} className={QUIET[s.type] ? 'quiet' : undefined}>
                  <th scope="row" style={{ paddingLeft: `${0.5 + s.depth * 1.25}rem` }}>
                    {s.number}. {s.label}
                  </th>
                  {QUIET[s.type] ? (
                    <td colSpan={6} className="faint">{QUIET[s.type]}</td>
                  ) : (
                    <>
                      <td className="num" data-col="sent">{s.sent.toLocaleString()}</td>
                      <td className="num" data-col="leads">{s.leads.toLocaleString()}</td>
                      <td className="num" data-col="accepted">{s.type === 'CONNECTION_REQUEST' ? s.accepted.toLocaleString() : '–'}</td>
                      <td className="num" data-col="replies">{s.replies.toLocaleString()}</td>
                      <td className="num" data-col="replyRate">{percent(s.replyRate)}</td>
                      <td className="num" data-col="positive">{s.replies > 0 ? `${s.positiveReplies.toLocaleString()} · ${percent(s.positiveReplyRate)}` : '–'}</td>
                    </>
                  )}
                </tr>
                {s.variants.map((v) => (
                  <tr key={v.variantId} className="variant" data-variant={v.name}>
                    <th scope="row" className="faint" style={{ paddingLeft: `${1.5 + s.depth * 1.25}rem` }} title={v.name}>
                      Variant {v.name}
                    </th>
                    <td className="num">{v.sent.toLocaleString()}</td>
                    <td className="num">{v.leads.toLocaleString()}</td>
                    <td className="num">{s.type === 'CONNECTION_REQUEST' ? v.accepted.toLocaleString() : '–'}</td>
                    <td className="num">{v.replies.toLocaleString()}</td>
                    <td className="num">{percent(v.replyRate)}</td>
                    <td className="num">{v.replies > 0 ? `${v.positiveReplies.toLocaleString()} · ${percent(v.positiveReplyRate)}` : '–'}</td>
                  </tr>
                ))}
              </Fragment>
            ))}
          </tbody>
        </table>
      )}
      {r && (r.unattributed.replies > 0 || r.unattributed.accepted > 0) && (
        <p className="faint" data-testid="unattributed">
          Not counted for a step (nothing of this campaign had been sent to them before):{' '}
          {[r.unattributed.replies > 0 ? `${r.unattributed.replies} repl${r.unattributed.replies === 1 ? 'y' : 'ies'}` : '', r.unattributed.accepted > 0 ? `${r.unattributed.accepted} accepted` : '']
            .filter(Boolean)
            .join(', ')}
          .
        </p>
      )}
    </section>
  );
}
