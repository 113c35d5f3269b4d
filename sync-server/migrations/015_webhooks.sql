-- Webhooks (shared/ops/webhooks.ts, sync-server/webhooks/): endpoints, the outbox of events, one
-- delivery per event and endpoint, and the log of attempts. Never documents: an endpoint holds a
-- signing secret, and documents replicate to every desktop.

-- `secret` and `previous_secret` are AES-256-GCM ciphertext under CREDENTIALS_KEY (like
-- sender_credentials), bound to the workspace and endpoint; `previous_secret` still signs until
-- `previous_expires_at` (rotation). `lease_owner`/`lease_until`: the process delivering to the
-- endpoint right now (one at a time, so deliveries go out in order).
CREATE TABLE webhook_endpoints (
  id text PRIMARY KEY,
  workspace_id text NOT NULL,
  url text NOT NULL,
  description text NOT NULL DEFAULT '',
  events text[] NOT NULL,
  enabled boolean NOT NULL DEFAULT true,
  disabled_reason text,
  secret text NOT NULL,
  key_id text NOT NULL,
  secret_created_at timestamptz NOT NULL,
  previous_secret text,
  previous_key_id text,
  previous_expires_at timestamptz,
  failing_since timestamptz,
  last_success_at timestamptz,
  lease_owner text,
  lease_until timestamptz,
  created_at timestamptz NOT NULL,
  created_by text NOT NULL,
  updated_at timestamptz NOT NULL
);
CREATE INDEX webhook_endpoints_workspace ON webhook_endpoints (workspace_id, created_at);

-- The outbox: written in the transaction of the change that raised the event (PgStore.commit), so an
-- event exists exactly when its change committed. `body` is the exact JSON text signed and sent.
CREATE TABLE webhook_events (
  id text PRIMARY KEY,
  workspace_id text NOT NULL,
  type text NOT NULL,
  body text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- One row per event and endpoint. `seq` orders an endpoint's deliveries (commit order within a
-- workspace, whose writers hold one lock); `next_attempt_at` null means due now.
CREATE TABLE webhook_deliveries (
  id text PRIMARY KEY,
  seq bigserial NOT NULL,
  workspace_id text NOT NULL,
  endpoint_id text NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  event_id text NOT NULL REFERENCES webhook_events (id) ON DELETE CASCADE,
  status text NOT NULL DEFAULT 'pending',
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz,
  redelivery_of text,
  created_at timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz
);
CREATE UNIQUE INDEX webhook_deliveries_seq ON webhook_deliveries (seq);
CREATE INDEX webhook_deliveries_queue ON webhook_deliveries (endpoint_id, seq) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_log ON webhook_deliveries (endpoint_id, seq DESC);
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);
CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (finished_at) WHERE finished_at IS NOT NULL;

CREATE TABLE webhook_attempts (
  id bigserial PRIMARY KEY,
  delivery_id text NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
  attempt integer NOT NULL,
  at timestamptz NOT NULL,
  duration_ms integer NOT NULL,
  request_headers jsonb NOT NULL,
  response_status integer,
  response_excerpt text NOT NULL DEFAULT '',
  error text
);
CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id, attempt);
