-- Plain equality columns inside GIN indexes (007_lead_search_scoped.sql). In its own migration, like
-- pg_trgm (000): PGlite's planner ignored an index created in the transaction that created its
-- operator class.
CREATE EXTENSION IF NOT EXISTS btree_gin SCHEMA public;
