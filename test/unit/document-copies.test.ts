/**
 * Documents the desktop reads, copies and hands out (shared/json-clone.ts, the Store's copies in
 * electron/backend/store-documents.ts, the SQLite storage's decoding in doc-codec.ts) stay objects
 * in V8's fast form. Built key by key, an object of more than ~16 keys (a lead has ~40) becomes a
 * hash table: ~3.4 KB a lead instead of ~0.5, and every later read, copy or JSON.stringify of it
 * is slower (an import made and dropped several such copies of each of its leads).
 */
import { setFlagsFromString } from 'node:v8';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { DocCodec, shapesTableSql } from '../../electron/backend/storage/sqlite/doc-codec.ts';
import { storeCopy, stripRxFields } from '../../electron/backend/store-documents.ts';
import { cloneJson } from '../../shared/json-clone.ts';
import { newLead } from '../../shared/model/factories.ts';

type Json = Record<string, unknown>;

setFlagsFromString('--allow-natives-syntax');
// Compiled after the flag: V8's own test of an object's form.
const hasFastProperties = new Function('o', 'return %HasFastProperties(o)') as (o: object) => boolean;

const LWT = 1764400000000.01;
const lead = newLead({ id: 'a0000000-0000-4000-8000-000000000001', workspaceId: 'w', now: '2026-01-01T00:00:00.000Z' }, 'g', {
  firstName: 'Ann', lastName: 'Lee', email: 'ann@example.test', company: 'Acme', variables: { c1: 'x' },
}) as unknown as Json;
const stored: Json = { ...lead, _deleted: false, _attachments: {}, _rev: '1-abc', _meta: { lwt: LWT } };

describe('document copies', () => {
  it('a lead (~40 keys) read from its row, copied and handed out is an object in fast form, equal to its source', () => {
    expect(Object.keys(lead).length).toBeGreaterThan(30);
    const db = new Database(':memory:');
    db.exec(shapesTableSql);
    const codec = new DocCodec(db);
    const id = lead.id as string;
    const decoded = codec.decode(codec.encode(stored, { id, lwt: LWT }, 'id'), { id, lwt: LWT });
    const copies: [string, Json, Json][] = [
      ['cloneJson', cloneJson(lead), lead],
      ['decode', decoded, stored],
      // A second document of the same shape, from the shape's template again.
      ['decode again', codec.decode(codec.encode({ ...stored, firstName: 'Bo' }, { id, lwt: LWT }, 'id'), { id, lwt: LWT }), { ...stored, firstName: 'Bo' }],
      ['stripRxFields', stripRxFields(decoded), lead],
      ['storeCopy', storeCopy(decoded), lead],
    ];
    for (const [what, copy, source] of copies) {
      expect(hasFastProperties(copy), what).toBe(true);
      expect(JSON.stringify(copy), what).toBe(JSON.stringify(source));
    }
    db.close();
  });

  it('copies are deep: changing a copy changes neither the stored document nor another copy', () => {
    const copy = storeCopy(stored);
    const clone = cloneJson(copy);
    (copy.variables as Json).c1 = 'changed';
    (copy.groupIds as string[]).push('h');
    expect(stored.variables).toEqual({ c1: 'x' });
    expect(stored.groupIds).toEqual(['g']);
    expect(clone.variables).toEqual({ c1: 'x' });
    expect(stripRxFields(stored).variables).toBe(stored.variables);
    expect(Object.keys(stripRxFields(stored))).toEqual(Object.keys(lead));
  });

  it('an own `__proto__` key, as JSON.parse makes it, stays a key of the copy and never becomes its prototype', () => {
    const doc = JSON.parse('{"id":"p","__proto__":{"polluted":true},"n":[{"__proto__":{"deep":1}}]}') as Json;
    const copy = cloneJson(doc);
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect(Object.keys(copy)).toEqual(['id', '__proto__', 'n']);
    expect(JSON.stringify(copy)).toBe(JSON.stringify(doc));
    expect((copy as { polluted?: unknown }).polluted).toBeUndefined();
    expect(Object.getPrototypeOf((copy.n as Json[])[0])).toBe(Object.prototype);
  });
});
