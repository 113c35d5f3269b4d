-- Every collection's documents in one table: the document itself is untouched jsonb; what the server
-- needs (workspace, change order, soft delete) lives in columns beside it, never inside it.
CREATE SEQUENCE documents_seq AS bigint;

CREATE TABLE documents (
  collection text NOT NULL,
  id text NOT NULL,
  workspace_id text NOT NULL,
  -- Assigned under the workspace writer lock, so seq order is commit order within a workspace.
  seq bigint NOT NULL,
  deleted boolean NOT NULL DEFAULT false,
  doc jsonb NOT NULL,
  PRIMARY KEY (collection, id)
);

-- Replication pulls: one workspace's changes of one collection in seq order.
CREATE INDEX documents_pull ON documents (collection, workspace_id, seq);

-- API keys are looked up by hash across workspaces on every request.
CREATE INDEX api_keys_hash ON documents ((doc->>'hash')) WHERE collection = 'apiKeys';

-- Lead lists and filters at 100k leads per workspace.
CREATE INDEX leads_created ON documents (workspace_id, ((doc->>'createdAt') COLLATE "C"), id)
  WHERE collection = 'leads' AND NOT deleted;
CREATE INDEX leads_stage ON documents (workspace_id, (doc->>'pipelineStageId'))
  WHERE collection = 'leads' AND NOT deleted;
CREATE INDEX leads_tag ON documents (workspace_id, (doc->>'tagId'))
  WHERE collection = 'leads' AND NOT deleted;
CREATE INDEX leads_email ON documents (workspace_id, (doc->>'email'))
  WHERE collection = 'leads' AND NOT deleted;
CREATE INDEX leads_social_url ON documents (workspace_id, (doc->>'socialUrl'))
  WHERE collection = 'leads' AND NOT deleted;
-- Free-text lead search: trigrams over the lower-cased query fields (LEAD_QUERY_FIELDS of
-- shared/ops/lead-search.ts, in that order). The expression must stay identical to LEAD_SEARCH_SQL in
-- sync-server/cond-sql.ts or the planner will not use the index.
CREATE INDEX leads_search ON documents USING gin (
  lower(
    coalesce(doc->>'firstName', '') || E'\x1f' || coalesce(doc->>'lastName', '') || E'\x1f' ||
    coalesce(doc->>'fullName', '') || E'\x1f' || coalesce(doc->>'email', '') || E'\x1f' ||
    coalesce(doc->>'company', '') || E'\x1f' || coalesce(doc->>'phone', '') || E'\x1f' ||
    coalesce(doc->>'socialUrl', '') || E'\x1f' || coalesce(doc->>'personalSocialUrl', '')
  ) gin_trgm_ops
) WHERE collection = 'leads' AND NOT deleted;

CREATE INDEX enrollments_campaign ON documents (workspace_id, (doc->>'campaignId'))
  WHERE collection = 'enrollments' AND NOT deleted;
CREATE INDEX enrollments_lead ON documents (workspace_id, (doc->>'leadId'))
  WHERE collection = 'enrollments' AND NOT deleted;
CREATE INDEX activities_lead ON documents (workspace_id, (doc->>'leadId'))
  WHERE collection = 'activities' AND NOT deleted;
CREATE INDEX messages_lead ON documents (workspace_id, (doc->>'leadId'))
  WHERE collection = 'messages' AND NOT deleted;
-- Small collections (campaigns, tags, stages, ...) are served by the primary key and this index.
CREATE INDEX documents_workspace ON documents (collection, workspace_id) WHERE NOT deleted;
