/** Exports the leads of the current view (all pages, same filters and order) as a CSV download. */
import Papa from 'papaparse';
import { run } from '../../lib/ops.ts';
import { allLeads } from './lead-pager.ts';
import type { SearchInput } from './lead-pager.ts';

export async function exportLeadsCsv(input: Omit<SearchInput, 'cursor' | 'limit'>, onProgress: (n: number) => void): Promise<number> {
  const { tags } = await run('tags.getAll', {});
  const tagName = new Map(tags.map((t) => [t.id, t.name]));
  const rows: Record<string, string | number>[] = [];
  for await (const page of allLeads({ ...input, includeVariables: true })) {
    for (const l of page) {
      const row: Record<string, string | number> = {
        'First name': l.firstName, 'Last name': l.lastName, 'Full name': l.fullName, Email: l.email, Company: l.company,
        'Job title': l.jobTitle, Location: l.location, Phone: l.phone, 'Social URL': l.socialUrl, Stage: l.pipelineStage?.name ?? 'New',
        Tag: l.tagId ? (tagName.get(l.tagId) ?? '') : '', 'Sequence status': l.leadSequence?.status ?? '', Campaigns: l.campaigns.map((c) => c.name).join('; '),
        'Ranking score': l.rankingScore, 'Lead fit score': l.leadFitScore, 'Catch-up date': l.followUpAt ?? '', 'Last activity': l.lastActivityAt ?? '', Created: l.createdAt,
      };
      for (const v of l.variables ?? []) if (!v.builtInType) row[v.name] = v.value;
      rows.push(row);
    }
    onProgress(rows.length);
  }
  const columns = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  // A leading BOM lets spreadsheet apps read accents correctly.
  const csv = '\ufeff' + Papa.unparse(rows, { columns });
  const url = URL.createObjectURL(new Blob([csv], { type: 'text/csv;charset=utf-8' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = `leads-${new Date().toISOString().slice(0, 10)}.csv`;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
  return rows.length;
}
