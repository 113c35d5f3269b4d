-- The planner ignores the statistics of partial indexes (they need not describe the whole table), and
-- every expression index on documents is partial, so it guessed the selectivity of
-- `doc->>'email' = ANY($1)` and friends: at 100k leads it estimated 43,638 rows for 1,000 unknown
-- emails and scanned the whole table (130 ms) instead of probing leads_email (3 ms). Statistics
-- objects on the expressions give it their real distribution.
CREATE STATISTICS documents_email ON (doc->>'email') FROM documents;
CREATE STATISTICS documents_social_url ON (doc->>'socialUrl') FROM documents;
CREATE STATISTICS documents_full_name ON (doc->>'fullName') FROM documents;
CREATE STATISTICS documents_stage ON (doc->>'pipelineStageId') FROM documents;
CREATE STATISTICS documents_tag ON (doc->>'tagId') FROM documents;
CREATE STATISTICS documents_lead ON (doc->>'leadId') FROM documents;
CREATE STATISTICS documents_campaign ON (doc->>'campaignId') FROM documents;

-- Imports match people by name and company when they have no profile URL or email in common.
CREATE INDEX leads_full_name ON documents (workspace_id, (doc->>'fullName'))
  WHERE collection = 'leads' AND NOT deleted;

ANALYZE documents;
