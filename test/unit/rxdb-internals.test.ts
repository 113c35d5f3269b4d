/**
 * RxDB's names for its own writes (electron/backend/rxdb-internals.ts) against the RxDB installed:
 * a real replication (pull a document, push a local one the server answers with a conflict) over a
 * storage that records the context of every bulk write. An RxDB upgrade that renames a context
 * fails here instead of silently changing what the local storage syncs to disk lazily and what the
 * sync status counts as pending.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { createRxDatabase } from 'rxdb';
import type { RxDatabase, WithDeleted } from 'rxdb';
import { replicateRxCollection } from 'rxdb/plugins/replication';
import { getRxStorageMemory } from 'rxdb/plugins/storage-memory';
import { mergeConflictHandler } from '../../electron/backend/replication-merge.ts';
import { isConflictWrite, isDownstreamWrite, isRefetchableWrite, needsNoFsync, RXDB_CONTEXT } from '../../electron/backend/rxdb-internals.ts';

type Item = { id: string; v: number };

/** RxDB's memory storage, recording the context of every bulk write of every instance. */
function recordingStorage(contexts: string[]): ReturnType<typeof getRxStorageMemory> {
  const inner = getRxStorageMemory();
  return {
    ...inner,
    async createStorageInstance(params) {
      const instance = await inner.createStorageInstance(params);
      const bulkWrite = instance.bulkWrite.bind(instance);
      instance.bulkWrite = (rows, context) => {
        contexts.push(context);
        return bulkWrite(rows, context);
      };
      return instance;
    },
  };
}

let db: RxDatabase | null = null;
afterEach(async () => {
  await db?.close();
  db = null;
});

describe("RxDB's write contexts", () => {
  it('are the ones rxdb-internals.ts names, for pulled documents, their meta rows, the checkpoint and a conflict', async () => {
    const contexts: string[] = [];
    db = await createRxDatabase({ name: `internals${randomUUID().replace(/-/g, '')}`, storage: recordingStorage(contexts), multiInstance: false });
    const { items } = await db.addCollections({
      items: {
        schema: { version: 0, primaryKey: 'id', type: 'object', properties: { id: { type: 'string', maxLength: 40 }, v: { type: 'number' } }, required: ['id', 'v'] },
        conflictHandler: mergeConflictHandler,
      },
    });
    await items.insert({ id: 'local', v: 1 });
    const localContexts = [...contexts];

    const server = new Map<string, WithDeleted<Item>>([
      ['pulled', { id: 'pulled', v: 7, _deleted: false }],
      // The server already has `local` in another state: the push conflicts.
      ['local', { id: 'local', v: 2, _deleted: false }],
    ]);
    let pulled = false;
    const replication = replicateRxCollection<Item, { n: number }>({
      collection: items,
      replicationIdentifier: 'rxdb-internals-test',
      live: false,
      pull: {
        handler: async () => {
          if (pulled) return { documents: [], checkpoint: { n: 1 } };
          pulled = true;
          return { documents: [...server.values()], checkpoint: { n: 1 } };
        },
      },
      push: {
        handler: async (rows) => rows.flatMap((r) => {
          const current = server.get(r.newDocumentState.id);
          return current && current.v !== r.assumedMasterState?.v ? [current] : [];
        }),
      },
    });
    await replication.awaitInitialReplication();
    await replication.cancel();

    const replicationContexts = contexts.slice(localContexts.length);
    expect(replicationContexts.filter((c) => c.startsWith(RXDB_CONTEXT.downstreamPrefix)).length, replicationContexts.join(', ')).toBeGreaterThan(0);
    for (const name of [RXDB_CONTEXT.downstreamMeta, RXDB_CONTEXT.setCheckpoint, RXDB_CONTEXT.upstreamConflict, RXDB_CONTEXT.addConnectedStorage]) {
      expect(replicationContexts, name).toContain(name);
    }
    // What each helper says about the contexts RxDB really used.
    expect(localContexts.length).toBeGreaterThan(0);
    for (const c of localContexts) expect([isDownstreamWrite(c), isRefetchableWrite(c), isConflictWrite(c), needsNoFsync(c)], c).toEqual([false, false, false, false]);
    expect(replicationContexts.filter(isConflictWrite)).toEqual([RXDB_CONTEXT.upstreamConflict]);
    expect(new Set(replicationContexts.filter(isRefetchableWrite))).toEqual(new Set(replicationContexts.filter((c) => isDownstreamWrite(c) || c === RXDB_CONTEXT.downstreamMeta || c === RXDB_CONTEXT.setCheckpoint)));
    // Written without an fsync of its own: the refetchable writes and the record of the replication's meta instance only.
    expect(new Set(replicationContexts.filter(needsNoFsync))).toEqual(new Set([...replicationContexts.filter(isRefetchableWrite), RXDB_CONTEXT.addConnectedStorage]));
    // And the documents ended where a replication leaves them: the pulled one, and the server's state of the conflicting one.
    expect((await items.findOne('pulled').exec())?.v).toBe(7);
    expect((await items.findOne('local').exec())?.v).toBe(2);
  });
});
