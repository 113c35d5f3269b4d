/**
 * How the SQLite storage stores a document (electron/backend/storage/sqlite/doc-codec.ts): by shape,
 * without key names, the primary key or constant values. What decoding gives back must be exactly
 * what JSON gives back (same keys, same order, same values), and a row must never reference a shape
 * its file lacks, even after a write that rolled back.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { DocCodec, shapesTableSql } from '../../electron/backend/storage/sqlite/doc-codec.ts';
import { newLead } from '../../shared/model/factories.ts';
import { seededRandom } from '../support/deterministic.ts';
import { tempDir } from './sqlite-storage.fixtures.ts';

type Json = Record<string, unknown>;

const LWT = 1764400000000.01;
const roundTrip = (codec: DocCodec, doc: Json, id: string, primary = 'id'): unknown => codec.decode(codec.encode(doc, { id, lwt: LWT }, primary), { id, lwt: LWT });

function memoryDb(): Database.Database {
  const db = new Database(':memory:');
  db.exec(shapesTableSql);
  return db;
}

describe('the document codec', () => {
  it('gives back what JSON gives back: keys in order, constants, nested values, left-out undefined', () => {
    const codec = new DocCodec(memoryDb());
    const lead = newLead({ id: 'a0000000-0000-4000-8000-000000000001', workspaceId: 'w', now: '2026-01-01T00:00:00.000Z' }, 'g', { firstName: 'Ann', email: 'ann@example.test' });
    const docs: { doc: Json; id: string }[] = [
      { doc: { ...(lead as unknown as Json), _deleted: false, _rev: '1-abc', _meta: { lwt: LWT }, _attachments: {} }, id: lead.id },
      // `_meta` that is not `{lwt}` with the row's lwt is stored as a value.
      { doc: { id: 'm1', _meta: { lwt: LWT + 1 } }, id: 'm1' },
      { doc: { id: 'm2', _meta: { lwt: LWT, other: 1 } }, id: 'm2' },
      { doc: { id: 'm3', _meta: { lwt: String(LWT) } }, id: 'm3' },
      // A replication meta row: its item id is its id without `|0`; revisions by height and token
      // (a height that is not canonical is a value).
      { doc: { id: 'abcdef-1|0', itemId: 'abcdef-1', _rev: '12-rx_storage_replication_ab', next: '7-rx_storage_replication_ab' }, id: 'abcdef-1|0' },
      { doc: { id: 'r1', _rev: '01-x' }, id: 'r1' },
      { doc: { id: 'r2', _rev: '1-' }, id: 'r2' },
      { doc: { id: 'r3', _rev: 'x-1' }, id: 'r3' },
      // Heights of 15 digits (not 16), tokens with a line break, one token the end of the last one.
      { doc: { id: 'r4', _rev: '123456789012345-t\nu' }, id: 'r4' },
      { doc: { id: 'r5', _rev: '1234567890123456-t' }, id: 'r5' },
      { doc: { id: 'r6', _rev: '3-xt\nu' }, id: 'r6' },
      { doc: { id: 'r7', _rev: '4-u' }, id: 'r7' },
      // Tokens of the same length one after the other, equal but for one character: not the last one.
      { doc: { id: 'r8', _rev: '5-ab' }, id: 'r8' },
      { doc: { id: 'r9', _rev: '6-cb' }, id: 'r9' },
      { doc: { id: 'r10', _rev: '7-ac' }, id: 'r10' },
      // Repeated strings, the id among them, stored once.
      { doc: { id: 'repeated-id', a: 'repeated-id', b: 'same text', c: 'same text', d: 'short', e: 'short', f: ['same text'] }, id: 'repeated-id' },
      { doc: { z: 1, a: null, m: '', n: 0, f: false, t: true, e: {}, l: [], o: { x: [1, { y: null }] }, s: 'é\u{1F600}"\\', u: undefined, neg: -0, big: 1e300, id: 'k' }, id: 'k' },
      // Integer-like keys come first in JavaScript's own order, as JSON.parse makes them.
      { doc: { b: 1, 2: 'two', 1: 'one', id: 'n' }, id: 'n' },
      // A primary key that is not the row's id is stored as a value.
      { doc: { id: 'other', v: 1 }, id: 'mine' },
      // No values at all, and a non-string primary key.
      { doc: { id: 7 }, id: '7' },
      { doc: {}, id: 'empty' },
      // `__proto__` as an own key: stored as plain JSON.
      { doc: JSON.parse('{"id":"p","__proto__":{"x":1}}') as Json, id: 'p' },
    ];
    for (const { doc, id } of docs) {
      const back = roundTrip(codec, doc, id);
      const viaJson = JSON.parse(JSON.stringify(doc)) as Json;
      expect(back).toEqual(viaJson);
      expect(Object.keys(back as Json)).toEqual(Object.keys(viaJson));
      expect(JSON.stringify(back)).toBe(JSON.stringify(viaJson));
    }
  });

  it('leaves key names, the id, `_meta`, repeated strings and constants out of the row, and hands out fresh empty objects', () => {
    const codec = new DocCodec(memoryDb());
    const row = { id: 'x1', lwt: LWT };
    const doc = { id: 'x1', firstName: 'Ann', location: '', tagId: null, variables: {}, groupIds: [], createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-01T00:00:00.000Z', _meta: { lwt: LWT } };
    const text = codec.encode(doc, row, 'id');
    expect(text).toMatch(/^\[\d+,"Ann","2026-01-01T00:00:00.000Z"\]$/);
    const a = codec.decode(text, row);
    const b = codec.decode(text, row);
    expect(a).toEqual(doc);
    expect(a['variables']).not.toBe(b['variables']);
    expect(a['groupIds']).not.toBe(b['groupIds']);
    expect(a['_meta']).not.toBe(b['_meta']);
    // A row written before (a JSON object) reads as it is.
    expect(codec.decode(JSON.stringify(doc), row)).toEqual(doc);
  });

  it('writes the shapes a write uses in that write, so a rolled-back write leaves no dangling shape', () => {
    const path = join(tempDir('doc-codec-'), 'f.sqlite');
    const db = new Database(path);
    db.exec(shapesTableSql);
    db.exec('CREATE TABLE docs (id TEXT PRIMARY KEY, doc TEXT NOT NULL)');
    const codec = new DocCodec(db);
    const put = db.prepare('INSERT INTO docs (id, doc) VALUES (?, ?)');
    const doc = { id: 'a', shapeOnlyHere: 1, _rev: '1-tokenOnlyHere' };
    // The first write that uses the shape fails after encoding: nothing of it is in the file.
    expect(() =>
      db.transaction(() => {
        put.run('a', codec.encode(doc, { id: 'a', lwt: 1 }, 'id'));
        codec.flush();
        throw new Error('disk full');
      })(),
    ).toThrow('disk full');
    expect(db.prepare('SELECT count(*) FROM doc_shapes').pluck().get()).toBe(0);
    expect(db.prepare('SELECT count(*) FROM doc_strings').pluck().get()).toBe(0);
    // The next write of the same shape (known in memory now) writes it again.
    db.transaction(() => {
      put.run('a', codec.encode(doc, { id: 'a', lwt: 1 }, 'id'));
      codec.flush();
    })();
    db.close();
    // A fresh connection (a reopened file) reads the row.
    const again = new Database(path, { readonly: true });
    const row = again.prepare<[], { id: string; doc: string }>('SELECT id, doc FROM docs').get();
    expect(row && new DocCodec(again).decode(row.doc, { id: row.id, lwt: 1 })).toEqual(doc);
    again.close();
  });

  it('refuses a row whose shape the file does not hold, or whose values do not fit its shape', () => {
    const codec = new DocCodec(memoryDb());
    const row = { id: 'a', lwt: 1 };
    expect(() => codec.decode('[12345,"x"]', row)).toThrow(/shape 12345/);
    const text = codec.encode({ id: 'a', v: 'x' }, row, 'id');
    expect(() => codec.decode(text.replace(']', ',"extra"]'), row)).toThrow(/holds 2 values/);
  });

  it('finds a known shape again for documents that differ only where a shape tells them apart', () => {
    // encode finds a shape it used before by the document's entries as numbers (the fast path), not
    // by its text: documents alike in every way but one (an entry's constant, which earlier field a
    // repeat copies, an id suffix, key order, a key more) must each come back as JSON gives them.
    const codec = new DocCodec(memoryDb());
    const random = seededRandom(7);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)] as T;
    const docs: { doc: Json; id: string }[] = [
      // Pairs whose entries differ only in what a number after the entry says.
      { doc: { id: 'c1', a: 'same text', b: 'other text', c: 'same text' }, id: 'c1' },
      { doc: { id: 'c1', a: 'other text', b: 'same text', c: 'same text' }, id: 'c1' },
      { doc: { id: 'c2', a: 'same text', b: 'other text', c: ['same text'] }, id: 'c2' },
      { doc: { id: 'c2', a: 'other text', b: 'same text', c: ['same text'] }, id: 'c2' },
      { doc: { id: 'abcdefg|0', itemId: 'abcdefg' }, id: 'abcdefg|0' },
      { doc: { id: 'abcdefg|12', itemId: 'abcdefg' }, id: 'abcdefg|12' },
      // A constant for another, the same keys in another order, one key more.
      { doc: { id: 'k1', a: '', b: 0 }, id: 'k1' },
      { doc: { id: 'k1', a: '0', b: false }, id: 'k1' },
      { doc: { id: 'k1', b: '', a: 0 }, id: 'k1' },
      { doc: { id: 'k1', a: '', b: 0, c: null }, id: 'k1' },
    ];
    for (let n = 0; n < 400; n++) {
      const id = `lead-${pick(['aaaaaaa', 'bbbbbbbb'])}${pick(['', '|0', '|12', '-x'])}`;
      const text = pick(['same text', 'other text', id, id.slice(0, 7), id.slice(0, 8)]);
      const doc: Json = { id: pick([id, 'not-the-id']) };
      const fields = pick([['a', 'b', 'c'], ['b', 'a', 'c'], ['a', 'b'], ['a', 'b', 'c', 'd']]);
      for (const f of fields) doc[f] = pick([null, '', '0', '1', false, true, 0, -0, {}, [], 'short', text, [text], { x: 1 }, 3.5, undefined]);
      doc['_rev'] = pick(['1-abc', '2-abc', '1-def', '01-x', 'nope']);
      doc['_meta'] = pick([{ lwt: LWT }, { lwt: LWT + 1 }, { lwt: LWT, x: 1 }]);
      docs.push({ doc, id });
    }
    // Twice: the second pass meets only shapes the first one made.
    for (let pass = 0; pass < 2; pass++) {
      for (const { doc, id } of docs) {
        const back = roundTrip(codec, doc, id);
        expect(JSON.stringify(back)).toBe(JSON.stringify(doc));
      }
    }
  });

  it('numbers keys and id suffixes from the start again past their limits, each shape still found by its own entries', () => {
    // encode numbers a file's top-level keys (10,000 at most) and id suffixes (1,000) in memory;
    // past either it starts again, and the shapes it found by the old numbers must not be found by
    // the new ones: every document encodes as it did and comes back as JSON gives it.
    const codec = new DocCodec(memoryDb());
    const docs: { doc: Json; id: string }[] = [];
    // 1,200 suffixes after one item id, then 10,200 keys: both limits passed, the first twice over.
    for (let i = 0; i < 1200; i++) docs.push({ doc: { id: `abcdefg|${i}`, itemId: 'abcdefg', n: i }, id: `abcdefg|${i}` });
    for (let i = 0; i < 10_200; i++) docs.push({ doc: { id: `k${i}`, [`field${i}`]: 'value', [`field${i + 1}`]: i }, id: `k${i}` });
    const first = docs.map(({ doc, id }) => codec.encode(doc, { id, lwt: LWT }, 'id'));
    const again = docs.map(({ doc, id }) => codec.encode(doc, { id, lwt: LWT }, 'id'));
    expect(again).toEqual(first);
    docs.forEach(({ doc, id }, i) => expect(JSON.stringify(codec.decode(first[i] as string, { id, lwt: LWT }))).toBe(JSON.stringify(doc)));
    // The same documents in a fresh codec of another file give the same shapes (the numbering never
    // reaches the stored text).
    const fresh = new DocCodec(memoryDb());
    expect(docs.map(({ doc, id }) => fresh.encode(doc, { id, lwt: LWT }, 'id'))).toEqual(first);
  });
});
