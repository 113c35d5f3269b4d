/**
 * The SQLite storage (electron/backend/storage/sqlite/) against RxDB's memory storage, the
 * reference implementation of the RxStorage interface: the same seeded random sequence of bulk
 * writes (inserts, updates with revisions, stale and missing `previous` (conflicts), deletes,
 * undeletes, inserts of deleted documents), queries, counts, reads by id, changed-documents
 * paging, change events and cleanups goes to both, and every answer must be the same. Our real
 * collection schemas are used (shared/model: they declare no RxDB indexes yet, so RxDB's default
 * ones), plus the leads and enrollments schemas with the indexes the desktop will want, and a
 * schema whose values stress index strings (trailing spaces, control characters, emoji and
 * private-use characters, numbers off the schema's grid and range, missing values). Halfway and at
 * the end our storage is closed and reopened, so the answers come from disk. Lead text search is
 * checked against the Store's `contains` semantics (shared/query.ts) on the same documents.
 * A second history drives a collection and a replication meta instance of it in one database, as
 * RxDB's replication does (pulled documents, their assumed-master states, local edits, conflict
 * states, deletes and purges), where the SQLite storage keeps most master states by reference to
 * the collection's document (master-states.ts): the meta instance's answers must stay the memory
 * storage's. Both run again with every pulled write a page written over turns of the event loop
 * (file.ts, openPage): in the replication history each page's meta write joins its transaction.
 */
import { describe, expect, it } from 'vitest';
import { fillWithDefaultSettings, getChangedDocumentsSince, getRxReplicationMetaInstanceSchema, normalizeMangoQuery, now, prepareQuery, randomToken } from 'rxdb';
import type { BulkWriteRow, MangoQuery, MangoQuerySelector, RxDocumentData, RxJsonSchema, RxStorage, RxStorageDefaultCheckpoint } from 'rxdb';
import { getRxStorageMemory } from 'rxdb/plugins/storage-memory';
import { COLLECTIONS } from '../../shared/model/index.ts';
import { newEnrollment, newLead, newStage } from '../../shared/model/factories.ts';
import { LEAD_QUERY_FIELDS } from '../../shared/ops/lead-search.ts';
import { getRxStorageSqlite, sqliteInstanceOf } from '../../electron/backend/storage/sqlite/storage.ts';
import { referencedStates } from '../../electron/backend/storage/sqlite/master-states.ts';
import { SLICE_TUNING } from '../../electron/backend/storage/sqlite/file.ts';
import { seededRandom } from '../support/deterministic.ts';
import { openInstance, tempDir } from './sqlite-storage.fixtures.ts';

type Json = Record<string, unknown>;
type Doc = RxDocumentData<Json>;
type Rnd = () => number;

const pick = <T>(r: Rnd, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T;
const chance = (r: Rnd, p: number) => r() < p;

/** One collection under test: its schema, how to make and change documents, and the values its
 * queries use. */
type Case = {
  name: string;
  schema: RxJsonSchema<Doc>;
  fresh: (id: string, r: Rnd) => Json;
  change: (doc: Json, r: Rnd) => Json;
  /** Fields and value pools for selectors. */
  fields: Record<string, readonly unknown[]>;
  /** Scalar fields to sort by. */
  sortable: readonly string[];
  /** Text search fields, checked against `contains` when set. */
  text?: readonly string[];
};

const ISO = ['2026-01-01T00:00:00.000Z', '2026-01-02T08:30:00.000Z', '2026-02-10T12:00:00.000Z', '2026-03-05T17:45:00.000Z'];
const GROUPS = ['g-1', 'g-2', 'g-3'];
const FIRST = ['Ann', 'Bob', 'Ünal', 'Zoë', 'Li', 'ann-marie'];
const LAST = ['Smith', 'Okafor', 'Smithers', 'Müller', 'Ng', 'de la Cruz'];

const filled = (schema: unknown, indexes?: string[][]): RxJsonSchema<Doc> =>
  fillWithDefaultSettings({ ...(schema as RxJsonSchema<Json>), ...(indexes ? { indexes } : {}) }) as RxJsonSchema<Doc>;

const leadFields = (r: Rnd): Json => {
  const firstName = pick(r, FIRST);
  const lastName = pick(r, LAST);
  const slug = `${firstName}.${lastName}${Math.floor(r() * 50)}`.toLowerCase().replace(/\s+/g, '');
  return {
    firstName,
    lastName,
    fullName: `${firstName} ${lastName}`,
    email: chance(r, 0.8) ? `${slug}@acme${Math.floor(r() * 3)}.example` : '',
    company: pick(r, ['Acme', 'Globex', 'İstanbul Ltd', '']),
    phone: chance(r, 0.5) ? `+1555${Math.floor(r() * 1e7)}` : '',
    socialUrl: chance(r, 0.5) ? `https://social.example/in/${slug}` : '',
    leadFitScore: Math.floor(r() * 100),
    doNotContact: chance(r, 0.2),
    tagId: chance(r, 0.5) ? null : pick(r, ['t-1', 't-2']),
    createdAt: pick(r, ISO),
    updatedAt: pick(r, ISO),
    leadGroupId: pick(r, GROUPS),
  };
};

const leadCase = (name: string, indexes?: string[][]): Case => ({
  name,
  schema: filled(COLLECTIONS.leads.schema, indexes),
  fresh: (id, r) => ({ ...newLead({ id, workspaceId: 'w-1', now: pick(r, ISO) }, pick(r, GROUPS)), ...leadFields(r) }),
  change: (doc, r) => ({ ...doc, ...(chance(r, 0.5) ? leadFields(r) : { updatedAt: pick(r, ISO), leadFitScore: Math.floor(r() * 100) }) }),
  fields: { createdAt: ISO, updatedAt: ISO, leadGroupId: GROUPS, firstName: FIRST, lastName: LAST, doNotContact: [true, false], leadFitScore: [0, 10, 50, 99], tagId: [null, 't-1', 't-2'] },
  sortable: ['createdAt', 'updatedAt', 'leadGroupId', 'lastName', 'leadFitScore', 'doNotContact'],
  text: LEAD_QUERY_FIELDS,
});

const STATUSES = ['IN_PROGRESS', 'PAUSED', 'COMPLETED', 'STOPPED'];
const enrollmentCase: Case = {
  name: 'enrollments (real schema + index [campaignId, updatedAt])',
  schema: filled(COLLECTIONS.enrollments.schema, [['campaignId', 'updatedAt']]),
  fresh: (id, r) => ({ ...newEnrollment({ id, workspaceId: 'w-1', now: pick(r, ISO) }, `lead-${Math.floor(r() * 9)}`, pick(r, ['c-1', 'c-2'])), status: pick(r, STATUSES), attempts: Math.floor(r() * 4) }),
  change: (doc, r) => ({ ...doc, status: pick(r, STATUSES), updatedAt: pick(r, ISO), nextActionAt: chance(r, 0.3) ? null : pick(r, ISO), attempts: Math.floor(r() * 4) }),
  fields: { status: STATUSES, updatedAt: ISO, campaignId: ['c-1', 'c-2'], nextActionAt: [null, ...ISO], attempts: [0, 1, 2, 3] },
  sortable: ['status', 'updatedAt', 'createdAt', 'attempts', 'nextActionAt'],
};

const stageCase: Case = {
  name: 'stages (real schema)',
  schema: filled(COLLECTIONS.stages.schema),
  fresh: (id, r) => newStage({ id, workspaceId: 'w-1', now: pick(r, ISO) }, pick(r, ['New', 'Won', 'Lost']), pick(r, ['NEW', 'WON', 'LOST']), '#336699', Math.floor(r() * 5)),
  change: (doc, r) => ({ ...doc, position: Math.floor(r() * 5), name: pick(r, ['New', 'Won', 'Lost', 'Later']) }),
  fields: { name: ['New', 'Won', 'Lost', 'Later'], category: ['NEW', 'WON', 'LOST'], position: [0, 2, 4] },
  sortable: ['position', 'name', 'createdAt'],
};

/** Values RxDB's index strings do not order as its comparator does, or that UTF-8 and UTF-16
 * order differently. */
const ODD_TEXT = ['a', 'a ', 'a\t', 'a\u0001b', 'ab', 'b', 'é', '🚀', '\ue000', 'Ｆ', '', 'a  b', 'zz'];
const ODD_NUMBERS = [0, 0.1, 0.15, 1, 2.5, 12.34, 99.9, 100, -3, 150];
const edgeCase: Case = {
  name: 'edge values (strings, numbers, booleans, missing values in indexes)',
  schema: filled({
    version: 0,
    primaryKey: 'id',
    type: 'object',
    properties: {
      id: { type: 'string', maxLength: 40 },
      label: { type: 'string', maxLength: 6 },
      score: { type: 'number', minimum: 0, maximum: 100, multipleOf: 0.1 },
      flag: { type: 'boolean' },
      note: { type: 'string' },
    },
    required: ['id'],
    indexes: [['label'], ['score'], ['flag', 'score'], ['label', 'score']],
  }),
  fresh: (id, r) => edgeFields(r, { id }),
  change: (doc, r) => edgeFields(r, { id: doc.id }),
  fields: { label: ODD_TEXT, score: ODD_NUMBERS, flag: [true, false], note: ['x', 'y'] },
  sortable: ['label', 'score', 'flag'],
};

function edgeFields(r: Rnd, base: Json): Json {
  const out: Json = { ...base };
  if (chance(r, 0.9)) out.label = pick(r, ODD_TEXT);
  if (chance(r, 0.9)) out.score = pick(r, ODD_NUMBERS);
  if (chance(r, 0.9)) out.flag = chance(r, 0.5);
  out.note = pick(r, ['x', 'y']);
  return out;
}

/** A random selector over the case's fields (and `_deleted`, as RxDB adds it). */
function randomSelector(c: Case, r: Rnd): MangoQuerySelector<Doc> {
  const parts: Json[] = [];
  const fields = Object.keys(c.fields);
  const one = (): Json => {
    const field = pick(r, fields);
    const values = c.fields[field] ?? [];
    const v = pick(r, values);
    const op = pick(r, ['$eq', '$eq', '$ne', '$gt', '$gte', '$lt', '$lte', '$in', '$range']);
    if (op === '$in') return { [field]: { $in: [v, pick(r, values)] } };
    if (op === '$range') {
      const [lo, hi] = [v, pick(r, values)].sort();
      return { [field]: { $gte: lo, $lt: hi } };
    }
    return { [field]: { [op]: v } };
  };
  for (let i = Math.floor(r() * 3); i > 0; i--) parts.push(one());
  if (chance(r, 0.15)) parts.push({ $or: [one(), one()] });
  const selector: Json = {};
  for (const p of parts) {
    for (const [k, v] of Object.entries(p)) {
      // Two conditions on one field become an $and (a plain merge would drop one).
      if (k in selector) selector.$and = [...((selector.$and as Json[] | undefined) ?? []), { [k]: v }];
      else selector[k] = v;
    }
  }
  if (chance(r, 0.7)) selector._deleted = { $eq: false };
  return selector as MangoQuerySelector<Doc>;
}

function randomQuery(c: Case, r: Rnd): MangoQuery<Doc> {
  const sort = Array.from({ length: Math.floor(r() * 3) }, () => ({ [pick(r, c.sortable)]: pick(r, ['asc', 'desc'] as const) }));
  const unique = [...new Map(sort.map((s) => [Object.keys(s)[0], s])).values()];
  const q: MangoQuery<Doc> = { selector: randomSelector(c, r) };
  if (unique.length > 0) q.sort = unique as MangoQuery<Doc>['sort'];
  if (chance(r, 0.6)) q.limit = 1 + Math.floor(r() * 12);
  if (chance(r, 0.3)) q.skip = Math.floor(r() * 4);
  return q;
}

/** Everything one bulk write emitted, without object identity. */
type Emitted = { context: string; events: [string, string, unknown][]; checkpoint: { id: unknown; lwt: unknown } }[];

async function runCase(c: Case, seed: number, steps: number): Promise<void> {
  const r = seededRandom(seed);
  const dir = tempDir('sqlite-diff-');
  const token = randomToken(10);
  const names = { databaseName: `diff${randomToken(6)}`, collectionName: c.name.split(' ')[0] ?? 'items', token };
  // A tiny document cache, so reads come from SQLite and from the cache alike.
  const sqlite = () => getRxStorageSqlite({ directory: dir, documentCache: 7, textSearch: c.text ? { [names.collectionName]: c.text } : {} }) as RxStorage<unknown, object>;
  let ours = await openInstance<Json>(sqlite(), c.schema, names);
  const ref = await openInstance<Json>(getRxStorageMemory() as RxStorage<unknown, object>, c.schema, { ...names, databaseName: `ref${randomToken(8)}` });
  const ids = Array.from({ length: 30 }, (_, i) => `${c.name.slice(0, 3)}-${String(i).padStart(2, '0')}`);

  const emittedOurs: Emitted = [];
  const emittedRef: Emitted = [];
  const record = (into: Emitted) => (b: { context: string; events: { operation: string; documentId: string; documentData: unknown }[]; checkpoint: unknown }) => {
    const cp = b.checkpoint as { id: unknown; lwt: unknown };
    into.push({ context: b.context, events: b.events.map((e) => [e.operation, e.documentId, e.documentData]), checkpoint: { id: cp.id, lwt: cp.lwt } });
  };
  let subOurs = ours.changeStream().subscribe(record(emittedOurs));
  const subRef = ref.changeStream().subscribe(record(emittedRef));

  const stored = async (id: string): Promise<Doc | undefined> => (await ref.findDocumentsById([id], true))[0];

  const write = async (step: number) => {
    const rows: BulkWriteRow<Json>[] = [];
    const used = new Set<string>();
    for (let k = 1 + Math.floor(r() * 6); k > 0; k--) {
      const id = pick(r, ids);
      if (used.has(id)) continue;
      used.add(id);
      const cur = await stored(id);
      const meta = { lwt: now() };
      if (!cur) {
        rows.push({ document: { ...c.fresh(id, r), _deleted: chance(r, 0.1), _rev: `1-n${step}`, _meta: meta, _attachments: {} } });
        continue;
      }
      const height = Number(cur._rev.split('-')[0]) + 1;
      const next: Doc = { ...c.change(cur, r), _deleted: chance(r, 0.2) ? !cur._deleted : cur._deleted, _rev: `${height}-s${step}`, _meta: meta, _attachments: {} };
      const how = r();
      if (how < 0.75) rows.push({ previous: cur, document: next });
      else if (how < 0.88) rows.push({ previous: { ...cur, _rev: `${height - 1}-stale` }, document: next });
      else rows.push({ document: next });
    }
    const context = chance(r, 0.3) ? `replication-downstream-${step}` : `write-${step}`;
    const a = await ours.bulkWrite(structuredClone(rows), context);
    const b = await ref.bulkWrite(structuredClone(rows), context);
    const errors = (res: typeof a) => res.error.map((e) => ({ status: e.status, id: e.documentId, inDb: 'documentInDb' in e ? e.documentInDb : null }));
    expect(errors(a), `write ${step}`).toEqual(errors(b));
  };

  const compareQuery = async (step: number) => {
    const q = randomQuery(c, r);
    const prepared = prepareQuery(c.schema, normalizeMangoQuery(c.schema, q));
    const mine = (await ours.query(prepared)).documents;
    const theirs = (await ref.query(prepared)).documents;
    expect(mine, `query ${step} ${JSON.stringify(q)}`).toEqual(theirs);
    const counting = prepareQuery(c.schema, normalizeMangoQuery(c.schema, { selector: q.selector }));
    const n = await ours.count(counting);
    expect(n.count, `count ${step} ${JSON.stringify(q.selector)}`).toBe((await ref.count(counting)).count);
    expect(n.mode).toBe(counting.queryPlan.selectorSatisfiedByIndex ? 'fast' : 'slow');
  };

  const compareChanges = async (step: number) => {
    const limit = 1 + Math.floor(r() * 9);
    let a: RxStorageDefaultCheckpoint | undefined;
    let b: RxStorageDefaultCheckpoint | undefined;
    for (let page = 0; page < 100; page++) {
      const mine = await getChangedDocumentsSince(ours, limit, a);
      const theirs = await getChangedDocumentsSince(ref, limit, b);
      expect(mine.documents, `changes ${step} page ${page}`).toEqual(theirs.documents);
      expect({ id: mine.checkpoint.id, lwt: mine.checkpoint.lwt }).toEqual(theirs.checkpoint);
      if (mine.documents.length === 0) return;
      a = mine.checkpoint;
      b = theirs.checkpoint;
    }
    throw new Error('the changes feed did not end');
  };

  const compareReads = async () => {
    const asked = [...ids.filter(() => chance(r, 0.3)), 'missing', pick(r, ids)];
    const withDeleted = chance(r, 0.5);
    expect(await ours.findDocumentsById(asked, withDeleted)).toEqual(await ref.findDocumentsById(asked, withDeleted));
  };

  const compareSearch = async () => {
    const fields = c.text;
    if (!fields) return;
    const live = (await ref.query(prepareQuery(c.schema, normalizeMangoQuery(c.schema, { selector: { _deleted: { $eq: false } } })))).documents;
    const sample = live.length > 0 ? pick(r, live) : undefined;
    const from = String(sample?.[pick(r, fields)] ?? 'ann');
    const start = Math.floor(r() * Math.max(1, from.length - 1));
    const needle = chance(r, 0.2) ? pick(r, ['ı', 'zz', 'SMI', 'ü', '"q', '.']) : from.slice(start, start + 1 + Math.floor(r() * 5));
    const contains = (d: Doc) => fields.some((f) => typeof d[f] === 'string' && (d[f] as string).toLowerCase().includes(needle.toLowerCase()));
    const limit = 1 + Math.floor(r() * 8);
    const inst = sqliteInstanceOf<Json>(ours);
    if (!inst) throw new Error('not the SQLite storage');
    const ordered = c.schema.indexes?.some((i) => Array.isArray(i) && i.includes('createdAt'));
    if (ordered) {
      const expected = live
        .filter(contains)
        .sort((x, y) => (x.createdAt === y.createdAt ? (String(x.id) < String(y.id) ? 1 : -1) : String(x.createdAt) < String(y.createdAt) ? 1 : -1))
        .slice(0, limit)
        .map((d) => d.id);
      expect(inst.searchText(needle, limit, { index: ['createdAt'], direction: 'desc' }), `search ${JSON.stringify(needle)}`).toEqual(expected);
    } else {
      expect(inst.searchText(needle, 1000).sort(), `search ${JSON.stringify(needle)}`).toEqual(live.filter(contains).map((d) => d.id).sort());
    }
  };

  const reopen = async () => {
    subOurs.unsubscribe();
    await ours.close();
    ours = await openInstance<Json>(sqlite(), c.schema, names);
    subOurs = ours.changeStream().subscribe(record(emittedOurs));
  };

  for (let step = 0; step < steps; step++) {
    const what = r();
    if (what < 0.5) await write(step);
    else if (what < 0.8) await compareQuery(step);
    else if (what < 0.87) await compareChanges(step);
    else if (what < 0.94) await compareReads();
    else if (what < 0.99) await compareSearch();
    else {
      expect(await ours.cleanup(0)).toBe(await ref.cleanup(0));
    }
    if (step === Math.floor(steps / 2)) await reopen();
  }
  expect(emittedOurs).toEqual(emittedRef);
  await reopen();
  for (let i = 0; i < 25; i++) await compareQuery(steps + i);
  await compareChanges(steps);
  await compareReads();
  await compareSearch();
  subOurs.unsubscribe();
  subRef.unsubscribe();
}

const CASES: Case[] = [
  leadCase('leads (real schema)'),
  leadCase('leads (+ indexes createdAt, [leadGroupId, createdAt], updatedAt, [doNotContact, createdAt])', [['createdAt'], ['leadGroupId', 'createdAt'], ['updatedAt'], ['doNotContact', 'createdAt']]),
  enrollmentCase,
  stageCase,
  edgeCase,
];

describe('SQLite storage against RxDB’s memory storage: one seeded random history, the same answers', () => {
  for (const [i, c] of CASES.entries()) {
    it(c.name, async () => {
      await runCase(c, 1000 + i, c === edgeCase ? 1500 : 400);
    });
  }
});

/** The assumed-master state of a collection document, as RxDB's replication writes it (the
 * document without `_meta`, `_rev`, `_attachments`). */
const stateOf = (doc: Doc): Json => {
  const { _meta: _m, _rev: _r, _attachments: _a, ...rest } = doc;
  return rest;
};

async function runReplicationCase(seed: number, steps: number): Promise<void> {
  const r = seededRandom(seed);
  const dir = tempDir('sqlite-diff-meta-');
  const c = leadCase('leads');
  const metaSchema = getRxReplicationMetaInstanceSchema(c.schema, false) as unknown as RxJsonSchema<Doc>;
  const token = randomToken(10);
  const dbName = `diffmeta${randomToken(6)}`;
  const refDb = `ref${randomToken(8)}`;
  const sqlite = () => getRxStorageSqlite({ directory: dir, documentCache: 5 }) as RxStorage<unknown, object>;
  const memory = getRxStorageMemory() as RxStorage<unknown, object>;
  const forkNames = { databaseName: dbName, collectionName: 'leads', token };
  const metaNames = { databaseName: dbName, collectionName: 'rx-replication-meta-abc', token };
  let fork = await openInstance<Json>(sqlite(), c.schema, forkNames);
  let meta = await openInstance<Json>(sqlite(), metaSchema, metaNames);
  const refFork = await openInstance<Json>(memory, c.schema, { ...forkNames, databaseName: refDb });
  const refMeta = await openInstance<Json>(memory, metaSchema, { ...metaNames, databaseName: refDb });
  const ids = Array.from({ length: 24 }, (_, i) => `lead-${String(i).padStart(2, '0')}`);
  const metaId = (id: string) => `${id}|0`;

  const both = async (ours: typeof fork, ref: typeof fork, rows: BulkWriteRow<Json>[], context: string, step: number) => {
    const a = await ours.bulkWrite(structuredClone(rows), context);
    const b = await ref.bulkWrite(structuredClone(rows), context);
    expect(a.error.map((e) => [e.status, e.documentId]), `${context} ${step}`).toEqual(b.error.map((e) => [e.status, e.documentId]));
  };
  const current = async (inst: typeof fork, id: string): Promise<Doc | undefined> => (await inst.findDocumentsById([id], true))[0];
  const metaRow = async (id: string, docData: Json, step: number, isResolvedConflict?: string): Promise<BulkWriteRow<Json>> => {
    const previous = await current(refMeta, metaId(id));
    const height = previous ? Number(previous._rev.split('-')[0]) + 1 : 1;
    const document: Doc = { id: metaId(id), isCheckpoint: '0', itemId: id, docData, _attachments: {}, _deleted: false, _rev: `${height}-m${step}`, _meta: { lwt: now() } };
    if (isResolvedConflict) document.isResolvedConflict = isResolvedConflict;
    return previous ? { previous, document } : { document };
  };
  // A fork write: a new or changed document (maybe deleted), with the right previous.
  const forkRow = async (id: string, step: number, tag: string): Promise<BulkWriteRow<Json>> => {
    const cur = await current(refFork, id);
    if (!cur) return { document: { ...c.fresh(id, r), _deleted: false, _rev: `1-${tag}${step}`, _meta: { lwt: now() }, _attachments: {} } };
    const height = Number(cur._rev.split('-')[0]) + 1;
    return { previous: cur, document: { ...c.change(cur, r), _deleted: chance(r, 0.15) ? !cur._deleted : cur._deleted, _rev: `${height}-${tag}${step}`, _meta: { lwt: now() }, _attachments: {} } };
  };

  // A pulled page: the documents to the fork, then their master states to the meta instance.
  const pull = async (step: number) => {
    const page = [...new Set(Array.from({ length: 1 + Math.floor(r() * 6) }, () => pick(r, ids)))];
    const rows = await Promise.all(page.map((id) => forkRow(id, step, 'p')));
    await both(fork, refFork, rows, `replication-downstream-${step}`, step);
    const metaRows = await Promise.all(page.map(async (id) => metaRow(id, stateOf((await current(refFork, id)) as Doc), step)));
    await both(meta, refMeta, metaRows, 'replication-down-write-meta', step);
  };
  // A local edit of the fork, later maybe pushed: its state becomes the master state.
  const local = async (step: number) => {
    const id = pick(r, ids);
    await both(fork, refFork, [await forkRow(id, step, 'l')], `local-${step}`, step);
    if (chance(r, 0.5)) await both(meta, refMeta, [await metaRow(id, stateOf((await current(refFork, id)) as Doc), step)], 'replication-up-write-meta', step);
  };
  // A conflict: the meta instance gets a server state the fork does not hold.
  const conflict = async (step: number) => {
    const id = pick(r, ids);
    const cur = await current(refFork, id);
    if (!cur) return;
    await both(meta, refMeta, [await metaRow(id, { ...stateOf(cur), firstName: `server ${step}` }, step, cur._rev)], 'replication-up-write-conflict-meta', step);
  };
  const compare = async (step: number) => {
    const asked = [...ids.filter(() => chance(r, 0.4)).map(metaId), 'nothing|0'];
    expect(await meta.findDocumentsById(asked, true), `meta reads ${step}`).toEqual(await refMeta.findDocumentsById(asked, true));
    const q = prepareQuery(metaSchema, normalizeMangoQuery(metaSchema, { selector: {}, sort: [{ id: 'asc' }] }));
    expect((await meta.query(q)).documents, `meta query ${step}`).toEqual((await refMeta.query(q)).documents);
    const fq = prepareQuery(c.schema, normalizeMangoQuery(c.schema, { selector: {}, sort: [{ id: 'asc' }] }));
    expect((await fork.query(fq)).documents, `fork query ${step}`).toEqual((await refFork.query(fq)).documents);
    let a: RxStorageDefaultCheckpoint | undefined;
    let b: RxStorageDefaultCheckpoint | undefined;
    for (;;) {
      const mine = await getChangedDocumentsSince(meta, 5, a);
      const theirs = await getChangedDocumentsSince(refMeta, 5, b);
      expect(mine.documents, `meta changes ${step}`).toEqual(theirs.documents);
      if (mine.documents.length === 0) break;
      a = mine.checkpoint;
      b = theirs.checkpoint;
    }
  };
  let implicitSeen = 0;
  const countImplicit = () => {
    const inst = sqliteInstanceOf<Json>(meta);
    if (!inst) throw new Error('not the SQLite storage');
    const { file, table } = inst.internalsForTests;
    const n = referencedStates(file.db, table.table).byRef;
    implicitSeen = Math.max(implicitSeen, n);
  };
  const reopen = async (metaFirst: boolean) => {
    await meta.close();
    await fork.close();
    if (metaFirst) {
      meta = await openInstance<Json>(sqlite(), metaSchema, metaNames);
      fork = await openInstance<Json>(sqlite(), c.schema, forkNames);
    } else {
      fork = await openInstance<Json>(sqlite(), c.schema, forkNames);
      meta = await openInstance<Json>(sqlite(), metaSchema, metaNames);
    }
  };

  for (let step = 0; step < steps; step++) {
    const what = r();
    if (what < 0.35) await pull(step);
    else if (what < 0.55) await local(step);
    else if (what < 0.62) await conflict(step);
    else if (what < 0.9) await compare(step);
    else if (what < 0.93) expect(await fork.cleanup(0)).toBe(await refFork.cleanup(0));
    else if (what < 0.96) await reopen(chance(r, 0.5));
    countImplicit();
  }
  await reopen(true);
  await compare(steps);
  // The history must have exercised the by-reference rows, or this test checks nothing new.
  expect(implicitSeen).toBeGreaterThan(5);
}

describe('SQLite storage against RxDB’s memory storage: a collection and its replication meta instance', () => {
  it('pulled pages, local edits, conflict states, deletes, purges and reopening give the memory storage’s answers', async () => {
    await runReplicationCase(77, 600);
  });
  // Every pulled write a page written over turns of the event loop (file.ts, openPage), the
  // documents and their meta rows in one transaction: the same answers.
  it('the same with every pulled write sliced over turns of the event loop', async () => {
    const was = { ...SLICE_TUNING };
    Object.assign(SLICE_TUNING, { rows: 1, ms: 0 });
    try {
      await runReplicationCase(78, 600);
      await runCase(leadCase('leads (real schema)'), 1100, 400);
    } finally {
      Object.assign(SLICE_TUNING, was);
    }
  });
});
