-- A lead's identity keys (shared/intake/identity.ts: profile key, email key, name-and-company key),
-- computed by PgStore.commit from the document whenever it writes a lead and kept beside it, never
-- inside it (a pushed document is stored as pushed). A look-up of a person is one probe of one of
-- these indexes per key, whatever spelling the lead was stored with. NULL: the lead has no such key
-- (and every other collection's rows). COLLATE "C": keys order as JavaScript compares strings, the
-- order of StoreReader.duplicateGroups.
--
-- Adding nullable columns without a default changes no row (a catalog update). The indexes have the
-- predicate of the other lead indexes and no more (a predicate on the key itself, IS NOT NULL, left
-- the planner of a database without statistics free to probe another index and filter the whole
-- workspace per key: 200 s for one 5,000-row import call on PGlite). Existing leads get
-- their keys from identity-backfill.ts after the migrations, in short batches of their own
-- (sync-server/identity-backfill.ts: ~1M leads in minutes, writers wait at most one batch).
ALTER TABLE documents ADD COLUMN profile_key text COLLATE "C";
ALTER TABLE documents ADD COLUMN email_key text COLLATE "C";
ALTER TABLE documents ADD COLUMN name_company_key text COLLATE "C";

CREATE INDEX leads_profile_key ON documents (workspace_id, profile_key)
  WHERE collection = 'leads' AND NOT deleted;
CREATE INDEX leads_email_key ON documents (workspace_id, email_key)
  WHERE collection = 'leads' AND NOT deleted;
CREATE INDEX leads_name_company_key ON documents (workspace_id, name_company_key)
  WHERE collection = 'leads' AND NOT deleted;
