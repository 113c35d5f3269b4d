/** POST /replication/<collection>/push: reads the rows (the wire schema, then every new document
 * against its collection's schema; a bad row refuses the whole batch, nothing stored), and applies
 * them in one transaction per push: compare with the stored state, validate with the shared rules,
 * store. A row whose assumed state is outdated, or that the rules refuse (the reason is recorded
 * for the member), comes back as a conflict holding the server's state. The server never rewrites a
 * pushed document.
 *
 * A pushed new lead is not checked for being a person another lead already is (shared/intake): the
 * desktop ran that check on its replica when the lead entered. Two desktops that each took in the
 * same person offline hold two leads with work of their own (enrollments, messages sent, notes);
 * refusing the second would make it a tombstone on its desktop and lose that work, so such a pair
 * is one for a merge, not a refusal.
 *
 * The one rewrite: a push that edits or references a lead merged into another (campaigns.leads.merge)
 * is applied to the survivor (shared/merge-redirect.ts). An edit of the tombstone becomes the same
 * edit of the survivor, and the tombstone comes back as a refusal-shaped conflict, so the desktop
 * takes it (no reason is recorded: nothing was refused). A new note, task, message or enrollment of
 * the merged lead is stored as the survivor's and comes back as a conflict holding the stored
 * document, which a creation's conflict handler takes as is. */
import type { z } from 'zod';
import type { Actor, Clock } from '../shared/context.ts';
import { DomainError, isDomainError } from '../shared/errors.ts';
import { editOnSurvivor, enrollmentForSurvivor, survivorOf } from '../shared/merge-redirect.ts';
import { sameJson } from '../shared/json-equal.ts';
import type { CollectionName, Enrollment } from '../shared/model/index.ts';
import { schemaProblem } from '../shared/model/validate.ts';
import { validateChange } from '../shared/rules/index.ts';
import type { Change } from '../shared/rules/index.ts';
import { Tx } from '../shared/tx.ts';
import { MAX_PUSH_ROWS, pushBodySchema } from '../shared/wire/replication.ts';
import { WRITER_LOCK_CLASS } from './pg-store.ts';
import type { PgDatabase } from './pg-database.ts';
import { master } from './replication-changes.ts';
import type { MasterDoc } from './replication-changes.ts';

type Json = Record<string, unknown>;

/** RxDB's fields of a pushed document: the client's, never stored. */
const CLIENT_FIELDS = ['_rev', '_meta', '_attachments', '_deleted'] as const;

export type PushRow = { assumed: { doc: Json; deleted: boolean } | null; next: { doc: Json; deleted: boolean } };

/** Splits a pushed document into its content (without RxDB's fields) and its deleted flag. */
function clientDoc(raw: Json): { doc: Json; deleted: boolean } {
  const doc: Json = { ...raw };
  const deleted = doc._deleted === true;
  for (const f of CLIENT_FIELDS) delete doc[f];
  return { doc, deleted };
}

/** The refusal of a push body that is not a list of rows (the wire schema's first complaint). */
function shapeError(c: CollectionName, body: unknown, error: z.ZodError): DomainError {
  const issue = error.issues[0];
  const [row, field, ...rest] = issue?.path ?? [];
  if (row === undefined) {
    if (issue?.code === 'too_big' && Array.isArray(body)) {
      return new DomainError('INVALID_INPUT', `A push holds at most ${MAX_PUSH_ROWS} rows, this one ${body.length}; push in smaller batches. Nothing of this push was stored.`, {
        collection: c,
        maxRows: MAX_PUSH_ROWS,
      });
    }
    return new DomainError('INVALID_INPUT', 'The push body must be an array of {assumedMasterState?, newDocumentState}.');
  }
  if (field === undefined) return new DomainError('INVALID_INPUT', `Row ${String(row)} must be an object {assumedMasterState?, newDocumentState}.`, { row });
  if (rest.length > 0) return new DomainError('INVALID_INPUT', `Row ${String(row)} ${String(field)}.${rest.join('.')} must be true or false.`, { row });
  return new DomainError('INVALID_INPUT', `Row ${String(row)} ${String(field)} must be a document object.`, { row });
}

/** Validates a push body: the rows' shape, then every new document against its collection's schema
 * and field limits (shared/model: text sizes, no NUL or lone surrogates, real timestamps, bounded
 * arrays and nesting), the same checks an operation's writes pass. Any problem refuses the batch. */
export function parsePush(c: CollectionName, body: unknown, workspaceId: string): PushRow[] {
  const parsed = pushBodySchema.safeParse(body);
  if (!parsed.success) throw shapeError(c, body, parsed.error);
  const rows: PushRow[] = parsed.data.map((r) => ({
    assumed: r.assumedMasterState ? clientDoc(r.assumedMasterState) : null,
    next: clientDoc(r.newDocumentState),
  }));
  // A batch with a row that breaks the schema is refused whole: nothing is stored.
  const problems: { row: number; id: unknown; problem: string }[] = [];
  rows.forEach((r, i) => {
    const problem = schemaProblem(c, r.next.doc);
    if (problem) problems.push({ row: i, id: r.next.doc.id, problem });
  });
  const first = problems[0];
  if (first) {
    throw new DomainError('INVALID_INPUT', `Row ${first.row} (${c}/${String(first.id)}) is not a valid ${c} document: ${first.problem}. Nothing of this push was stored.`, {
      collection: c,
      problems,
      workspaceId,
    });
  }
  return rows;
}

/** One transaction per push: compare, validate, store; refusals come back as conflicts. */
export async function push(db: PgDatabase, clock: Clock, actor: Actor, c: CollectionName, rows: readonly PushRow[]): Promise<MasterDoc[]> {
  if (rows.length === 0) return [];
  return db.withStore(actor.workspaceId, async (store, sqlTx) => {
    // Take the workspace's writer lock first: nothing can change under the comparisons below.
    await sqlTx.query('SELECT pg_advisory_xact_lock($1::int, hashtext($2::text))', [WRITER_LOCK_CLASS, actor.workspaceId]);
    const ids = [...new Set(rows.map((r) => String(r.next.doc.id)))];
    const stored = await sqlTx.query<{ id: string; workspace_id: string; deleted: boolean; doc: Json }>(
      `SELECT id, workspace_id, deleted, doc FROM documents WHERE collection = '${c}' AND id = ANY($1::text[])`,
      [ids],
    );
    const current = new Map<string, MasterDoc | null>();
    const foreign = new Set<string>();
    for (const s of stored) {
      if (s.workspace_id !== actor.workspaceId) foreign.add(s.id);
      else current.set(s.id, master(s.doc, s.deleted));
    }
    const tx = new Tx(store);
    const now = clock.now();
    const conflicts: MasterDoc[] = [];
    const refusals: { id: string; error: DomainError }[] = [];

    for (const row of rows) {
      const id = String(row.next.doc.id);
      const mine = current.get(id) ?? null;
      const tombstone = (): MasterDoc => master(row.next.doc, true);
      if (foreign.has(id)) {
        // An id of another workspace: never revealed, never touched.
        conflicts.push(tombstone());
        refusals.push({ id, error: new DomainError('NOT_FOUND', `${c} ${id} was not found in this workspace.`, { collection: c, id }) });
        continue;
      }
      // A desktop that saw the tombstone and revives it is undoing the merge (campaigns.leads.unmerge):
      // an ordinary write, judged by the rules.
      const unmerging = c === 'leads' && row.assumed !== null && !row.next.deleted && row.next.doc.mergedIntoId == null && sameMaster(mine, master(row.assumed.doc, row.assumed.deleted));
      if (c === 'leads' && mine && !mine._deleted && typeof mine.mergedIntoId === 'string' && !unmerging) {
        // An edit of a merged lead (made offline, or before this desktop pulled the merge).
        const survivor = await survivorOf(tx, id);
        const edited = survivor && row.assumed && !row.next.deleted ? editOnSurvivor(survivor, row.assumed.doc, row.next.doc, now.toISOString()) : null;
        if (survivor && edited) {
          try {
            await validateChange({ collection: 'leads', before: survivor, after: edited }, { actor, read: tx, now });
            await tx.put('leads', edited);
            if (current.has(survivor.id)) current.set(survivor.id, master(edited, false));
          } catch (e) {
            if (!isDomainError(e)) throw e;
            refusals.push({ id: survivor.id, error: e });
          }
        }
        conflicts.push(mine);
        continue;
      }
      let redirected = false;
      if (mine === null && !row.next.deleted && (c === 'activities' || c === 'messages' || c === 'enrollments') && typeof row.next.doc.leadId === 'string') {
        // A new document of a merged lead becomes the survivor's.
        const survivor = await survivorOf(tx, row.next.doc.leadId);
        if (survivor) {
          const at = now.toISOString();
          row.next.doc = c === 'enrollments'
            ? (await enrollmentForSurvivor(tx, row.next.doc as Enrollment, survivor, at))
            : { ...row.next.doc, leadId: survivor.id };
          redirected = true;
        }
      }
      const assumed = row.assumed ? master(row.assumed.doc, row.assumed.deleted) : null;
      if (!sameMaster(mine, assumed)) {
        // Changed on the server since the client last saw it: the client merges and pushes again.
        conflicts.push(mine ?? tombstone());
        continue;
      }
      const before = mine && !mine._deleted ? stripDeleted(mine) : null;
      const after = row.next.deleted ? null : row.next.doc;
      if (before === null && after === null) continue;
      const change = { collection: c, before, after } as Change<CollectionName>;
      try {
        await validateChange(change, { actor, read: tx, now });
      } catch (e) {
        if (!isDomainError(e)) throw e;
        conflicts.push(mine ?? tombstone());
        refusals.push({ id, error: e });
        continue;
      }
      if (after) await tx.put(c, after as never);
      else await tx.remove(c, id);
      current.set(id, master(row.next.doc, row.next.deleted));
      if (redirected) conflicts.push(master(row.next.doc, false));
    }

    const writes = tx.writes();
    if (writes.length > 0) await store.commit(writes);
    if (refusals.length > 0) {
      await sqlTx.query(
        `INSERT INTO refusals (workspace_id, member_id, collection, document_id, code, message, details, at)
         SELECT $1, $2, $3, r.id, r.code, r.message, r.details, $4::timestamptz
           FROM jsonb_to_recordset($5::jsonb) AS r(id text, code text, message text, details jsonb)`,
        [
          actor.workspaceId,
          actor.memberId,
          c,
          now.toISOString(),
          JSON.stringify(refusals.map((r) => ({ id: r.id, code: r.error.code, message: r.error.message, details: r.error.details }))),
        ],
      );
    }
    return conflicts;
  });
}

function stripDeleted(m: MasterDoc): Json {
  const { _deleted: _d, ...doc } = m;
  return doc;
}

/** The stored master state equals what the client assumed (both absent counts as equal). */
function sameMaster(stored: MasterDoc | null, assumed: MasterDoc | null): boolean {
  if (stored === null || assumed === null) return stored === assumed;
  return sameJson(stored, assumed);
}
