/** The pure parts of the import (shared/import): encodings, delimiters, row numbers, header
 * aliases of real CRM exports, row mapping, identity keys and the export's formula escaping. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cellValue, detectDelimiter, parseCsv, toCsv } from '../../shared/import/csv.ts';
import { base64ToBytes, decodeBytes, detectEncoding } from '../../shared/import/encoding.ts';
import { exportHeaders } from '../../shared/import/export.ts';
import { fieldForHeader, headerKey, suggestMapping } from '../../shared/import/fields.ts';
import { readCsvBytes } from '../../shared/import/file.ts';
import { canonicalProfileUrl, emailKey, identityOfSearch, nameCompanyKey, profileKey, storedKeys } from '../../shared/intake/identity.ts';
import { isProblem, mapRecords, splitFullName } from '../../shared/import/rows.ts';
import type { MappedRow } from '../../shared/import/rows.ts';

const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'imports');
const fixture = (name: string): Uint8Array => readFileSync(join(FIXTURES, name));
const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);

describe('encodings', () => {
  it('reads UTF-8 with and without a BOM, UTF-16 by its BOM, and anything else as Windows-1252', () => {
    expect(detectEncoding(utf8('Prénom;Nom\n'))).toEqual({ encoding: 'utf-8', bom: false });
    expect(detectEncoding(new Uint8Array([0xef, 0xbb, 0xbf, 0x41]))).toEqual({ encoding: 'utf-8', bom: true });
    expect(detectEncoding(new Uint8Array([0xff, 0xfe, 0x41, 0x00]))).toEqual({ encoding: 'utf-16le', bom: true });
    // "Dupré" in Windows-1252: é is the single byte 0xE9, which is not valid UTF-8.
    const cp1252 = new Uint8Array([0x44, 0x75, 0x70, 0x72, 0xe9, 0x3b, 0x80]);
    expect(detectEncoding(cp1252)).toEqual({ encoding: 'windows-1252', bom: false });
    expect(decodeBytes(cp1252).text).toBe('Dupré;€');
  });

  it('decodes the French Windows-1252 fixture with its accents, and the chosen encoding wins over detection', () => {
    const file = readCsvBytes(fixture('french-windows-1252.csv'));
    expect(file.encoding).toBe('windows-1252');
    expect(file.delimiter).toBe(';');
    expect(file.headers.slice(0, 3)).toEqual(['Civilité', 'Prénom', 'Nom']);
    expect(file.records[0]?.cells.slice(1, 3)).toEqual(['Hélène', 'Dupré']);
    // Read as UTF-8 on purpose, the accents are lost: the dialog shows this and lets the user switch back.
    const wrong = readCsvBytes(fixture('french-windows-1252.csv'), { encoding: 'utf-8' });
    expect(wrong.records[0]?.cells[2]).toBe('Dupr\ufffd');
  });

  it('drops a BOM and reads base64 bytes', () => {
    const bytes = base64ToBytes(btoa('\xef\xbb\xbfEmail\r\na@b.example\r\n'));
    const { text, bom } = decodeBytes(bytes);
    expect(bom).toBe(true);
    expect(text).toBe('Email\r\na@b.example\r\n');
    expect(() => base64ToBytes('not base64!')).toThrow();
  });
});

describe('CSV structure', () => {
  it('detects comma, semicolon, tab and pipe, and honours an Excel `sep=` line', () => {
    expect(detectDelimiter('a,b,c\n1,2,3\n')).toBe(',');
    expect(detectDelimiter('Vorname;Nachname;Firma\nJürgen;Weiß;"Müller, Söhne"\n')).toBe(';');
    expect(detectDelimiter('a\tb\tc\n1\t2\t3\n')).toBe('\t');
    expect(detectDelimiter('a|b|c\n1|2|3\n')).toBe('|');
    const parsed = parseCsv('sep=;\nFirst name;Email\nAda;ada@x.example\n');
    expect(parsed.delimiter).toBe(';');
    expect(parsed.headerRow).toBe(2);
    expect(parsed.records).toEqual([{ row: 3, cells: ['Ada', 'ada@x.example'] }]);
  });

  it('numbers rows as a spreadsheet does: header 1, blank lines counted, a value over several lines is one row', () => {
    const csv = ['Name,Email,Note', 'Ada Lovelace,ada@x.example,', '', 'Grace Hopper,grace@x.example,"line one', 'line two"', '', '', 'Alan Turing,not-an-email,', '', ''].join('\r\n');
    const parsed = parseCsv(csv);
    expect(parsed.records.map((r) => r.row)).toEqual([2, 3, 4, 5, 6, 7]);
    const mapped = mapRecords(parsed.headers, parsed.records, suggestMapping(parsed.headers));
    expect(mapped.map((r) => (isProblem(r) ? `${r.row} ${r.code}` : `${r.row} ${r.fields.firstName}`))).toEqual([
      '2 Ada', '3 EMPTY_ROW', '4 Grace', '5 EMPTY_ROW', '6 EMPTY_ROW', '7 INVALID_EMAIL',
    ]);
    expect((mapped[2] as MappedRow).custom.get('Note')).toBe('line one\nline two');
  });

  it('finds the header below the notes of LinkedIn\'s connections export and keeps the file\'s row numbers', () => {
    const file = readCsvBytes(fixture('linkedin-connections.csv'));
    expect(file.headerRow).toBe(4);
    expect(file.headers).toEqual(['First Name', 'Last Name', 'URL', 'Email Address', 'Company', 'Position', 'Connected On']);
    expect(file.records.map((r) => r.row)).toEqual([5, 6, 7]);
  });

  it('reports an unterminated quote and a row with more values than the header', () => {
    const parsed = parseCsv('Name,Email\nAda,ada@x.example,extra\n');
    const [row] = mapRecords(parsed.headers, parsed.records, suggestMapping(parsed.headers));
    expect(row).toMatchObject({ row: 2, code: 'MALFORMED_ROW' });
    const open = parseCsv('Name,Email\n"Ada,ada@x.example\nBob,bob@x.example\n');
    expect(open.problems[0]?.row).toBe(2);
  });
});

describe('header aliases of real exports', () => {
  const cases: [string, string][] = [
    ['Person Linkedin Url', 'socialUrl'], // Apollo
    ['Company / Account', 'company'], // Salesforce
    ['Firma / Account', 'company'], // Salesforce, German
    ['companyName', 'company'], // PhantomBuster
    ['linkedInProfileUrl', 'socialUrl'],
    ['profileUrl', 'socialUrl'],
    ['E-mail', 'email'],
    ['E-Mail', 'email'],
    ['Email Address', 'email'], // LinkedIn connections
    ['Mobile Phone', 'phone'],
    ['Country/Region', 'country'], // HubSpot
    ['State/Region', 'state'],
    ['City', 'city'],
    ['Vorname', 'firstName'],
    ['Nachname', 'lastName'],
    ['Prénom', 'firstName'],
    ['Société', 'company'],
    ['Titel', 'jobTitle'],
    ['Position', 'jobTitle'],
    ['fullName', 'fullName'],
  ];
  it.each(cases)('"%s" is %s', (header, field) => {
    expect(fieldForHeader(header)?.field).toBe(field);
  });

  it('ignores case, accents, spaces and punctuation', () => {
    expect(headerKey(' E-Mail-Adresse ')).toBe(headerKey('e_mail adresse'));
    expect(headerKey('Prénom')).toBe('prenom');
  });

  it('gives a field to the best of several columns and keeps the others as custom columns, or skips an exact copy', () => {
    const headers = ['profileUrl', 'fullName', 'name', 'linkedInProfileUrl', 'vmid'];
    const sample = [['https://www.linkedin.com/sales/lead/A1', 'Ada Lovelace', 'Ada Lovelace', 'https://www.linkedin.com/in/ada', 'A1']];
    expect(suggestMapping(headers, sample)).toEqual({
      profileUrl: 'custom:profileUrl', fullName: 'fullName', name: 'skip', linkedInProfileUrl: 'socialUrl', vmid: 'custom:vmid',
    });
  });

  it("maps an `id` column to the lead id only when it holds this app's ids", () => {
    expect(suggestMapping(['ID', 'Email'], [['0035g00000AbCdE', 'a@x.example']]).ID).toBe('custom:ID');
    expect(suggestMapping(['id', 'Email'], [['0b7a3c1e-8f1d-4c2e-9a5b-7d6e5f4c3b2a', 'a@x.example']]).id).toBe('id');
  });

  it("maps our own export's columns back, skips the ones the app sets, and keeps the list's custom columns", () => {
    const headers = exportHeaders(['Team size', 'Stage']);
    const mapping = suggestMapping(headers, [], ['Team size', 'Stage']);
    expect(mapping).toMatchObject({
      'First name': 'firstName', 'Full name': 'fullName', Email: 'email', 'Profile URL': 'socialUrl', Website: 'websiteUrl',
      'Company profile URL': 'companySocialUrl', 'Do not contact': 'doNotContact', Blocklisted: 'blocklisted',
      'Team size': 'custom:Team size', 'Stage (custom)': 'custom:Stage', Stage: 'skip', Tag: 'skip', Created: 'skip',
    });
  });
});

describe('rows', () => {
  const map = (csv: string) => {
    const p = parseCsv(csv);
    return mapRecords(p.headers, p.records, suggestMapping(p.headers, p.records.map((r) => r.cells)));
  };

  it('combines city, state and country into the location instead of letting one overwrite another', () => {
    const [row] = map('First Name,City,State/Region,Country/Region\nAmelia,London,England,United Kingdom\n');
    expect((row as MappedRow).fields.location).toBe('London, England, United Kingdom');
  });

  it('splits a full name, "Last, First" too', () => {
    expect(splitFullName('Jane van der Berg')).toEqual({ firstName: 'Jane', lastName: 'van der Berg' });
    expect(splitFullName('Doe, Jane')).toEqual({ firstName: 'Jane', lastName: 'Doe' });
  });

  it('reads flags, placeholders and several emails in one cell', () => {
    const rows = map('Email,Phone,Do not contact\n"a@x.example; b@y.example",n/a,yes\nc@x.example,,maybe\n');
    expect(rows[0]).toMatchObject({ fields: { email: 'a@x.example' }, flags: { doNotContact: true } });
    expect((rows[0] as MappedRow).fields.phone).toBeUndefined();
    expect((rows[0] as MappedRow).custom.get('Other emails')).toBe('b@y.example');
    expect(rows[1]).toMatchObject({ code: 'INVALID_VALUE' });
  });

  it('gives each row its own values: the first non-empty of two columns of one field, places once, nothing from the row before', () => {
    const long = 'x'.repeat(2001);
    const p = parseCsv(
      'First Name,Email,Work email,City,State,Country,Phone,Notes\n' +
        'Ada,,ada@x.example,Berlin,Berlin,Germany,NOT AVAILABLE,\n' +
        `Bob,bob@x.example,,Paris,,France,+1 555,${long}\n` +
        'Cy,,,,,,,\n',
    );
    const mapping = { 'First Name': 'firstName', Email: 'email', 'Work email': 'email', City: 'city', State: 'state', Country: 'country', Phone: 'phone', Notes: 'custom:Notes' } as const;
    const rows = mapRecords(p.headers, p.records, mapping);
    expect(rows[0]).toMatchObject({ fields: { firstName: 'Ada', email: 'ada@x.example', location: 'Berlin, Germany' } });
    expect((rows[0] as MappedRow).fields.phone).toBeUndefined();
    expect(rows[1]).toMatchObject({ code: 'FIELD_TOO_LONG' });
    // The row after a refused one: none of the refused row's values (nor the first's) carried over.
    expect((rows[2] as MappedRow).fields).toEqual({ firstName: 'Cy' });
  });

  it('refuses rows without a name, an email or a profile URL, and values too long', () => {
    const rows = map(`First Name,Company,Note\n,Acme,hello\nAda,Acme,${'x'.repeat(2001)}\n`);
    expect(rows.map((r) => (isProblem(r) ? r.code : 'ok'))).toEqual(['MISSING_IDENTITY', 'FIELD_TOO_LONG']);
  });
});

describe('identity keys', () => {
  it('normalises profile URLs and stores them canonical', () => {
    expect(profileKey('https://de.linkedin.com/in/Jane-Doe/?trk=abc')).toBe('linkedin.com/in/jane-doe');
    expect(profileKey('linkedin.com/in/jane-doe')).toBe('linkedin.com/in/jane-doe');
    expect(canonicalProfileUrl('http://linkedin.com/in/jane-doe/?utm=1')).toBe('https://www.linkedin.com/in/jane-doe');
    expect(profileKey('HTTP://WWW.LINKEDIN.COM/in/jane%2Ddoe#about')).toBe('linkedin.com/in/jane-doe');
  });

  it('gives a LinkedIn URL in any scheme, host case, subdomain or final slashes the spelling the full rules give', () => {
    // A query sends a URL through every step of canonicalProfileUrl (the short ways in take none):
    // with or without one, each spelling must come out the same.
    const schemes = ['', 'http://', 'https://', 'HTTP://', 'HtTpS://', 'ftp://'];
    const hosts = ['linkedin.com', 'www.linkedin.com', 'WWW.LinkedIn.COM', 'de.linkedin.com', 'uk.linkedin.com', 'mobile.linkedin.com', 'linkedin.co'];
    const paths = ['/in/jane-doe', '/in/Jane_Doe-42', '//in/x', '/in/jane-doe/', '/in/jane-doe///', '/', '', '/in/jané', '/in/jane%2Ddoe', '/in/a.b', '/company/acme-'];
    let n = 0;
    for (const scheme of schemes) {
      for (const host of hosts) {
        for (const path of paths) {
          const url = `${scheme}${host}${path}`;
          expect(canonicalProfileUrl(`  ${url} `), url).toBe(canonicalProfileUrl(`${url}?trk=x`));
          n++;
        }
      }
    }
    expect(n).toBe(schemes.length * hosts.length * paths.length);
    expect(canonicalProfileUrl('http://www.linkedin.com/in/Jane-Doe/')).toBe('https://www.linkedin.com/in/Jane-Doe');
    expect(canonicalProfileUrl('DE.linkedin.com/in/x')).toBe('https://www.linkedin.com/in/x');
    expect(canonicalProfileUrl('http://mobile.linkedin.com/in/x')).toBe('https://mobile.linkedin.com/in/x');
  });

  it('compares emails without case or surrounding spaces', () => {
    expect(emailKey(' Jane.Doe@ACME.example\t')).toBe('jane.doe@acme.example');
  });

  it('keeps the keys a store stores with a lead, null where a lead has none', () => {
    expect(storedKeys({ socialUrl: 'https://fr.linkedin.com/in/Jane/', email: ' J@X.test', fullName: 'Jane Doe', company: 'Acme SA' })).toEqual({ profile: 'linkedin.com/in/jane', email: 'j@x.test', nameCompany: nameCompanyKey('jane doe', 'acme') });
    expect(storedKeys({ socialUrl: '', email: '', fullName: 'Jane Doe', company: '' })).toEqual({ profile: null, email: null, nameCompany: null });
    expect(storedKeys({ id: 'a tag, not a lead' })).toEqual({ profile: null, email: null, nameCompany: null });
  });

  it('reads a search text as an identity only when it is an email or a profile URL', () => {
    expect(identityOfSearch(' JANE@Acme.example ')).toEqual({ kind: 'email', key: 'jane@acme.example' });
    expect(identityOfSearch('de.linkedin.com/in/Jane-Doe/?trk=x')).toEqual({ kind: 'profile', key: 'linkedin.com/in/jane-doe' });
    expect(identityOfSearch('http://www.linkedin.com/in/jane-doe')).toEqual({ kind: 'profile', key: 'linkedin.com/in/jane-doe' });
    for (const text of ['Jane Doe', 'acme', 'jane@', '@acme.example', 'linkedin', 'jane doe@acme.example']) expect(identityOfSearch(text), text).toBeNull();
  });

  it('folds names and companies exactly as the keys stored so far were folded, whatever their spacing', () => {
    // The formula every stored key (PostgreSQL's column, the desktop's Store column) was made with:
    // a change of the key's text would leave those leads unfound by name and company.
    const fold = (s: string) => (/^[\x20-\x7e]*$/.test(s) ? s : s.normalize('NFKD').replace(/[\u0300-\u036f]/g, '')).toLowerCase().replace(/\s+/g, ' ').trim();
    const stored = (n: string, c: string) => {
      if (!n || !c) return '';
      const name = fold(n);
      const firm = fold(c).replace(/[.,]/g, '').replace(/\s+(inc|ltd|llc|gmbh|ag|sa|sas|sarl|bv|plc|co)$/, '');
      return name && firm ? `${name}\u0001${firm}` : '';
    };
    const pieces = ['Jane', 'DOE', 'Hélène', 'ß', 'Acme', 'inc', 'Inc.', 'co', ',', '.', ' ', '  ', '\t', '\u00a0', '\n', '\u3000', 'É', 'x', 'GmbH', ' sa', '-'];
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    const text = () => Array.from({ length: 1 + Math.floor(next() * 6) }, () => pieces[Math.floor(next() * pieces.length)]).join('');
    for (let i = 0; i < 5000; i++) {
      const [n, c] = [text(), text()];
      expect(nameCompanyKey(n, c), JSON.stringify([n, c])).toBe(stored(n, c));
    }
  });

  it('compares name and company without case, accents or legal form', () => {
    expect(nameCompanyKey('Hélène Dupré', 'Acme Inc.')).toBe(nameCompanyKey('helene dupre', 'ACME'));
    expect(nameCompanyKey('Hélène Dupré', '')).toBe('');
  });
});

describe('export escaping', () => {
  it("prefixes cells that start like a formula with ' and reads them back unchanged", () => {
    const values = ['=HYPERLINK("http://evil.example","click")', '+44 20 7946 0321', '-5', '@SUM(A1)', '\tTabbed', 'plain', "'quoted"];
    const csv = toCsv(['v'], values.map((v) => [v]));
    const lines = parseCsv(csv).records.map((r) => r.cells[0] ?? '');
    expect(lines.slice(0, 5).every((l) => l.startsWith("'"))).toBe(true);
    expect(lines[5]).toBe('plain');
    expect(lines.map(cellValue)).toEqual(values.map((v) => v.trim()));
  });
});
