/** One check run on every store (memory, desktop RxDB, PostgreSQL/PGlite): lead search sorted by
 * name and by company follows the reader's locale (case- and accent-insensitive primary order,
 * ties by id), page after page. */
import { expect } from 'vitest';
import type { Actor } from '../../shared/context.ts';
import { newLead } from '../../shared/model/factories.ts';
import type { Lead } from '../../shared/model/index.ts';
import { execute } from '../../shared/ops/execute.ts';
import type { AnyWrite, Store } from '../../shared/store.ts';
import { FakeClock, seededRandom, sequentialIds } from './deterministic.ts';
import { testSecrets } from './harness.ts';

/** The names of the issue and more of the same kind: case and accents only, so Intl.Collator's
 * primary strength is the reference. */
export const LOCALE_NAMES = ['Zed', 'Émile', 'eric', 'Adam', 'Ève', 'adam', 'Ängela', 'Bob', 'Çelik', 'zoë', 'Ëlla', 'ELLA', 'Öz', 'Oz', 'Anna', 'Ånna'];
export const LOCALE_COMPANIES = ['Zenith', 'émeraude', 'Acme', 'ÉCOLE', 'eclair', 'Bâtiment', 'batiment', 'Über', 'ubuntu', ''];

/** Leads with those names and companies in `workspaceId`, created by lead group `leadGroupId`. */
export function localeLeads(workspaceId: string, leadGroupId: string): Lead[] {
  const ids = sequentialIds(40);
  return LOCALE_NAMES.map((firstName, i) =>
    newLead({ id: ids.uuid(), workspaceId, now: `2026-11-0${1 + (i % 9)}T10:00:00.000Z` }, leadGroupId, {
      firstName,
      fullName: firstName,
      company: LOCALE_COMPANIES[i % LOCALE_COMPANIES.length] ?? '',
    }),
  );
}

export const creationsOf = (leads: readonly Lead[]): AnyWrite[] => leads.map((l) => ({ collection: 'leads', id: l.id, before: null, after: l }));

const collator = new Intl.Collator('en', { sensitivity: 'base' });

/** The order a reader expects: by the collator, ties (equal up to case and accents) by id. */
export function expectedOrder(leads: readonly Lead[], field: 'fullName' | 'company', dir: 'asc' | 'desc'): string[] {
  return [...leads]
    .sort((a, b) => {
      const c = collator.compare(a[field], b[field]);
      if (c !== 0) return dir === 'asc' ? c : -c;
      return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
    })
    .map((l) => l.id);
}

/** Walks campaigns.leads.search sorted by name and company, both ways, three rows a page, on `store`. */
export async function expectLocaleSorting(store: Store, actor: Actor, leads: readonly Lead[]): Promise<void> {
  const env = { actor, store, clock: new FakeClock(), ids: sequentialIds(900), random: seededRandom(1), secrets: testSecrets };
  for (const sortBy of ['fullName', 'company'] as const) {
    for (const sortOrder of ['asc', 'desc'] as const) {
      const got: string[] = [];
      let cursor: string | null = null;
      for (let guard = 0; guard < 50; guard++) {
        const page: { leads: { id: string }[]; nextCursor: string | null } = await execute('campaigns.leads.search', { sortBy, sortOrder, limit: 3, cursor }, env);
        got.push(...page.leads.map((l) => l.id));
        cursor = page.nextCursor;
        if (!cursor) break;
      }
      const names = (ids: string[]) => ids.map((id) => leads.find((l) => l.id === id)?.[sortBy]);
      expect(names(got), `${sortBy} ${sortOrder}`).toEqual(names(expectedOrder(leads, sortBy, sortOrder)));
      expect(got, `${sortBy} ${sortOrder}`).toEqual(expectedOrder(leads, sortBy, sortOrder));
      // The export lists the rows in the order the table shows them (its first column is the id).
      const exported: string[] = [];
      cursor = null;
      for (let guard = 0; guard < 50; guard++) {
        const page: { csv: string; nextCursor: string | null } = await execute('campaigns.leads.export', { sortBy, sortOrder, limit: 3, cursor }, env);
        // The header line comes with the first page only.
        exported.push(...page.csv.split(/\r?\n/).filter((line) => line !== '' && !line.startsWith('id,')).map((line) => line.split(',')[0] ?? ''));
        cursor = page.nextCursor;
        if (!cursor) break;
      }
      expect(exported, `export ${sortBy} ${sortOrder}`).toEqual(got);
    }
  }
}
