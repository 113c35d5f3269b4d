-- Lookups the runner makes on every inbound event and every tick (shared/engine/inbound.ts,
-- direct.ts): a chat's messages, a message by its network id, and the queued direct messages.
-- Without these PostgreSQL read every message of the workspace for each of them.
CREATE INDEX messages_chat ON documents (workspace_id, (doc->>'chatId'))
  WHERE collection = 'messages' AND NOT deleted;
CREATE INDEX messages_external ON documents (workspace_id, (doc->>'externalId'))
  WHERE collection = 'messages' AND NOT deleted;
CREATE INDEX messages_status ON documents (workspace_id, (doc->>'status'))
  WHERE collection = 'messages' AND NOT deleted;
