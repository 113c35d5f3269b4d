/** Every campaign, searchable by name, in any of the specification's sort orders, a page at a time,
 * with each one's running state and headline numbers. */
import { useEffect, useRef, useState } from 'react';
import type { OpInput } from '../../../../shared/ops/index.ts';
import { ErrorText } from '../../components/ErrorText.tsx';
import { dateTime, shortDate } from '../../lib/format.ts';
import { useOp } from '../../lib/ops.ts';
import { useApp } from '../../state/app-store.ts';
import { NewCampaignDialog } from './NewCampaignDialog.tsx';
import { percent } from './format.ts';

type SortBy = NonNullable<OpInput<'campaigns.getBasic'>['sortBy']>;

const SORTS: { id: SortBy; label: string; defaultOrder: 'asc' | 'desc' }[] = [
  { id: 'createdAt', label: 'Created', defaultOrder: 'desc' },
  { id: 'updatedAt', label: 'Last changed', defaultOrder: 'desc' },
  { id: 'name', label: 'Name', defaultOrder: 'asc' },
  { id: 'hasSequence', label: 'Has a sequence', defaultOrder: 'desc' },
  { id: 'replyRate', label: 'Reply rate', defaultOrder: 'desc' },
  { id: 'meetingsBooked', label: 'Meetings booked', defaultOrder: 'desc' },
];

const PAGE_SIZE = 25;

export function CampaignList() {
  const openCampaign = useApp((s) => s.openCampaign);
  const [text, setText] = useState('');
  const [search, setSearch] = useState('');
  const [sortBy, setSortBy] = useState<SortBy>('createdAt');
  const [sortOrder, setSortOrder] = useState<'asc' | 'desc'>('desc');
  const [page, setPage] = useState(1);
  const [creating, setCreating] = useState(false);
  const timer = useRef<ReturnType<typeof setTimeout> | null>(null);

  useEffect(() => () => {
    if (timer.current) clearTimeout(timer.current);
  }, []);

  const list = useOp('campaigns.getBasic', { pageSize: PAGE_SIZE, pageNumber: page, sortBy, sortOrder, ...(search ? { search } : {}) });
  const campaigns = list.data?.basicCampaigns ?? [];
  const ids = campaigns.map((c) => c.id);
  const metrics = useOp('campaigns.getMetrics', ids.length > 0 ? { campaignIds: ids } : null);
  const byId = new Map((metrics.data?.metrics ?? []).map((m) => [m.campaignId, m]));
  const total = list.data?.totalCount ?? 0;
  const pages = Math.max(1, Math.ceil(total / PAGE_SIZE));

  function changeSearch(value: string) {
    setText(value);
    if (timer.current) clearTimeout(timer.current);
    timer.current = setTimeout(() => {
      setSearch(value.trim());
      setPage(1);
    }, 200);
  }

  function changeSort(id: SortBy) {
    setSortBy(id);
    setSortOrder(SORTS.find((s) => s.id === id)?.defaultOrder ?? 'desc');
    setPage(1);
  }

  return (
    <>
      <div className="screen-header">
        <h1>Campaigns</h1>
        <span className="sub" data-testid="campaigns-count">{list.loading && !list.data ? 'Loading…' : `${total} campaign${total === 1 ? '' : 's'}`}</span>
        <div className="grow" />
        <button className="btn primary" onClick={() => setCreating(true)}>New campaign</button>
      </div>
      <div className="toolbar">
        <input className="input" type="search" placeholder="Search campaigns by name" aria-label="Search campaigns" value={text} onChange={(e) => changeSearch(e.target.value)} style={{ width: 260 }} />
        <label className="row">
          <span className="muted">Sort by</span>
          <select aria-label="Sort campaigns by" value={sortBy} onChange={(e) => changeSort(e.target.value as SortBy)}>
            {SORTS.map((s) => (
              <option key={s.id} value={s.id}>{s.label}</option>
            ))}
          </select>
        </label>
        <button className="btn" aria-label="Sort order" title="Reverse the order" onClick={() => { setSortOrder(sortOrder === 'asc' ? 'desc' : 'asc'); setPage(1); }}>
          {sortOrder === 'asc' ? '↑ Ascending' : '↓ Descending'}
        </button>
        <div className="grow" />
        <div className="row pager" aria-label="Pages">
          <button className="btn small" disabled={page <= 1} onClick={() => setPage(page - 1)} aria-label="Previous page">‹ Prev</button>
          <span className="muted" data-testid="campaigns-page">Page {Math.min(page, pages)} of {pages}</span>
          <button className="btn small" disabled={!list.data?.nextCursor} onClick={() => setPage(page + 1)} aria-label="Next page">Next ›</button>
        </div>
      </div>
      <div className="screen-body">
        <ErrorText error={list.error?.message} />
        <ErrorText error={metrics.error?.message} />
        <table className="plain campaign-table list" data-testid="campaign-list">
          <thead>
            <tr>
              <th>Campaign</th>
              <th>State</th>
              <th className="num">Enrolled</th>
              <th className="num">Sent</th>
              <th className="num">Replies</th>
              <th className="num">Reply rate</th>
              <th className="num">Meetings</th>
              <th>Created</th>
              <th>Changed</th>
            </tr>
          </thead>
          <tbody>
            {campaigns.map((c) => {
              const m = byId.get(c.id);
              return (
                <tr key={c.id} className="clickable" onClick={() => openCampaign(c.id)} data-campaign-id={c.id}>
                  <td>
                    <a href={`#/campaigns?campaign=${c.id}`} onClick={(e) => { e.preventDefault(); openCampaign(c.id); }} className="name" title={c.name}>{c.name}</a>
                  </td>
                  <td><RunPill running={c.hasActiveSequence} /></td>
                  <td className="num">{m ? m.enrolled.toLocaleString() : '…'}</td>
                  <td className="num">{m ? (m.messagesSent + m.connectionRequestsSent).toLocaleString() : '…'}</td>
                  <td className="num">{m ? m.replies.toLocaleString() : '…'}</td>
                  <td className="num">{m ? percent(m.replyRate) : '…'}</td>
                  <td className="num">{m ? m.meetingsBooked.toLocaleString() : '…'}</td>
                  <td className="muted" title={`Created ${dateTime(c.createdAt)}`}>{shortDate(c.createdAt)}</td>
                  <td className="muted" title={`Changed ${dateTime(c.updatedAt)}`}>{shortDate(c.updatedAt)}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
        {!list.loading && campaigns.length === 0 && (
          <div className="list list-empty">{search ? `No campaign is named like “${search}”.` : 'No campaigns yet. Create one, then enroll leads from the Leads screen.'}</div>
        )}
      </div>
      {creating && <NewCampaignDialog onClose={() => setCreating(false)} onCreated={(id) => { setCreating(false); openCampaign(id); }} />}
    </>
  );
}

export function RunPill({ running }: { running: boolean }) {
  return <span className={`run-pill ${running ? 'running' : 'paused'}`}>{running ? 'Running' : 'Paused'}</span>;
}
