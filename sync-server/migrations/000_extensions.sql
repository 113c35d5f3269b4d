-- Trigram indexes for lead search. In its own migration (own transaction): an index created in the
-- transaction that created its operator class was not picked by the planner on PGlite until reindexed.
CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public;
