-- Mailbox sign-ins with OAuth 2.0 begun on this server and not completed yet (sdrProfiles.oauth.*):
-- kept here, not in a process's memory, because the browser's redirect may reach another server
-- process behind the load balancer. The state is stored as its SHA-256 (it travels in URLs); the
-- PKCE verifier and the provider's client are sealed with CREDENTIALS_KEY (AES-256-GCM, bound to
-- the workspace). A row is taken once (DELETE ... RETURNING): a replayed state finds nothing.
-- Rows live 10 minutes; each begin removes the expired ones.
CREATE TABLE oauth_pending (
  state_hash text PRIMARY KEY,
  workspace_id text NOT NULL,
  member_id text NOT NULL,
  sealed text NOT NULL,
  key_id text NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX oauth_pending_expires ON oauth_pending (expires_at);
