/** Exports the leads of the current view (all pages, same filters and order) as a CSV download,
 * through campaigns.leads.export: the lead id first, every field and custom column, cells that
 * start like a formula escaped. Importing the file again with "Update" updates these leads. */
import { run } from '../../lib/ops.ts';
import type { SearchInput } from './lead-pager.ts';

const PAGE = 2000;

export async function exportLeadsCsv(input: Omit<SearchInput, 'cursor' | 'limit' | 'includeVariables'>, onProgress: (n: number) => void): Promise<number> {
  const { campaignId, tagId, query, pipelineStage, sortBy, sortOrder } = input;
  const parts: string[] = [];
  let count = 0;
  let cursor: string | undefined;
  do {
    const page = await run('campaigns.leads.export', { campaignId, tagId, query, pipelineStage, sortBy, sortOrder, limit: PAGE, cursor });
    parts.push(page.csv);
    count += page.count;
    cursor = page.nextCursor ?? undefined;
    onProgress(count);
  } while (cursor);
  // A leading BOM lets spreadsheet apps read accents correctly.
  const url = URL.createObjectURL(new Blob(['\ufeff', ...parts], { type: 'text/csv;charset=utf-8' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = `leads-${new Date().toISOString().slice(0, 10)}.csv`;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
  return count;
}
