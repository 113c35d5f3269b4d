-- The leads table's default order, newest first with ties by id as JavaScript compares strings
-- (orderSql in cond-sql.ts: createdAt DESC, id COLLATE "C" ASC), read straight from the index.
-- The first index held id in the database's collation and ascending with createdAt: it could give
-- createdAt's order only, so every first page read and sorted the whole newest tie, and an import
-- gives all 5,000 leads of a call one creation time. Measured at 100k imported leads with no
-- ANALYZE: the text search's head (the newest 1,000 leads, cond-sql.ts headFirstSql) took 54-61 ms
-- of a 64-82 ms search, an Incremental Sort over the 5,001 rows of the tie; with this index the
-- first 51 leads are 51 index entries (7.8 -> 0.17 ms on a synthetic table of the same shape).
-- Oldest first (createdAt ASC) still reads its first tie and sorts it, as before.
DROP INDEX leads_created;
CREATE INDEX leads_created ON documents (workspace_id, ((doc->>'createdAt') COLLATE "C") DESC, id COLLATE "C")
  WHERE collection = 'leads' AND NOT deleted;
