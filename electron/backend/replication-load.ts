/**
 * Pulled pages of documents the desktop does not hold yet (an initial sync, and its resumption after
 * a quit or a kill), written straight into the storage instead of through RxDB's replication.
 *
 * RxDB's downstream (rxdb 17.6.0, src/replication-protocol/downstream.ts) handles a pulled page
 * document by document: it reads each document and its assumed-master state, compares them, clones
 * the document twice (the plugin's handlePulledDocuments, then the new fork state), builds each meta
 * row with a promise of its own, writes the documents and then the meta rows through two bulk
 * writes (each checked again against the stored rows), and stores the checkpoint in a third write
 * and transaction. For a document neither the collection nor the meta instance holds, all of that
 * comes down to three rows: the document as RxDB would store it (`_meta.lwt` and the database's
 * first revision, as the collection's storage wrapper stores an insert), its meta row (the pulled
 * state as the assumed master, revision `1-<checkpoint key>`) and the checkpoint row. Those are
 * written here, with the page's checkpoint, in one SQLite transaction (SqliteStorageInstance.
 * loadPulled): a kill keeps the page with its checkpoint or neither.
 *
 * The pull handler (replication.ts) stores page after page this way while every document of a page
 * is new, and hands RxDB any page that holds a stored document (RxDB compares the states: a
 * conflict, an unpushed local edit, a page pulled again). Because the rows are exactly RxDB's,
 * everything after them is RxDB's as before: a local edit pushes with the loaded state as its
 * assumedMasterState, RxDB's later pulls read the stored checkpoint, the collection's change
 * stream carries the loaded documents (with RxDB's downstream write flag, so RxDB's upstream does
 * not push them back). RxDB's `received$` does not see them (nothing in the app subscribes to it).
 *
 * RxDB's fields read here are internals (test/integration/sync-client.test.ts checks the rows
 * against the ones RxDB writes itself).
 */
import { getComposedPrimaryKeyOfDocumentData, HOOKS, now as rxNow } from 'rxdb';
import type { RxDocumentData, RxJsonSchema, RxStorageInstanceReplicationState } from 'rxdb';
import type { RxReplicationState } from 'rxdb/plugins/replication';
import type { Checkpoint, PullPage } from '../../shared/wire/replication.ts';
import { sqliteInstanceOf } from './storage/sqlite/storage.ts';
import type { SqliteStorageInstance } from './storage/sqlite/instance.ts';

type Json = Record<string, unknown>;
type Doc = RxDocumentData<unknown>;

/** What RxDB's replication computed for itself at its start, read once. */
type Marks = { fork: SqliteStorageInstance<unknown>; meta: SqliteStorageInstance<unknown>; internal: RxStorageInstanceReplicationState<unknown>; forkRev: string; metaRev: string; context: string; checkpointId: string; checkpointKey: string };

export class PulledLoader {
  private marks: Promise<Marks | null> | null = null;

  constructor(private readonly state: RxReplicationState<Json, Checkpoint>) {}

  /** Stores `page` with its checkpoint when none of its documents is stored;
   * resolves whether it did. False also when the replication is stopped or not on SQLite. */
  async store(page: PullPage): Promise<boolean> {
    const marks = await (this.marks ??= this.read());
    // Plugins that change what is stored (preStorageWrite hooks: none in this app) see RxDB's writes only.
    if (!marks || page.documents.length === 0 || HOOKS.preStorageWrite.length > 0 || marks.internal.events.canceled.getValue() || this.state.isStopped()) return false;
    const { forkRev, metaRev } = marks;
    const docs: Doc[] = [];
    const metaDocs: Doc[] = [];
    const ids = new Set<string>();
    // RxDB's collection's storage wrapper (rx-storage-helper.ts getWrappedStorageInstance), which
    // its replication writes through, stores an inserted document with one `_meta` for the whole
    // write, `{lwt}`, and the database's first revision (the downstream's `_meta.o` mark and its
    // own revision do not reach the storage).
    const written = { lwt: rxNow() };
    for (const pulled of page.documents) {
      // A document with RxDB's own fields (the server sends none) is RxDB's to handle.
      if ('_rev' in pulled || '_meta' in pulled || '_attachments' in pulled) return false;
      const id = pulled.id;
      ids.add(id);
      // The master state, then `_meta`, `_rev`, `_attachments`, in RxDB's order.
      docs.push({ ...(pulled as Json), _meta: written, _rev: forkRev, _attachments: {} } as Doc);
      // As RxDB's getMetaWriteRow without a previous row.
      metaDocs.push({ id: `${id}|0`, isCheckpoint: '0', itemId: id, docData: pulled, _attachments: {}, _deleted: false, _rev: metaRev, _meta: { lwt: rxNow() } } as Doc);
    }
    // Two states of one id in a page (the server sends none): RxDB's way keeps the later one.
    if (ids.size !== docs.length) return false;
    const stored: { row: Doc | null } = { row: null };
    // In RxDB's lock of the database's writes, as its storage wrapper writes.
    const ok = await this.state.collection.database.lockedRun(() =>
      marks.fork.loadPulled(marks.meta, {
        docs,
        context: marks.context,
        metaDocs,
        checkpointId: marks.checkpointId,
        checkpoint: (previous) => (stored.row = checkpointRow(marks, previous, page.checkpoint)),
      }),
    );
    // RxDB's next checkpoint write follows the stored row (else it would find it changed and write
    // again on top of it).
    if (ok && stored.row) marks.internal.lastCheckpointDoc.down = stored.row as never;
    return ok;
  }

  private async read(): Promise<Marks | null> {
    const internal = this.state.internalReplicationState as RxStorageInstanceReplicationState<unknown> | undefined;
    const fork = sqliteInstanceOf<unknown>(this.state.collection.storageInstance);
    const meta = sqliteInstanceOf<unknown>(this.state.metaInstance);
    if (!internal || !fork || !meta) return null;
    const [checkpointKey, context] = await Promise.all([internal.checkpointKey, internal.downstreamBulkWriteFlag]);
    const checkpointId = getComposedPrimaryKeyOfDocumentData(meta.schema as RxJsonSchema<Doc>, { isCheckpoint: '1', itemId: 'down' } as never);
    return { fork, meta, internal, forkRev: `1-${this.state.collection.database.token}`, metaRev: `1-${checkpointKey}`, context, checkpointId, checkpointKey };
  }
}

/** The checkpoint row RxDB's setCheckpoint would store after `previous` for `checkpoint`, or null
 * when it would store none (no checkpoint, or the same one). */
function checkpointRow(marks: Marks, previous: Doc | undefined, checkpoint: Checkpoint | null): Doc | null {
  if (!checkpoint) return null;
  const before = (previous as Json | undefined)?.['checkpointData'] as Json | undefined;
  if (before && JSON.stringify(before) === JSON.stringify(checkpoint)) return null;
  const height = previous ? Number.parseInt(String(previous._rev), 10) + 1 : 1;
  return {
    id: marks.checkpointId,
    isCheckpoint: '1',
    itemId: 'down',
    _deleted: false,
    _attachments: {},
    checkpointData: { ...before, ...checkpoint },
    _meta: { lwt: rxNow() },
    _rev: `${height}-${marks.checkpointKey}`,
  } as Doc;
}
