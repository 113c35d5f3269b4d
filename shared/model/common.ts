/** Building blocks shared by every collection schema. Each schema is an RxDB JSON schema and the
 * single source of truth: TypeScript types are derived from it with json-schema-to-ts. */

export const ID = { type: 'string', maxLength: 36 } as const;
export const TIMESTAMP = { type: 'string', maxLength: 40 } as const;
export const NULLABLE_TIMESTAMP = { type: ['string', 'null'], maxLength: 40 } as const;
export const NULLABLE_ID = { type: ['string', 'null'], maxLength: 36 } as const;
export const TEXT = { type: 'string' } as const;
export const NULLABLE_TEXT = { type: ['string', 'null'] } as const;

/** Fields every document carries. */
export const BASE_PROPERTIES = {
  id: ID,
  workspaceId: ID,
  createdAt: TIMESTAMP,
  updatedAt: TIMESTAMP,
} as const;
export const BASE_REQUIRED = ['id', 'workspaceId', 'createdAt', 'updatedAt'] as const;

export const ROLES = ['owner', 'admin', 'member'] as const;
export type Role = (typeof ROLES)[number];

export const SUBSCRIPTION_STATUSES = ['active', 'trialing', 'past_due', 'canceled'] as const;
export type SubscriptionStatus = (typeof SUBSCRIPTION_STATUSES)[number];

export const STAGE_CATEGORIES = ['NEW', 'CONTACTED', 'ENGAGED', 'MEETING_BOOKED', 'ON_HOLD', 'WON', 'LOST'] as const;
export type StageCategory = (typeof STAGE_CATEGORIES)[number];

export const CLOSE_REASONS = ['NOT_ICP', 'NOT_INTERESTED', 'BAD_TIMING', 'COMPETITOR', 'NO_RESPONSE', 'OTHER'] as const;
export type CloseReason = (typeof CLOSE_REASONS)[number];

/** The seven limit keys of the specification's "Daily limit set". */
export const LIMIT_KEYS = [
  'messages',
  'inmails',
  'connectionRequests',
  'connectionRequestsWithNote',
  'comments',
  'reactions',
  'profileVisits',
] as const;
export type LimitKey = (typeof LIMIT_KEYS)[number];

export const LIMIT_SET = {
  type: 'object',
  properties: Object.fromEntries(LIMIT_KEYS.map((k) => [k, { type: 'integer', minimum: 0 }])) as {
    [K in LimitKey]: { readonly type: 'integer'; readonly minimum: 0 };
  },
  required: LIMIT_KEYS,
  additionalProperties: false,
} as const;
export type LimitSet = Record<LimitKey, number>;

export const STEP_TYPES = [
  'SEND_MESSAGE',
  'CONNECTION_REQUEST',
  'INMAIL',
  'EMAIL',
  'WAIT',
  'PROFILE_VISIT',
  'REACT_TO_POST',
  'CONDITION',
] as const;
export type StepType = (typeof STEP_TYPES)[number];

export const CONDITION_TESTS = ['CONNECTED', 'REPLIED', 'HAS_EMAIL', 'OPENED_EMAIL'] as const;
export type ConditionTest = (typeof CONDITION_TESTS)[number];

export const VOICE_NOTE_MODES = ['none', 'ai_voice', 'recorded'] as const;
export type VoiceNoteMode = (typeof VOICE_NOTE_MODES)[number];

export const TASK_STATUSES = ['open', 'completed', 'cancelled'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

export const ENROLLMENT_STATUSES = ['IN_PROGRESS', 'PAUSED', 'COMPLETED', 'STOPPED', 'REPLIED'] as const;
export type EnrollmentStatus = (typeof ENROLLMENT_STATUSES)[number];

export const CHANNEL_KINDS = ['sandbox', 'email', 'http'] as const;
export type ChannelKind = (typeof CHANNEL_KINDS)[number];

/** What a sender can do; a step is valid for a sender only when its action is listed. */
export const SENDER_CAPABILITIES = [
  'message',
  'connection_request',
  'inmail',
  'email',
  'profile_visit',
  'reaction',
  'voice_note',
  'post_reading',
] as const;
export type SenderCapability = (typeof SENDER_CAPABILITIES)[number];

export const DAYS = ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday'] as const;
export type Day = (typeof DAYS)[number];

/** Maximum length of a connection request note (characters). */
export const CONNECTION_NOTE_MAX_LENGTH = 300;
