-- Responses of POST requests sent with an Idempotency-Key, replayed for 24 hours.
CREATE TABLE idempotency_keys (
  api_key_id text NOT NULL,
  key text NOT NULL,
  request_hash text NOT NULL,
  status integer,
  response jsonb,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (api_key_id, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
