-- Sender secrets (SMTP passwords, connector tokens) for the senders this server's runner hosts.
-- Never a document: documents replicate to every member. `secret` is AES-256-GCM ciphertext
-- (v1:iv:tag:data, base64) under CREDENTIALS_KEY, bound to its workspace and sender; `key_id`
-- names the key that sealed it, so a server started with another key says so instead of failing
-- to log in.
CREATE TABLE sender_credentials (
  workspace_id text NOT NULL,
  sender_id text NOT NULL,
  secret text NOT NULL,
  key_id text NOT NULL,
  updated_at timestamptz NOT NULL,
  updated_by text NOT NULL,
  PRIMARY KEY (workspace_id, sender_id)
);
