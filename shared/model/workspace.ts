import type { FromSchema } from 'json-schema-to-ts';
import { BASE_PROPERTIES, BASE_REQUIRED, ID, NULLABLE_TEXT, NULLABLE_TIMESTAMP, ROLES, SUBSCRIPTION_STATUSES, TIMESTAMP } from './common.ts';

/** A workspace: one team's CRM. `workspaceId` equals `id` so every collection scopes the same way. */
export const workspaceSchema = {
  title: 'workspaces',
  // 1: publicUrl (optional).
  version: 1,
  primaryKey: 'id',
  type: 'object',
  properties: {
    ...BASE_PROPERTIES,
    name: { type: 'string', minLength: 1, maxLength: 200 },
    subscriptionStatus: { type: 'string', enum: SUBSCRIPTION_STATUSES },
    /** The sync server's public https address (its PUBLIC_URL setting), written there by the
     * server, so that every host sending this workspace's email (a desktop too) can put the
     * one-click unsubscribe link in it. Null or absent: no public server, mailto: unsubscribe only. */
    publicUrl: NULLABLE_TEXT,
  },
  required: [...BASE_REQUIRED, 'name', 'subscriptionStatus'],
  additionalProperties: false,
} as const;
export type Workspace = FromSchema<typeof workspaceSchema>;

/** A member of a workspace; the actor behind every API key and desktop session. */
export const memberSchema = {
  title: 'members',
  version: 0,
  primaryKey: 'id',
  type: 'object',
  properties: {
    ...BASE_PROPERTIES,
    name: { type: 'string', minLength: 1, maxLength: 200 },
    email: { type: 'string', maxLength: 320 },
    role: { type: 'string', enum: ROLES },
  },
  required: [...BASE_REQUIRED, 'name', 'email', 'role'],
  additionalProperties: false,
} as const;
export type Member = FromSchema<typeof memberSchema>;

/** API keys live only on the sync server (never replicated): only a hash of the secret is kept. */
export const apiKeySchema = {
  title: 'apiKeys',
  version: 0,
  primaryKey: 'id',
  type: 'object',
  properties: {
    ...BASE_PROPERTIES,
    memberId: ID,
    name: { type: 'string', minLength: 1, maxLength: 200 },
    prefix: { type: 'string', maxLength: 40 },
    hash: { type: 'string', maxLength: 128 },
    lastUsedAt: NULLABLE_TIMESTAMP,
    revokedAt: NULLABLE_TIMESTAMP,
  },
  required: [...BASE_REQUIRED, 'memberId', 'name', 'prefix', 'hash', 'lastUsedAt', 'revokedAt'],
  additionalProperties: false,
} as const;
export type ApiKey = FromSchema<typeof apiKeySchema>;

export { TIMESTAMP };
