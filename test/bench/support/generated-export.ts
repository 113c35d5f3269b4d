/** The CSV export the import benchmarks feed through campaigns.leads.import: an Apollo-like file of
 * `n` people with 14 columns (4 become custom columns), names that repeat about as rarely as in a
 * real list, and one common surname (Smith, 1 row in 10) so a text search has a term of realistic
 * frequency. Full name and company never repeat below 199,460 rows, so every row is a new person. */
import { toCsv } from '../../../shared/import/csv.ts';

const FIRST = ['Ann', 'Bob', 'Chen', 'Dana', 'Eve', 'Farid', 'Gus', 'Hana', 'Ivan', 'Jo', 'Kim', 'Lena', 'Mo', 'Nina', 'Omar', 'Pia', 'Hélène', 'Jürgen', 'Sofia', 'Tariq'];
/** 1,000 surnames from syllables. */
const SYLLABLES = ['ber', 'cha', 'dor', 'fen', 'gal', 'hol', 'kir', 'lam', 'mor', 'nè'];
const LAST = SYLLABLES.flatMap((a) => SYLLABLES.flatMap((b) => SYLLABLES.map((c) => `${a[0]?.toUpperCase()}${a.slice(1)}${b}${c}`)));
const COMPANY = ['Acme', 'Globex', 'Initech', 'Umbrella', 'Hooli', 'Vandelay', 'Stark', 'Wayne', 'Tyrell', 'Cyberdyne'];
const TITLE = ['VP Sales', 'CTO', 'Head of Growth', 'SDR', 'RevOps Manager', 'Directrice Commerciale'];

/** The surname one row in ten carries. */
export const COMMON_SURNAME = 'Smith';

export const EXPORT_HEADERS = ['First Name', 'Last Name', 'Title', 'Company', 'Email', 'Seniority', 'First Phone', 'Person Linkedin Url', 'City', 'State', 'Country', '# Employees', 'Industry', 'Apollo Contact Id'];

/** Row i of the export (0-based), as cells in EXPORT_HEADERS order. */
export function exportRow(i: number): string[] {
  const first = FIRST[i % FIRST.length] as string;
  const last = i % 10 === 3 ? COMMON_SURNAME : (LAST[Math.floor(i / FIRST.length) % LAST.length] as string);
  const company = `${COMPANY[i % COMPANY.length]} ${i % 9973}`;
  return [
    first, last, TITLE[i % TITLE.length] as string, company, `${emailLocalPart(i)}@${company.toLowerCase().replace(/\s+/g, '')}.example`, i % 3 === 0 ? 'director' : 'manager',
    `+1 415-555-${String(i % 10_000).padStart(4, '0')}`, `http://www.linkedin.com/in/${emailLocalPart(i)}`, 'San Francisco', 'California', 'United States',
    String(10 + (i % 500)), 'computer software', `64a1f0c2${String(i).padStart(16, '0')}`,
  ];
}

/** The part of row i's email before the @ (also its profile slug): unique per row. */
export function emailLocalPart(i: number): string {
  const first = FIRST[i % FIRST.length] as string;
  const last = i % 10 === 3 ? COMMON_SURNAME : (LAST[Math.floor(i / FIRST.length) % LAST.length] as string);
  return `${first}-${last}-${i}`.toLowerCase().normalize('NFKD').replace(/[^a-z0-9-]/g, '');
}

/** The whole export of `n` rows as CSV text. */
export function generatedExport(n: number): string {
  const rows: string[][] = [];
  for (let i = 0; i < n; i++) rows.push(exportRow(i));
  return toCsv(EXPORT_HEADERS, rows);
}
