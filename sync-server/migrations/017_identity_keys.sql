-- A lead's identity keys (shared/intake/identity.ts: profile key, email key, name-and-company key),
-- computed by PgStore.commit from the document whenever it writes a lead and kept beside it, never
-- inside it (a pushed document is stored as pushed). A look-up of a person is one probe of one of
-- these indexes per key, whatever spelling the lead was stored with. NULL: the lead has no such key
-- (and every other collection's rows). COLLATE "C": keys order as JavaScript compares strings, the
-- order of StoreReader.duplicateGroups.
--
-- Adding nullable columns without a default changes no row (a catalog update). The indexes are
-- partial on non-NULL keys, so on an existing database they are built empty; existing leads get
-- their keys from identity-backfill.ts after the migrations, in short batches of their own
-- (sync-server/identity-backfill.ts: ~1M leads in minutes, writers wait at most one batch).
ALTER TABLE documents ADD COLUMN profile_key text COLLATE "C";
ALTER TABLE documents ADD COLUMN email_key text COLLATE "C";
ALTER TABLE documents ADD COLUMN name_company_key text COLLATE "C";

CREATE INDEX leads_profile_key ON documents (workspace_id, profile_key)
  WHERE collection = 'leads' AND NOT deleted AND profile_key IS NOT NULL;
CREATE INDEX leads_email_key ON documents (workspace_id, email_key)
  WHERE collection = 'leads' AND NOT deleted AND email_key IS NOT NULL;
CREATE INDEX leads_name_company_key ON documents (workspace_id, name_company_key)
  WHERE collection = 'leads' AND NOT deleted AND name_company_key IS NOT NULL;
