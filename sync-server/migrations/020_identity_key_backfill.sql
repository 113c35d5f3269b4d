-- The identity keys' backfill (sync-server/identity-backfill.ts) in the background, while the server
-- serves: one row per workspace whose leads were written before migration 017, with its progress.
-- The leads to visit are those with a seq up to upto_seq (every lead written since, by this version,
-- got its keys when written, and a lead rewritten moves past upto_seq); after_seq is how far the
-- visit got, committed with each batch, so a restart (or a SIGKILL) goes on from there. A server
-- process takes a workspace's row FOR UPDATE SKIP LOCKED for one batch: two processes never do the
-- same batch, and each does another workspace's. Until a workspace's row is finished, look-ups by
-- identity key in it are refused with 503 and Retry-After (nothing else is).
CREATE TABLE identity_key_backfill (
  workspace_id text PRIMARY KEY,
  upto_seq bigint NOT NULL,
  after_seq bigint NOT NULL DEFAULT 0,
  -- Leads (deleted ones too) with a seq up to upto_seq at the upgrade, and how many were visited.
  total bigint NOT NULL,
  visited bigint NOT NULL DEFAULT 0,
  -- Leads whose keys a batch wrote (a lead already right is left alone).
  updated bigint NOT NULL DEFAULT 0,
  -- A request needed this workspace's keys: it goes before the others.
  wanted_at timestamptz,
  started_at timestamptz,
  finished_at timestamptz
);

-- Every workspace with leads, unless the backfill already ran whole (a server of this version that
-- ran it before serving recorded it as 017_identity_keys.backfill). An index-only count along
-- documents_pull: seconds at 1M leads.
INSERT INTO identity_key_backfill (workspace_id, upto_seq, total)
SELECT workspace_id, max(seq), count(*) FROM documents
 WHERE collection = 'leads'
   AND NOT EXISTS (SELECT 1 FROM schema_migrations WHERE name = '017_identity_keys.backfill')
 GROUP BY workspace_id;
