/**
 * The names RxDB gives its own writes (the `context` of a storage bulk write), which our code tells
 * apart: the local storage syncs to disk lazily only what the server holds too, and the sync status
 * counts a document as pending unless the write came from the server. They are RxDB internals, not
 * API: test/unit/rxdb-internals.test.ts drives a real replication and fails when an RxDB upgrade
 * renames one, because a silent rename would make local writes look refetchable (lost on a power
 * cut) or pulled documents look pending forever.
 */

export const RXDB_CONTEXT = {
  /** Prefix of the writes of pulled documents into the local collection (`...-<checkpoint key>`). */
  downstreamPrefix: 'replication-downstream-',
  /** The assumed-master rows of pulled documents (replication's meta instance). */
  downstreamMeta: 'replication-down-write-meta',
  /** The stored pull checkpoint. */
  setCheckpoint: 'replication-set-checkpoint',
  /** The conflict handler's answer written into the local collection after a push conflict. */
  upstreamConflict: 'replication-up-write-conflict',
  /** A replication's meta instance recorded in its collection's document of RxDB's internal store
   * (rx-database-internal-store.ts addConnectedStorageToCollection, at every replication's start). */
  addConnectedStorage: 'add-connected-storage-to-collection',
} as const;

/** A write of documents pulled from the server into the local collection. */
export const isDownstreamWrite = (context: string): boolean => context.startsWith(RXDB_CONTEXT.downstreamPrefix);

/** Writes the server holds too: a power cut that drops them only means pulling them again. */
export const isRefetchableWrite = (context: string): boolean =>
  isDownstreamWrite(context) || context === RXDB_CONTEXT.downstreamMeta || context === RXDB_CONTEXT.setCheckpoint;

/**
 * Writes that need no fsync of their own: the refetchable ones, and RxDB's record of a replication's
 * meta instance, which every start of the replication writes again if it is missing (and a power cut
 * can only drop a suffix of the WAL's commits: the record is lost only with everything written after
 * it, the meta instance's rows included).
 */
export const needsNoFsync = (context: string): boolean => isRefetchableWrite(context) || context === RXDB_CONTEXT.addConnectedStorage;

/** A conflict's resolution written into the local collection. */
export const isConflictWrite = (context: string): boolean => context === RXDB_CONTEXT.upstreamConflict;
