/**
 * The replication wire format (API-CONTRACT.md "Replication endpoints"), declared once: the sync
 * server parses requests with these schemas, its OpenAPI document is generated from them
 * (z.toJSONSchema), and the desktop checks every answer against them before RxDB sees it.
 *
 * Documents cross the wire with RxDB's `_deleted` flag. What a document holds beyond that is its
 * collection's business (shared/model's RxDB schemas, checked by the server on push), so documents
 * are open objects here. Answers are open too: a client must accept fields it does not know yet.
 */
import { z } from 'zod';
import { REPLICATED_COLLECTIONS } from '../model/index.ts';

/** Most documents one pull page holds; the desktop asks for this many. */
export const MAX_PULL_LIMIT = 2000;
export const DEFAULT_PULL_LIMIT = 100;
/** Most rows in one push (the desktop sends 100); a larger batch is refused whole (400). */
export const MAX_PUSH_ROWS = 1000;

/** Where a client is in a collection's changes: the server's `seq` of the last document it got. */
export const checkpointSchema = z.object({ seq: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER) });
export type Checkpoint = z.infer<typeof checkpointSchema>;

/** How many documents a pull asks for. */
export const pullLimitSchema = z.number().int().min(1).max(MAX_PULL_LIMIT);

/** `value` itself once `schema` accepts it, not the parsed copy: a schema checks what a reader relies
 * on and leaves the rest as it came (see masterDocumentSchema). Throws the ZodError otherwise. */
export function checkedAs<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  schema.parse(value);
  return value as z.output<S>;
}

/** A document as the server holds it ("master state"), with its deleted flag. Its other fields are
 * listed by the collection's schema (GET /replication/collections), not here: a reader checks these
 * two and keeps the document it checked. (Not a loose object: parsing would copy every field of
 * every document, 2000 per pull page, for nothing; the OpenAPI document still shows it open.) */
export const masterDocumentSchema = z.object({ id: z.string(), _deleted: z.boolean() }).describe('A document of the collection with _deleted.');
export type MasterDocument = z.infer<typeof masterDocumentSchema>;

/** GET /replication/{collection}/pull: documents changed after the checkpoint, in seq order. */
export const pullPageSchema = z.object({
  documents: z.array(masterDocumentSchema),
  /** The checkpoint to ask from next; the one asked with (null at first) when nothing changed. */
  checkpoint: checkpointSchema.nullable(),
  /** Asked for with `count=true`: how many documents changed after the checkpoint asked from, this
   * page's included, when the page was read (a client's "n of m" for the pull it starts). */
  remaining: z.number().int().min(0).optional(),
});
export type PullPage = z.infer<typeof pullPageSchema>;

/** The start of a pull page written by pullPageText: its documents follow, one a line. */
const PAGE_HEAD = '{"documents":[\n';
/** The envelope read without its documents (readPullPageText): `0` stands where they were. */
const ENVELOPE_HEAD = '{"documents":0';
const COMMA = 0x2c;

/**
 * A pull page's answer as the server writes it: plain JSON (any reader reads the same object), with
 * each document on a line of its own. JSON puts no raw line break inside a string, so the breaks
 * between documents are the only ones, and a client can read a page a document at a time
 * (readPullPageText) instead of in one JSON.parse: a page of 2,000 leads is ~2 MB, whose parse
 * held the desktop's event loop 22-33 ms of CPU, the longest task of an initial sync of 1M leads.
 */
export function pullPageText(page: Omit<PullPage, 'documents'> & { documents: readonly unknown[] }): string {
  const { documents, ...rest } = page;
  if (documents.length === 0) return JSON.stringify(page);
  const tail = JSON.stringify(rest);
  let text = PAGE_HEAD;
  for (let i = 0; i < documents.length; i++) text += (i === 0 ? '' : ',\n') + JSON.stringify(documents[i]);
  return `${text}\n]${tail === '{}' ? '}' : `,${tail.slice(1)}`}`;
}

/**
 * Reads a pull page's text as JSON.parse would, yielding between documents (a generator: the caller
 * spreads the work over turns of its event loop). A text in pullPageText's layout is read a line at a
 * time: every line but the last ends with the comma between two documents, each line is one JSON
 * value, and what follows the last line reads as the page's envelope; the documents then are exactly
 * the array JSON.parse would give. Any other text (an older server's, or one whose line does not
 * read) is given to JSON.parse whole, which also throws what it throws.
 */
export function* readPullPageText(text: string): Generator<void, unknown> {
  const end = text.lastIndexOf('\n]');
  if (!text.startsWith(PAGE_HEAD) || end < PAGE_HEAD.length) return JSON.parse(text);
  const documents: unknown[] = [];
  // Line by line (no array of all lines first: a page's first step stays short).
  for (let from = PAGE_HEAD.length; ; ) {
    yield;
    const next = text.indexOf('\n', from);
    const last = next === end;
    if (last === (text.charCodeAt(next - 1) === COMMA)) return JSON.parse(text);
    try {
      documents.push(JSON.parse(text.slice(from, last ? next : next - 1)));
    } catch {
      return JSON.parse(text);
    }
    if (last) break;
    from = next + 1;
  }
  const tail = text.slice(end + 2);
  // A second `documents` key after the array would win in JSON.parse.
  if (tail.includes('"documents"')) return JSON.parse(text);
  let envelope: unknown;
  try {
    envelope = JSON.parse(ENVELOPE_HEAD + tail);
  } catch {
    return JSON.parse(text);
  }
  (envelope as Record<string, unknown>)['documents'] = documents;
  return envelope;
}

/** A document as a client pushes it (parsed by the server, which needs all of it): whatever RxDB holds (its `_rev`, `_meta` and `_attachments`
 * are the client's and never stored); the collection's schema judges the rest. */
export const pushedDocumentSchema = z.looseObject({ _deleted: z.boolean().optional() }).describe('A document of the collection with _deleted.');

/** One row of POST /replication/{collection}/push: the new state and the server state it was made on
 * (absent for a creation). */
export const pushRowSchema = z.object({
  assumedMasterState: pushedDocumentSchema.nullable().optional(),
  newDocumentState: pushedDocumentSchema,
});
export type PushRow = z.infer<typeof pushRowSchema>;

export const pushBodySchema = z.array(pushRowSchema).max(MAX_PUSH_ROWS);

/** The push's answer: the server's state of every row it did not take (outdated assumption or a
 * refusal of the rules); an empty list when it took them all. */
export const pushAnswerSchema = z.array(masterDocumentSchema);

/** A live stream's change event: the documents after the last one sent, and the checkpoint after them. */
export const streamPageSchema = z.object({ documents: z.array(masterDocumentSchema), checkpoint: checkpointSchema });

/** What one event of GET /replication/{collection}/stream carries: a page of changes, or RESYNC
 * (pull from your own checkpoint: changes may have been missed, e.g. on connect). */
export type StreamEvent = 'RESYNC' | z.infer<typeof streamPageSchema>;

/** The `data` of a stream event as the server writes it (documents as it stores them). */
export function streamEventData(event: 'RESYNC' | { documents: readonly Record<string, unknown>[]; checkpoint: Checkpoint }): string {
  return event === 'RESYNC' ? 'RESYNC' : JSON.stringify(event);
}

/** A stream event's `data` as the client reads it; throws (a ZodError or SyntaxError) when it is
 * neither RESYNC nor a page of changes. */
export function parseStreamEvent(data: string): StreamEvent {
  const text = data.trim();
  // Also the JSON string "RESYNC", which some RxDB servers send.
  if (text === 'RESYNC' || text === '"RESYNC"') return 'RESYNC';
  return checkedAs(streamPageSchema, JSON.parse(text));
}

/** The limits a collection's documents keep beside its RxDB schema (shared/model FIELD_LIMITS),
 * published with the schema so any RxDB client can check a document before pushing it. */
export const documentLimitsSchema = z.object({
  fieldMaxLength: z.record(z.string(), z.number().int()),
  defaultTextMaxLength: z.number().int(),
  indexedFieldsMaxUtf8Bytes: z.record(z.string(), z.number().int()),
  maxArrayItems: z.number().int(),
  maxObjectKeys: z.number().int(),
  maxDepth: z.number().int(),
  timestampYears: z.tuple([z.number().int(), z.number().int()]),
  text: z.string(),
  pushMaxRows: z.number().int(),
});

/** GET /replication/collections. */
export const collectionsListSchema = z.object({
  collections: z.array(
    z.object({
      name: z.enum(REPLICATED_COLLECTIONS),
      schemaVersion: z.number().int(),
      schema: z.record(z.string(), z.unknown()).describe('The RxDB JSON schema of the collection.'),
      limits: documentLimitsSchema.describe('The field limits every pushed document must also keep.'),
    }),
  ),
});

/** One reason the server refused a document the caller pushed. */
export const refusalSchema = z.object({
  collection: z.string(),
  documentId: z.string(),
  code: z.string(),
  message: z.string(),
  details: z.record(z.string(), z.unknown()).optional(),
  at: z.iso.datetime(),
});

/** GET /replication/refusals: the caller's own refusals after `since`, oldest first. */
export const refusalsListSchema = z.object({ refusals: z.array(refusalSchema) });
export type Refusal = z.infer<typeof refusalSchema>;
