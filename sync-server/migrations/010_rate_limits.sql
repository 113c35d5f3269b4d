-- The per-API-key rate limit shared by every server process on this database: the key's
-- "theoretical arrival time" (GCRA) in epoch milliseconds. Rows whose time has passed carry no
-- information and are swept by maintenance.
CREATE TABLE rate_limits (
  key text PRIMARY KEY,
  tat_ms bigint NOT NULL
);
CREATE INDEX rate_limits_tat ON rate_limits (tat_ms);
