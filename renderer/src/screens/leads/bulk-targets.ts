/** The selected leads as rows, for bulk actions that run one operation per lead (tag, stage):
 * explicit ids come from the rows on screen, "all matching" pages through the search. */
import type { LeadFilters } from '../../state/app-store.ts';
import { allLeads } from './lead-pager.ts';
import type { LeadPager, LeadRow } from './lead-pager.ts';
import { searchInput } from './selection.ts';
import type { Selection } from './selection.ts';

export async function selectedRows(selection: Selection, filters: LeadFilters, pager: LeadPager): Promise<LeadRow[]> {
  if (selection.mode === 'ids') {
    const wanted = new Set(selection.idList);
    const out: LeadRow[] = [];
    for (let i = 0; i < pager.loadedCount; i++) {
      const r = pager.row(i);
      if (r && wanted.has(r.id)) out.push(r);
    }
    return out;
  }
  const out: LeadRow[] = [];
  for await (const page of allLeads(searchInput(filters))) for (const r of page) if (selection.has(r.id)) out.push(r);
  return out;
}

export type BulkProgress = { done: number; total: number; failures: { name: string; message: string }[] };

/** Runs `fn` for each row, a few at a time, collecting failures with the lead's name. */
export async function forEachRow(rows: readonly LeadRow[], fn: (r: LeadRow) => Promise<unknown>, onProgress: (p: BulkProgress) => void): Promise<BulkProgress> {
  const progress: BulkProgress = { done: 0, total: rows.length, failures: [] };
  let next = 0;
  async function worker() {
    while (next < rows.length) {
      const r = rows[next++];
      if (!r) break;
      try {
        await fn(r);
      } catch (e) {
        progress.failures.push({ name: r.fullName || r.email || r.id, message: (e as Error).message });
      }
      progress.done++;
      if (progress.done % 10 === 0 || progress.done === rows.length) onProgress({ ...progress, failures: [...progress.failures] });
    }
  }
  await Promise.all([worker(), worker(), worker(), worker()]);
  onProgress({ ...progress, failures: [...progress.failures] });
  return progress;
}
