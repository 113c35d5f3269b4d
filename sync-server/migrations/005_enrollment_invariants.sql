-- Invariants the database holds, whatever process or code path writes: a lead runs at most one
-- sequence at a time (one IN_PROGRESS enrollment), and a lead is enrolled in a campaign at most once.
-- A write that would break one fails with a unique violation and its whole transaction rolls back;
-- PgStore.commit reports it as CONFLICT (409) naming the invariant (index names are matched there).
--
-- Databases written before these indexes may hold duplicates (two concurrent bulk enrollments both
-- enrolled the same leads). They are repaired first, keeping the oldest enrollment of each pair:
-- a duplicate of the same lead and campaign is soft-deleted, a second running sequence is stopped.
-- Each repaired row takes a new seq, so desktops pull the repair like any other change.
UPDATE documents d SET deleted = true, seq = nextval('documents_seq')
  FROM (
    SELECT collection, id, row_number() OVER (
             PARTITION BY workspace_id, doc->>'leadId', doc->>'campaignId'
             ORDER BY (doc->>'status' = 'IN_PROGRESS') DESC, doc->>'createdAt', id) AS n
      FROM documents
     WHERE collection = 'enrollments' AND NOT deleted
  ) dup
 WHERE d.collection = dup.collection AND d.id = dup.id AND dup.n > 1;

UPDATE documents d
   SET seq = nextval('documents_seq'),
       doc = d.doc || jsonb_build_object('status', 'STOPPED', 'stoppedReason', 'duplicate', 'nextActionAt', NULL,
                                          'updatedAt', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
  FROM (
    SELECT collection, id, row_number() OVER (PARTITION BY workspace_id, doc->>'leadId' ORDER BY doc->>'createdAt', id) AS n
      FROM documents
     WHERE collection = 'enrollments' AND NOT deleted AND doc->>'status' = 'IN_PROGRESS'
  ) dup
 WHERE d.collection = dup.collection AND d.id = dup.id AND dup.n > 1;

CREATE UNIQUE INDEX enrollments_one_running ON documents (workspace_id, (doc->>'leadId'))
  WHERE collection = 'enrollments' AND NOT deleted AND doc->>'status' = 'IN_PROGRESS';

CREATE UNIQUE INDEX enrollments_one_per_campaign ON documents (workspace_id, (doc->>'leadId'), (doc->>'campaignId'))
  WHERE collection = 'enrollments' AND NOT deleted;
