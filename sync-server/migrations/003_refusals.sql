-- Why the server refused a document a desktop pushed, kept for the member whose push it was so the
-- desktop can show the reason (GET /replication/refusals?since=).
CREATE TABLE refusals (
  id bigserial PRIMARY KEY,
  workspace_id text NOT NULL,
  member_id text NOT NULL,
  collection text NOT NULL,
  document_id text NOT NULL,
  code text NOT NULL,
  message text NOT NULL,
  details jsonb NOT NULL DEFAULT '{}'::jsonb,
  at timestamptz NOT NULL
);
CREATE INDEX refusals_member ON refusals (workspace_id, member_id, at);
