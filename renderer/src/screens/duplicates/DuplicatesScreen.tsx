/** Duplicates: leads that are one person (same profile URL or email) and possible duplicates (same
 * name at the same company), a side-by-side preview of a merge (the merge's dry run) and Merge,
 * undoable from the toast (Undo or Ctrl/Cmd+Z) while it shows. Keys: j/k move through the groups,
 * s swaps which lead is kept, m merges. */
import { useCallback, useEffect, useMemo, useState } from 'react';
import type { OpOutput } from '../../../../shared/ops/index.ts';
import { ErrorText } from '../../components/ErrorText.tsx';
import { errorText, run, useOp } from '../../lib/ops.ts';
import { offerUndo } from '../../lib/undo.ts';
import { useStages, useTags } from '../../lib/workspace-data.ts';
import { inTextField, useWindowKeydown } from '../../lib/window-keys.ts';
import { useApp } from '../../state/app-store.ts';

type Kind = 'profile' | 'email' | 'nameCompany';
type Page = OpOutput<'campaigns.leads.duplicates'>;
type Group = Page['groups'][number];
type Preview = OpOutput<'campaigns.leads.merge'>;

const KIND_LABEL: Record<Kind, string> = { profile: 'Same profile URL', email: 'Same email', nameCompany: 'Possible: same name and company' };
const FILTERS: { id: Kind | 'all'; label: string }[] = [
  { id: 'all', label: 'All' },
  { id: 'profile', label: 'Same profile' },
  { id: 'email', label: 'Same email' },
  { id: 'nameCompany', label: 'Possible duplicates' },
];

/** The rows of the side-by-side table: a label and how to read the value from a lead of the answer. */
const ROWS: { label: string; field: keyof Preview['lead'] }[] = [
  { label: 'First name', field: 'firstName' },
  { label: 'Last name', field: 'lastName' },
  { label: 'Email', field: 'email' },
  { label: 'Company', field: 'company' },
  { label: 'Job title', field: 'jobTitle' },
  { label: 'Location', field: 'location' },
  { label: 'Phone', field: 'phone' },
  { label: 'Profile URL', field: 'socialUrl' },
];

const plural = (n: number, one: string, many = `${one}s`): string => `${n.toLocaleString()} ${n === 1 ? one : many}`;
const leadLabel = (l: { fullName: string; email: string; firstName: string; lastName: string }): string => l.fullName || [l.firstName, l.lastName].filter(Boolean).join(' ') || l.email || 'Unnamed lead';

export function DuplicatesScreen() {
  const toast = useApp((s) => s.toast);
  const openLead = useApp((s) => s.openLead);
  const [kind, setKind] = useState<Kind | 'all'>('all');
  const input = useMemo(() => (kind === 'all' ? { limit: 50 } : { kind, limit: 50 }), [kind]);
  // The first page is live: a merge here or on another desktop changes it.
  const live = useOp('campaigns.leads.duplicates', input);
  const [more, setMore] = useState<{ groups: Group[]; cursor: string | null } | null>(null);
  useEffect(() => setMore(null), [live.data]);
  const groups = useMemo(() => [...(live.data?.groups ?? []), ...(more?.groups ?? [])], [live.data, more]);
  const nextCursor = more ? more.cursor : (live.data?.nextCursor ?? null);
  const [index, setIndex] = useState(0);
  const group = groups[Math.min(index, Math.max(0, groups.length - 1))];
  /** Which of the group's leads is kept and which is merged into it (oldest kept by default). */
  const [pair, setPair] = useState<{ survivorId: string; mergedId: string } | null>(null);
  useEffect(() => {
    const [a, b] = group?.leads ?? [];
    setPair(a && b ? { survivorId: a.id, mergedId: b.id } : null);
  }, [group]);
  const [preview, setPreview] = useState<Preview | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    setPreview(null);
    setError(null);
    if (!pair) return;
    let stale = false;
    run('campaigns.leads.merge', { ...pair, dryRun: true }).then(
      (p) => !stale && setPreview(p),
      (e: unknown) => !stale && setError(errorText(e)),
    );
    return () => {
      stale = true;
    };
  }, [pair]);

  async function loadMore() {
    if (!nextCursor) return;
    try {
      const page = await run('campaigns.leads.duplicates', { ...input, cursor: nextCursor });
      setMore({ groups: [...(more?.groups ?? []), ...page.groups], cursor: page.nextCursor });
    } catch (e) {
      setError(errorText(e));
    }
  }

  const swap = useCallback(() => setPair((p) => (p ? { survivorId: p.mergedId, mergedId: p.survivorId } : p)), []);

  const merge = useCallback(async () => {
    if (!pair || busy) return;
    setBusy(true);
    setError(null);
    try {
      const done = await run('campaigns.leads.merge', { ...pair, dryRun: false });
      const name = leadLabel(done.mergedBefore);
      const m = done.moved;
      offerUndo(
        `Merged ${name} into ${leadLabel(done.lead)}: ${[plural(m.notes + m.tasks + m.events, 'timeline entry', 'timeline entries'), plural(m.messages, 'message'), plural(m.enrollments, 'enrollment')].join(', ')} moved.`,
        async () => {
          const back = await run('campaigns.leads.unmerge', { survivorId: done.survivorId, mergedId: done.mergedId, undo: done.undo });
          const moved = back.movedBack.activities + back.movedBack.messages + back.movedBack.enrollments;
          return `Undone: ${name} is a lead of its own again, with ${plural(moved, 'note, message or enrollment', 'notes, messages and enrollments')} moved back.${back.leftAlone > 0 ? ` ${plural(back.leftAlone, 'item')} changed since the merge and stayed with the kept lead.` : ''}${back.keptChanges > 0 ? ` ${plural(back.keptChanges, 'field')} edited since the merge kept the newer value.` : ''}`;
        },
      );
    } catch (e) {
      setError(errorText(e));
      toast(`Could not merge: ${errorText(e)}`, 'error');
    } finally {
      setBusy(false);
    }
  }, [pair, busy, toast]);

  // j/k: previous/next group; s: swap which lead is kept; m: merge. Not while typing or in a dialog.
  useWindowKeydown((e) => {
    if (e.ctrlKey || e.metaKey || e.altKey || inTextField(e.target)) return;
    if (document.querySelector('[role="dialog"]')) return;
    if (e.key === 'j') setIndex((i) => Math.min(i + 1, Math.max(0, groups.length - 1)));
    else if (e.key === 'k') setIndex((i) => Math.max(0, i - 1));
    else if (e.key === 's') swap();
    else if (e.key === 'm') void merge();
  });

  return (
    <>
      <div className="screen-header">
        <h1>Duplicates</h1>
        <span className="sub" data-testid="duplicates-count">
          {live.data === undefined ? 'Looking…' : `${groups.length.toLocaleString()}${nextCursor ? '+' : ''} group${groups.length === 1 ? '' : 's'}`}
        </span>
        <div className="grow" />
        <div role="group" aria-label="Which duplicates">
          {FILTERS.map((f) => (
            <button key={f.id} className={`btn small${kind === f.id ? ' primary' : ''}`} aria-pressed={kind === f.id} onClick={() => { setKind(f.id); setIndex(0); }}>{f.label}</button>
          ))}
        </div>
      </div>
      <div className="screen-body" style={{ display: 'grid', gridTemplateColumns: 'minmax(240px, 1fr) 2fr', gap: 16, alignItems: 'start' }}>
        <div className="list" data-testid="duplicate-groups">
          {live.error && <div className="list-empty"><ErrorText error={live.error.message} /></div>}
          {live.data && groups.length === 0 && <div className="list-empty">No duplicates. Leads with the same profile URL or email, or the same name at the same company, show here.</div>}
          {groups.map((g, i) => (
            <div
              key={`${g.kind}/${g.key}`}
              className="list-row"
              role="button"
              tabIndex={0}
              aria-current={g === group ? 'true' : undefined}
              data-group-kind={g.kind}
              style={g === group ? { background: '#eef2ff' } : undefined}
              onClick={() => setIndex(i)}
              onKeyDown={(e) => e.key === 'Enter' && setIndex(i)}
            >
              <div className="grow">
                <strong>{g.leads.map(leadLabel).join(' · ')}</strong>
                <div className="muted">{KIND_LABEL[g.kind]}{g.leads.length > 2 ? ` · ${g.leads.length} leads` : ''}</div>
              </div>
              <span className={`pill${g.certain ? '' : ' muted'}`}>{g.certain ? 'same person' : 'possible'}</span>
            </div>
          ))}
          {nextCursor && <div className="list-row"><button className="btn small" onClick={() => void loadMore()}>Show more</button></div>}
        </div>
        <div data-testid="merge-preview">
          {group && pair && <PairPicker group={group} pair={pair} onPair={setPair} />}
          <ErrorText error={error} />
          {preview && <Side preview={preview} onOpen={openLead} />}
          {group && (
            <div style={{ display: 'flex', gap: 8, marginTop: 12 }}>
              <button className="btn" onClick={swap} title="Keep the other lead (s)">Swap</button>
              <button className="btn primary" onClick={() => void merge()} disabled={!preview || busy} title="Merge (m)" data-testid="merge-button">
                {busy ? 'Merging…' : preview ? `Merge into ${leadLabel(preview.survivorBefore)}` : 'Merge'}
              </button>
            </div>
          )}
          {!group && live.data && <p className="muted">Pick a group to see what a merge would do.</p>}
        </div>
      </div>
    </>
  );
}

/** For a group of three or more: which two leads to merge. */
function PairPicker({ group, pair, onPair }: { group: Group; pair: { survivorId: string; mergedId: string }; onPair: (p: { survivorId: string; mergedId: string }) => void }) {
  if (group.leads.length <= 2) return null;
  return (
    <div style={{ display: 'flex', gap: 8, marginBottom: 10, alignItems: 'center' }}>
      <label>Keep <select value={pair.survivorId} onChange={(e) => onPair({ survivorId: e.target.value, mergedId: pair.mergedId === e.target.value ? pair.survivorId : pair.mergedId })}>
        {group.leads.map((l) => <option key={l.id} value={l.id}>{leadLabel(l)} ({l.email || l.company || l.id.slice(0, 8)})</option>)}
      </select></label>
      <label>merge <select value={pair.mergedId} onChange={(e) => onPair({ mergedId: e.target.value, survivorId: pair.survivorId === e.target.value ? pair.mergedId : pair.survivorId })}>
        {group.leads.map((l) => <option key={l.id} value={l.id}>{leadLabel(l)} ({l.email || l.company || l.id.slice(0, 8)})</option>)}
      </select></label>
    </div>
  );
}

/** The side-by-side preview: each lead as it is and the lead after the merge, then what moves. */
function Side({ preview, onOpen }: { preview: Preview; onOpen: (id: string) => void }) {
  const stages = useStages();
  const tags = useTags();
  const s = preview.survivorBefore;
  const m = preview.mergedBefore;
  const r = preview.lead;
  const stageName = (id: string | null) => (id ? (stages.byId.get(id)?.name ?? '—') : 'No stage');
  const tagName = (id: string | null) => (id ? (tags.byId.get(id)?.name ?? '—') : 'No tag');
  const cell = (v: string, won: boolean) => <td style={{ padding: '4px 8px', fontWeight: won ? 600 : undefined, color: v ? undefined : 'var(--muted)' }}>{v || '—'}</td>;
  const rows: { label: string; s: string; m: string; r: string }[] = [
    ...ROWS.map(({ label, field }) => ({ label, s: String(s[field] ?? ''), m: String(m[field] ?? ''), r: String(r[field] ?? '') })),
    { label: 'Stage', s: stageName(s.pipelineStageId), m: stageName(m.pipelineStageId), r: stageName(r.pipelineStageId) },
    { label: 'Tag', s: tagName(s.tagId), m: tagName(m.tagId), r: tagName(r.tagId) },
    { label: 'Lead lists', s: String(s.groupIds.length), m: String(m.groupIds.length), r: String(r.groupIds.length) },
    { label: 'Do not contact', s: s.doNotContact ? 'yes' : 'no', m: m.doNotContact ? 'yes' : 'no', r: r.doNotContact ? 'yes' : 'no' },
    { label: 'Unsubscribed', s: s.unsubscribedAt ? 'yes' : 'no', m: m.unsubscribedAt ? 'yes' : 'no', r: r.unsubscribedAt ? 'yes' : 'no' },
  ];
  const mv = preview.moved;
  const stopped = preview.enrollments.filter((e) => e.statusAfter !== e.status);
  return (
    <div className="list" style={{ padding: 12 }}>
      <table style={{ width: '100%', borderCollapse: 'collapse', fontSize: 13 }} data-testid="merge-side-by-side">
        <thead>
          <tr style={{ textAlign: 'left' }}>
            <th style={{ padding: '4px 8px' }} />
            <th style={{ padding: '4px 8px' }}><a href="#" onClick={(e) => { e.preventDefault(); onOpen(s.id); }}>Kept: {leadLabel(s)}</a></th>
            <th style={{ padding: '4px 8px' }}><a href="#" onClick={(e) => { e.preventDefault(); onOpen(m.id); }}>Merged: {leadLabel(m)}</a></th>
            <th style={{ padding: '4px 8px' }}>After the merge</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={row.label} style={{ borderTop: '1px solid #f1f2f4' }}>
              <td style={{ padding: '4px 8px' }} className="muted">{row.label}</td>
              {cell(row.s, row.s === row.r && row.s !== '')}
              {cell(row.m, row.m === row.r && row.m !== row.s)}
              {cell(row.r, false)}
            </tr>
          ))}
        </tbody>
      </table>
      <p style={{ margin: '10px 8px 0' }} data-testid="merge-moves">
        Moves to the kept lead: {plural(mv.notes, 'note')}, {plural(mv.tasks, 'task')}, {plural(mv.events, 'timeline event')}, {plural(mv.messages, 'message')}, {plural(mv.enrollments, 'enrollment')}
        {preview.groupsJoined.length > 0 ? `; joins ${plural(preview.groupsJoined.length, 'lead list')}` : ''}
        {preview.variablesFilled.length > 0 ? `; fills ${plural(preview.variablesFilled.length, 'custom column')}` : ''}.
      </p>
      {stopped.length > 0 && (
        <ul style={{ margin: '6px 8px 0' }}>
          {stopped.map((e) => (
            <li key={e.id}>Sequence in {e.campaignName || 'a campaign'} stops ({e.action === 'stopped_do_not_contact' ? 'do not contact' : 'one sequence per person'}).</li>
          ))}
        </ul>
      )}
      <p className="muted" style={{ margin: '6px 8px 0' }}>Filled values come from the merged lead; the kept lead's own values win. The stage further along the pipeline is kept.</p>
    </div>
  );
}
