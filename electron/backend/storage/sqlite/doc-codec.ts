/**
 * How a document is stored in its table's `doc` column: without its key names, and without the
 * values its row holds elsewhere, repeats or that say nothing.
 *
 * A document as JSON repeats every key name in every row: ~40 keys of a lead are ~550 bytes of its
 * ~1,100 (measured at 100k leads: the documents table was 2,053 bytes a lead, two rows per 4 KiB
 * page). Here the keys, in the document's order, are a "shape" stored once per file (table
 * `doc_shapes`), and the row holds `[shape id, value, value, ...]`: the values of the keys in that
 * order, except
 * - the primary key's value, which is the row's `id` column, and a value that is the id without a
 *   short suffix (a replication meta row's `itemId`, its id being `<itemId>|0`);
 * - `_meta` when it is `{lwt}` with the row's `lwt` column (RxDB's write time, in every document);
 * - a string equal to an earlier field's, alone or as the one member of an array (a lead's
 *   `updatedAt` equal to its `createdAt`, `socialUrl` to `leadIdentifier`, `groupIds` to
 *   `[leadGroupId]`): the shape names that field;
 * - values that are one of a few constants (null, '', '0', '1', false, true, 0, {} and []): the
 *   shape says which constant (a lead's many empty fields, `_attachments: {}`, `_deleted: false`,
 *   a replication meta row's `isCheckpoint: '0'`);
 * - `_rev` (`<height>-<token>`) is the height and the token's number in the file's table of tokens
 *   (`doc_strings`): a token is a database instance's or a replication's (`rx_storage_replication_`
 *   and 64 hex digits in every meta row), shared by many rows.
 * Decoding gives the object JSON.parse(JSON.stringify(doc)) gives: same keys in the same order,
 * same values, fresh objects for `{}`, `[]` and `_meta`. Rows written by an earlier version hold
 * the document as a JSON object (`{...}`, never `[`) and are read as such, so a file needs no
 * rewrite to be read (layout-upgrade.ts rewrites it, with progress, to win the bytes back).
 *
 * A shape's (and a token's) number is small (a few characters in every row), given out by the
 * file's codec in this process, which owns the file: one more than any the file or the codec knows,
 * never reused. Each write inserts the shapes and tokens its rows use (`INSERT OR IGNORE`, in the
 * write's own transaction), so a row never references one its file lacks, even after a write that
 * rolled back left a new one in memory only (the next write using it inserts it). A document with
 * a key JSON cannot give back as written (`__proto__`) is stored as plain JSON.
 */
import type { Database as SqliteDatabase, Statement } from 'better-sqlite3';

type Json = Record<string, unknown>;

/**
 * A shape as stored: per key,
 * - `"key"`: its value is the row's next value;
 * - `["key"]`: the primary key, the row's id;
 * - `["key", constant]`;
 * - `["key", "=", "other"]`: the value of the earlier key `other`;
 * - `["key", "=[]", "other"]`: an array of the value of the earlier key `other`;
 * - `["key", "id-", suffix]`: the row's id without `suffix`;
 * - `["key", "lwt", "meta"]`: `{lwt}` with the row's lwt;
 * - `["key", "rev", "token"]`: `<height>-<token>`, the row's next two values the height and the
 *   token's number.
 */
type StoredEntry = string | [string] | [string, unknown] | [string, string, string];

/** The columns of a row a document is decoded with: its id and its `lwt`. */
export type RowKeys = { id: string; lwt: number };

const SLOT = 0;
const CONSTANT = 1;
const EMPTY_OBJECT = 2;
const EMPTY_ARRAY = 3;
const PRIMARY = 4;
const COPY = 5;
const META = 6;
const ARRAY_COPY = 7;
const ID_PREFIX = 8;
const REV = 9;

const TAGGED: Record<string, number> = { '=': COPY, '=[]': ARRAY_COPY, 'id-': ID_PREFIX, lwt: META, rev: REV };

/** `template`: an object with the shape's keys in order (values null), made at its first decode. */
type Shape = { id: number; json: string; keys: string[]; kinds: Uint8Array; args: unknown[]; codes?: Int32Array; template?: Json };

/** The tables of a file's shapes and tokens. */
export const SHAPES_TABLE = 'doc_shapes';
export const STRINGS_TABLE = 'doc_strings';

export const shapesTableSql = `CREATE TABLE IF NOT EXISTS ${SHAPES_TABLE} (id INTEGER PRIMARY KEY, shape TEXT NOT NULL); CREATE TABLE IF NOT EXISTS ${STRINGS_TABLE} (id INTEGER PRIMARY KEY, text TEXT NOT NULL)`;

/** Top-level keys and id suffixes numbered at most (a file's top-level keys are the collections'
 * fields): past either, the numbering starts again (DocCodec.renumber). */
const NUMBERED_KEYS = 10_000;
const NUMBERED_SUFFIXES = 1_000;

/**
 * A shape's entries as numbers (encode): per key `(key number << 5) | entry`, where the entry is
 * one of these, and COPY, ARRAY_COPY and ID_PREFIX are followed by the number of the earlier key or
 * of the suffix. Key and suffix numbers are given out by the codec in this process only (never
 * stored), so equal codes are equal entries, and the shape's text is written from them (shapeText).
 */
const C_SLOT = 0;
const C_PRIMARY = 1;
const C_META = 2;
const C_EMPTY_OBJECT = 10;
const C_EMPTY_ARRAY = 11;
const C_COPY = 12;
const C_ARRAY_COPY = 13;
const C_ID_PREFIX = 14;
const C_REV = 15;

/** The constants kindOf gives CONSTANT, as JSON, by their entry code (3-9; C_EMPTY_OBJECT next). */
const CONSTANT_JSON = ['', '', '', 'null', '""', '"0"', '"1"', 'false', 'true', '0'];

/** The code of a constant entry (kindOf gave CONSTANT): one per constant JSON tells apart. */
function constantCode(v: unknown): number {
  switch (v) {
    case null:
      return 3;
    case '':
      return 4;
    case '0':
      return 5;
    case '1':
      return 6;
    case false:
      return 7;
    case true:
      return 8;
    default:
      // 0 (and -0, which JSON writes as 0).
      return 9;
  }
}

/** Strings at least this long are looked for among the earlier fields' values. */
const COPY_MIN = 6;

/** The most such strings of a document remembered (a lead has ~20). */
const SEEN_MAX = 64;

/** The longest suffix of the row's id a value may lack to be stored as the id. */
const ID_SUFFIX_MAX = 4;

/** A value's kind in a shape: a constant it stands for, or SLOT. */
function kindOf(v: unknown): number {
  switch (v) {
    case null:
    case '':
    case '0':
    case '1':
    case false:
    case true:
    case 0:
      return CONSTANT;
  }
  if (typeof v !== 'object') return SLOT;
  if (Array.isArray(v)) return v.length === 0 ? EMPTY_ARRAY : SLOT;
  return Object.getPrototypeOf(v) === Object.prototype && Object.keys(v as object).length === 0 ? EMPTY_OBJECT : SLOT;
}

function compile(id: number, json: string): Shape {
  const entries = JSON.parse(json) as StoredEntry[];
  const keys: string[] = [];
  const kinds = new Uint8Array(entries.length);
  const args: unknown[] = [];
  entries.forEach((e, i) => {
    if (typeof e === 'string') {
      keys.push(e);
      kinds[i] = SLOT;
    } else if (e.length === 1) {
      keys.push(e[0]);
      kinds[i] = PRIMARY;
    } else if (e.length === 3) {
      keys.push(e[0]);
      const kind = TAGGED[e[1]];
      if (kind === undefined) throw new Error(`Document shape ${id}: unknown entry ${JSON.stringify(e)}.`);
      kinds[i] = kind;
      args[i] = e[2];
    } else {
      keys.push(e[0]);
      const c = e[1];
      kinds[i] = Array.isArray(c) ? EMPTY_ARRAY : c !== null && typeof c === 'object' ? EMPTY_OBJECT : CONSTANT;
      args[i] = c;
    }
  });
  return { id, json, keys, kinds, args };
}

/** The shapes and tokens of one file, shared by its tables (one per connection). */
export class DocCodec {
  private readonly byId = new Map<number, Shape>();
  private readonly bySignature = new Map<string, Shape>();
  /** encode's numbering: top-level keys (with their quoted form, by number) and id suffixes, and
   * shapes by a hash of their codes. */
  private readonly keyIds = new Map<string, number>();
  private readonly quotedKeys: string[] = [''];
  private readonly suffixIds = new Map<string, number>();
  private readonly suffixes: string[] = [''];
  private readonly byCodes = new Map<number, Shape>();
  private codes = new Int32Array(64);
  /** encode's strings of the document so far and their keys' numbers (see encode). */
  private readonly seen: string[] = [];
  private readonly seenKeys = new Int32Array(SEEN_MAX);
  private readonly stringById = new Map<number, string>();
  private readonly stringId = new Map<string, number>();
  /** The token revisionToken met last. */
  private lastToken: { text: string; id: number } | null = null;
  /** Shapes and tokens used since the last flush. */
  private readonly used = new Set<Shape>();
  private readonly usedStrings = new Set<number>();
  private insert: Statement | null = null;
  private insertString: Statement | null = null;
  /** The numbers the next new shape and token get. */
  private next = 1;
  private nextString = 1;
  /** The tables are in the file (seen at load or created by ensureTables). */
  private tablesSeen = false;

  constructor(private readonly db: SqliteDatabase) {
    this.load();
  }

  private load(): void {
    if (hasTable(this.db, SHAPES_TABLE)) {
      for (const r of this.db.prepare<[], { id: number; shape: string }>(`SELECT id, shape FROM ${SHAPES_TABLE}`).all()) this.remember(compile(r.id, r.shape));
    }
    this.tablesSeen = !this.db.inTransaction && hasTable(this.db, SHAPES_TABLE) && hasTable(this.db, STRINGS_TABLE);
    if (hasTable(this.db, STRINGS_TABLE)) {
      for (const r of this.db.prepare<[], { id: number; text: string }>(`SELECT id, text FROM ${STRINGS_TABLE}`).all()) this.rememberString(r.id, r.text);
    }
  }

  private remember(shape: Shape): void {
    const had = this.byId.get(shape.id);
    if (had && had.json !== shape.json) throw new Error(`Two document shapes share id ${shape.id} (${had.json} and ${shape.json}).`);
    this.byId.set(shape.id, shape);
    this.bySignature.set(shape.json, shape);
    this.next = Math.max(this.next, shape.id + 1);
  }

  private rememberString(id: number, text: string): void {
    const had = this.stringById.get(id);
    if (had !== undefined && had !== text) throw new Error(`Two document tokens share id ${id}.`);
    this.stringById.set(id, text);
    this.stringId.set(text, id);
    this.nextString = Math.max(this.nextString, id + 1);
  }

  /** The token's number of a revision whose `-` is at `dash`; the last token met is compared in
   * place (a page's revisions share one), the others cut out and looked up. */
  private revisionToken(rev: string, dash: number): number {
    const last = this.lastToken;
    if (last !== null && rev.length - dash - 1 === last.text.length && rev.endsWith(last.text)) {
      this.usedStrings.add(last.id);
      return last.id;
    }
    const text = rev.slice(dash + 1);
    const id = this.token(text);
    this.lastToken = { text, id };
    return id;
  }

  private token(text: string): number {
    let id = this.stringId.get(text);
    if (id === undefined) {
      id = this.nextString;
      this.rememberString(id, text);
    }
    this.usedStrings.add(id);
    return id;
  }

  /** The text stored for `doc` in the row of `row` (its id and lwt columns), whose primary key field
   * is `primaryPath`. The shape it uses is written to the file by the next flush (in the same
   * transaction).
   *
   * The document's entries are numbered (see C_SLOT), and its shape found by a hash of the numbers,
   * compared with the codes the shape was last used with. Building each document's shape text (~40
   * quoted keys) and hashing it was most of the time encoding took (18 against 6 µs a lead for
   * JSON.stringify of it): the text is written from the codes only for codes no shape has yet. */
  encode(doc: Json, row: RowKeys, primaryPath: string): string {
    if (this.keyIds.size >= NUMBERED_KEYS || this.suffixIds.size >= NUMBERED_SUFFIXES) this.renumber();
    // values[0]: the shape's number, set at the end.
    const values: unknown[] = [0];
    // The document's strings of COPY_MIN characters or more so far, with their keys' numbers (a
    // list searched from the start, reused by every call: a Map per document was a third of what
    // encoding allocated).
    const seen = this.seen;
    const seenKeys = this.seenKeys;
    let seenCount = 0;
    const earlierOf = (s: string): number => {
      for (let i = 0; i < seenCount; i++) if (seen[i] === s) return seenKeys[i] as number;
      return -1;
    };
    let codes = this.codes;
    let n = 0;
    for (const k in doc) {
      if (!Object.prototype.hasOwnProperty.call(doc, k)) continue;
      const v = doc[k];
      // What JSON.stringify leaves out of an object.
      if (v === undefined || typeof v === 'function' || typeof v === 'symbol') continue;
      if (k === '__proto__') return JSON.stringify(doc);
      let key = this.keyIds.get(k);
      if (key === undefined) {
        key = this.quotedKeys.length;
        this.keyIds.set(k, key);
        this.quotedKeys.push(JSON.stringify(k));
      }
      if (n + 2 > codes.length) {
        const grown = new Int32Array(codes.length * 2);
        grown.set(codes);
        this.codes = codes = grown;
      }
      const at = key << 5;
      if (k === primaryPath && v === row.id) {
        codes[n++] = at | C_PRIMARY;
        if (v.length >= COPY_MIN && seenCount < seenKeys.length) {
          seen[seenCount] = v;
          seenKeys[seenCount++] = key;
        }
        continue;
      }
      if (k === '_meta' && isRowMeta(v, row.lwt)) {
        codes[n++] = at | C_META;
        continue;
      }
      const kind = kindOf(v);
      if (kind !== SLOT) {
        codes[n++] = at | (kind === EMPTY_OBJECT ? C_EMPTY_OBJECT : kind === EMPTY_ARRAY ? C_EMPTY_ARRAY : constantCode(v));
        continue;
      }
      if (typeof v === 'string') {
        if (v.length >= COPY_MIN) {
          const earlier = earlierOf(v);
          if (earlier >= 0) {
            codes[n++] = at | C_COPY;
            codes[n++] = earlier;
            continue;
          }
          if (seenCount < seenKeys.length) {
            seen[seenCount] = v;
            seenKeys[seenCount++] = key;
          }
          const cut = row.id.length - v.length;
          if (cut > 0 && cut <= ID_SUFFIX_MAX && row.id.startsWith(v)) {
            const suffix = row.id.slice(v.length);
            let sid = this.suffixIds.get(suffix);
            if (sid === undefined) {
              sid = this.suffixes.length;
              this.suffixIds.set(suffix, sid);
              this.suffixes.push(suffix);
            }
            codes[n++] = at | C_ID_PREFIX;
            codes[n++] = sid;
            continue;
          }
        }
        const dash = k === '_rev' ? revisionDash(v) : -1;
        if (dash > 0) {
          codes[n++] = at | C_REV;
          values.push(revisionHeight(v, dash), this.revisionToken(v, dash));
          continue;
        }
      } else if (Array.isArray(v) && v.length === 1 && typeof v[0] === 'string' && v[0].length >= COPY_MIN) {
        const earlier = earlierOf(v[0]);
        if (earlier >= 0) {
          codes[n++] = at | C_ARRAY_COPY;
          codes[n++] = earlier;
          continue;
        }
      }
      codes[n++] = at | C_SLOT;
      values.push(v);
    }
    let shape = this.byCodes.get(codesHash(codes, n));
    if (shape?.codes === undefined || !sameCodes(shape.codes, codes, n)) {
      const mine = codes.subarray(0, n);
      const json = this.shapeText(mine);
      shape = this.bySignature.get(json);
      if (!shape) {
        shape = compile(this.next, json);
        this.remember(shape);
      }
      // These codes name the shape from now on (a shape met by other codes first keeps those).
      if (shape.codes === undefined) {
        shape.codes = mine.slice();
        this.byCodes.set(codesHash(shape.codes, n), shape);
      }
    }
    this.used.add(shape);
    values[0] = shape.id;
    return JSON.stringify(values);
  }

  /** A shape's stored text (its entries: see StoredEntry), from the codes encode gave its document. */
  private shapeText(codes: Int32Array): string {
    let json = '[';
    for (let i = 0; i < codes.length; i++) {
      const entry = codes[i] as number;
      const q = this.quotedKeys[entry >>> 5] as string;
      if (json.length > 1) json += ',';
      switch (entry & 31) {
        case C_SLOT:
          json += q;
          break;
        case C_PRIMARY:
          json += `[${q}]`;
          break;
        case C_META:
          json += `[${q},"lwt","meta"]`;
          break;
        case C_EMPTY_OBJECT:
          json += `[${q},{}]`;
          break;
        case C_EMPTY_ARRAY:
          json += `[${q},[]]`;
          break;
        case C_COPY:
          json += `[${q},"=",${this.quotedKeys[codes[++i] as number] as string}]`;
          break;
        case C_ARRAY_COPY:
          json += `[${q},"=[]",${this.quotedKeys[codes[++i] as number] as string}]`;
          break;
        case C_ID_PREFIX:
          json += `[${q},"id-",${JSON.stringify(this.suffixes[codes[++i] as number])}]`;
          break;
        case C_REV:
          json += `[${q},"rev","token"]`;
          break;
        default:
          json += `[${q},${CONSTANT_JSON[entry & 31] as string}]`;
      }
    }
    return `${json}]`;
  }

  /** Numbers keys and suffixes from the start again (their maps reached their limits): the codes
   * shapes were found by name other keys from now on, so they are forgotten with them. */
  private renumber(): void {
    this.keyIds.clear();
    this.quotedKeys.length = 1;
    this.suffixIds.clear();
    this.suffixes.length = 1;
    this.byCodes.clear();
    for (const shape of this.byId.values()) shape.codes = undefined;
  }

  /** Creates the file's tables of shapes and tokens if this connection has not seen them (inside a
   * write transaction; once per connection, not at every table's opening). */
  ensureTables(): void {
    if (this.tablesSeen) return;
    if (hasTable(this.db, SHAPES_TABLE) && hasTable(this.db, STRINGS_TABLE)) {
      // Remembered once committed (a transaction that created them may still roll back).
      if (!this.db.inTransaction) this.tablesSeen = true;
      return;
    }
    this.db.exec(shapesTableSql);
  }

  /** Writes the shapes and tokens used since the last flush to the file (inside the write's
   * transaction). */
  flush(): void {
    if (this.used.size > 0) {
      this.insert ??= this.db.prepare(`INSERT OR IGNORE INTO ${SHAPES_TABLE} (id, shape) VALUES (?, ?)`);
      for (const s of this.used) this.insert.run(s.id, s.json);
      this.used.clear();
    }
    if (this.usedStrings.size > 0) {
      this.insertString ??= this.db.prepare(`INSERT OR IGNORE INTO ${STRINGS_TABLE} (id, text) VALUES (?, ?)`);
      for (const id of this.usedStrings) this.insertString.run(id, this.stringById.get(id));
      this.usedStrings.clear();
    }
  }

  /** The document stored as `text` in the row of `row`. */
  decode(text: string, row: RowKeys): Json {
    // 0x5b: '['. A document (a JSON object) never starts with it.
    if (text.charCodeAt(0) !== 0x5b) return JSON.parse(text) as Json;
    const values = JSON.parse(text) as unknown[];
    const shape = this.shape(values[0] as number);
    // A copy of the shape's template, whose keys are then set: V8 keeps it in its fast form (the
    // template's hidden class), where setting ~40 keys one by one on `{}` made a hash table of each
    // document (~3.4 KB a lead instead of ~0.5, slower to read, copy and serialise afterwards).
    const out: Json = { ...(shape.template ??= templateOf(shape.keys)) };
    const { keys, kinds, args } = shape;
    let j = 1;
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i] as string;
      switch (kinds[i]) {
        case SLOT:
          out[k] = values[j++];
          break;
        case CONSTANT:
          out[k] = args[i];
          break;
        case EMPTY_OBJECT:
          out[k] = {};
          break;
        case EMPTY_ARRAY:
          out[k] = [];
          break;
        case COPY:
          out[k] = out[args[i] as string];
          break;
        case ARRAY_COPY:
          out[k] = [out[args[i] as string]];
          break;
        case ID_PREFIX:
          out[k] = row.id.slice(0, row.id.length - (args[i] as string).length);
          break;
        case META:
          out[k] = { lwt: row.lwt };
          break;
        case REV:
          out[k] = `${values[j] as number}-${this.string(values[j + 1] as number)}`;
          j += 2;
          break;
        default:
          out[k] = row.id;
      }
    }
    if (j !== values.length) throw new Error(`Document ${row.id}: its row holds ${values.length - 1} values, its shape ${shape.id} takes ${j - 1}.`);
    return out;
  }

  private shape(id: number): Shape {
    let shape = this.byId.get(id);
    if (!shape) {
      this.load();
      shape = this.byId.get(id);
    }
    if (!shape) throw new Error(`A document row references shape ${id}, which the file does not hold.`);
    return shape;
  }

  private string(id: number): string {
    let text = this.stringById.get(id);
    if (text === undefined) {
      this.load();
      text = this.stringById.get(id);
    }
    if (text === undefined) throw new Error(`A document row references token ${id}, which the file does not hold.`);
    return text;
  }
}

/** An object with these keys in this order, each null: what JSON.parse makes of them, an object in
 * V8's fast form (a key such as `__proto__` is an own key, as in any document JSON.parse gives). */
function templateOf(keys: readonly string[]): Json {
  return JSON.parse(`{${keys.map((k) => `${JSON.stringify(k)}:null`).join(',')}}`) as Json;
}

/** FNV-1a over the first `n` of a shape's codes and their count. */
function codesHash(codes: Int32Array, n: number): number {
  let h = 0x811c9dc5 ^ n;
  for (let i = 0; i < n; i++) h = Math.imul(h ^ (codes[i] as number), 0x01000193);
  return h | 0;
}

/** Whether a shape's codes are the first `n` of `b`. */
function sameCodes(a: Int32Array, b: Int32Array, n: number): boolean {
  if (a.length !== n) return false;
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Where the `-` of an RxDB revision is (`<height>-<token>`: a canonical positive height of at most
 * 15 digits, a token of at least a character), or -1 for a string that is not one. */
function revisionDash(v: string): number {
  const first = v.charCodeAt(0);
  if (!(first >= 0x31 && first <= 0x39)) return -1;
  for (let i = 1; i < v.length && i <= 15; i++) {
    const c = v.charCodeAt(i);
    if (c === 0x2d) return i + 1 < v.length ? i : -1;
    if (c < 0x30 || c > 0x39) return -1;
  }
  return -1;
}

/** The height of a revision whose `-` is at `dash` (revisionDash). */
function revisionHeight(v: string, dash: number): number {
  let h = 0;
  for (let i = 0; i < dash; i++) h = h * 10 + v.charCodeAt(i) - 0x30;
  return h;
}

/** Whether `_meta` is `{lwt}` with exactly the row's lwt (its keys counted without listing them). */
function isRowMeta(v: unknown, lwt: number): boolean {
  if (v === null || typeof v !== 'object' || Object.getPrototypeOf(v) !== Object.prototype) return false;
  let keys = 0;
  for (const k in v) {
    if (!Object.prototype.hasOwnProperty.call(v, k)) continue;
    if (k !== 'lwt' || ++keys > 1) return false;
  }
  return keys === 1 && (v as { lwt: unknown }).lwt === lwt && Number.isFinite(lwt);
}

function hasTable(db: SqliteDatabase, table: string): boolean {
  return db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?").get(table) !== undefined;
}

const CODECS = new WeakMap<SqliteDatabase, DocCodec>();

/** The codec of a connection's file. */
export function docCodec(db: SqliteDatabase): DocCodec {
  let c = CODECS.get(db);
  if (!c) CODECS.set(db, (c = new DocCodec(db)));
  return c;
}
