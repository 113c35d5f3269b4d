/**
 * Locale-friendly text order for sorting people and companies by name (`Adam, Émile, eric, Ève,
 * Zed`): case and accents are ignored at the primary level, ties fall back to the id.
 *
 * Every store must give the same order, and PostgreSQL/PGlite may have no ICU collations (PGlite
 * has none), so the order is one character mapping applied by each store: `foldForSort` in
 * JavaScript (memory and desktop stores) and `translate(text, SORT_FOLD_FROM, SORT_FOLD_TO)` in SQL
 * (the same table), each compared by code point. Latin letters with diacritics fold to their base
 * letter, A-Z to a-z; other characters are kept as they are, so both sides agree on every input.
 */

const SPECIAL: readonly [string, string][] = [
  ['Æ', 'a'], ['æ', 'a'], ['Œ', 'o'], ['œ', 'o'], ['Ø', 'o'], ['ø', 'o'], ['Ł', 'l'], ['ł', 'l'], ['Đ', 'd'], ['đ', 'd'],
  ['Ð', 'd'], ['ð', 'd'], ['Þ', 't'], ['þ', 't'], ['ß', 's'], ['ı', 'i'], ['Ħ', 'h'], ['ħ', 'h'], ['Ŧ', 't'], ['ŧ', 't'],
];

function buildTable(): { from: string; to: string } {
  let from = '';
  let to = '';
  for (let cp = 0x41; cp <= 0x5a; cp++) {
    from += String.fromCharCode(cp);
    to += String.fromCharCode(cp + 32);
  }
  // Latin-1 Supplement and Latin Extended-A/B: letters whose canonical decomposition starts with
  // an ASCII letter (É = E + combining acute).
  for (let cp = 0xc0; cp <= 0x24f; cp++) {
    const ch = String.fromCharCode(cp);
    const base = ch.normalize('NFD').charAt(0);
    if (base !== ch && /^[A-Za-z]$/.test(base)) {
      from += ch;
      to += base.toLowerCase();
    }
  }
  for (const [f, t] of SPECIAL) {
    if (!from.includes(f)) {
      from += f;
      to += t;
    }
  }
  return { from, to };
}

const TABLE = buildTable();

/** The characters `foldForSort` replaces, for SQL's translate(); same length as SORT_FOLD_TO.
 * Letters only: safe inside a SQL string literal. */
export const SORT_FOLD_FROM: string = TABLE.from;
/** What each character of SORT_FOLD_FROM becomes. */
export const SORT_FOLD_TO: string = TABLE.to;

const MAP = new Map<string, string>([...SORT_FOLD_FROM].map((ch, i) => [ch, SORT_FOLD_TO.charAt(i)]));
const NEEDS_FOLD = /[A-Z\u00c0-\u024f]/;

/** The sort key of a text: case- and accent-folded (see the module comment). */
export function foldForSort(s: string): string {
  if (!NEEDS_FOLD.test(s)) return s;
  let out = '';
  for (const ch of s) out += MAP.get(ch) ?? ch;
  return out;
}
