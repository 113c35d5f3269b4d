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

/** What a received reply says, as the SDR triages it (messages.replyLabel, replyLabelSuggested). */
export const REPLY_LABELS = ['interested', 'not_interested', 'out_of_office', 'wrong_person', 'unsubscribe', 'other'] as const;
export type ReplyLabel = (typeof REPLY_LABELS)[number];

/** How a lead unsubscribed (leads.unsubscribeSource): the one-click link of an email's
 * List-Unsubscribe header (RFC 8058), the header's mailto: address, or a reply labelled unsubscribe. */
export const UNSUBSCRIBE_SOURCES = ['one_click', 'mailto', 'reply'] as const;
export type UnsubscribeSource = (typeof UNSUBSCRIBE_SOURCES)[number];

export const DAYS = ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday'] as const;
export type Day = (typeof DAYS)[number];

/** Maximum length of a connection request note (characters). */
export const CONNECTION_NOTE_MAX_LENGTH = 300;

/**
 * Field limits of stored documents, defined once here and enforced by `schemaProblem`
 * (validate.ts) on every write: operations and the runner (through the integrity rule), replication
 * pushes on the sync server, and the desktop's local commits. They sit beside the RxDB schemas
 * rather than inside them: a changed RxDB schema needs a new schema version and a migration on every
 * desktop. Operation inputs use the same numbers where they take these fields.
 */
export const TEXT_LIMITS = {
  /** Any text field of a document without a tighter limit below. */
  text: 20_000,
  /** A lead's email (RFC 5321 allows 254 in a path; 320 is the usual storage bound). */
  email: 320,
  /** Names, titles, companies, places, phone numbers, custom column values of a lead. */
  leadField: 2_000,
  /** Profile and website addresses. */
  url: 2_000,
  /** A message's text: a step's content with its merge fields filled in. */
  messageText: 100_000,
  /** An email subject. */
  subject: 1_000,
  /** Short machine text: reasons, cursors, runner ids, channel settings. */
  short: 2_000,
} as const;

/** Text fields that PostgreSQL indexes with a btree (one index entry holds at most 2,704 bytes): their
 * UTF-8 size is bounded too, with room for lower-casing and the workspace id beside them. */
export const INDEXED_TEXT_MAX_BYTES = 1_500;

/** Most items in one array of a document, keys in one object (variables, channel settings), and
 * nesting levels of a document (ours are at most 5 deep; `campaigns.config` is free-form). */
export const DOCUMENT_MAX_ITEMS = 10_000;
export const DOCUMENT_MAX_KEYS = 1_000;
export const DOCUMENT_MAX_DEPTH = 16;

/** Stored times are ISO 8601 date-times from these years (PostgreSQL has no year 0, and a date
 * outside them is a typo or an attack, not a plan). */
export const TIMESTAMP_MIN_YEAR = 1900;
export const TIMESTAMP_MAX_YEAR = 9999;

/** Per collection: the longest text (in characters) of a field path; `*` is any array item or object
 * value. Fields not listed get TEXT_LIMITS.text; the RxDB schemas' own maxLength still applies. */
export const FIELD_LIMITS: Readonly<Record<string, Readonly<Record<string, number>>>> = {
  leads: {
    email: TEXT_LIMITS.email,
    leadIdentifier: TEXT_LIMITS.leadField,
    firstName: TEXT_LIMITS.leadField,
    lastName: TEXT_LIMITS.leadField,
    fullName: TEXT_LIMITS.leadField,
    company: TEXT_LIMITS.leadField,
    jobTitle: TEXT_LIMITS.leadField,
    location: TEXT_LIMITS.leadField,
    phone: TEXT_LIMITS.leadField,
    seniority: TEXT_LIMITS.leadField,
    socialUrl: TEXT_LIMITS.url,
    personalSocialUrl: TEXT_LIMITS.url,
    companySocialUrl: TEXT_LIMITS.url,
    websiteUrl: TEXT_LIMITS.url,
    profilePictureUrl: TEXT_LIMITS.url,
    meetingBookedSource: TEXT_LIMITS.short,
    'variables.*': TEXT_LIMITS.leadField,
  },
  leadGroups: { 'columns.*.builtInType': 100 },
  activities: { 'metadata.eventKind': 100 },
  campaigns: {
    webcamVideoName: TEXT_LIMITS.short,
    backgroundVideoName: TEXT_LIMITS.short,
    'steps.*.subject': TEXT_LIMITS.subject,
    'steps.*.sendCondition': 100,
    'steps.*.voiceNote.recordingId': TEXT_LIMITS.short,
    'steps.*.variants.*.name': 100,
    'steps.*.variants.*.subject': TEXT_LIMITS.subject,
    'settings.companyRelay.seniorities.*': 100,
  },
  enrollments: { stoppedReason: TEXT_LIMITS.short, 'doneSteps.*.at': 40, 'doneSteps.*.outcome': TEXT_LIMITS.short, 'variants.*': 100 },
  senders: {
    firstName: TEXT_LIMITS.leadField,
    lastName: TEXT_LIMITS.leadField,
    statusReason: TEXT_LIMITS.short,
    runnerId: 200,
    pollCursor: TEXT_LIMITS.short,
    'channelConfig.*': TEXT_LIMITS.short,
    unsubscribeKey: 200,
  },
  workspaces: { publicUrl: TEXT_LIMITS.url },
  messages: { text: TEXT_LIMITS.messageText, subject: TEXT_LIMITS.subject, externalId: TEXT_LIMITS.short, error: TEXT_LIMITS.short },
};

/** Fields kept in a btree index on the sync server (see INDEXED_TEXT_MAX_BYTES). */
export const INDEXED_TEXT_FIELDS: Readonly<Record<string, readonly string[]>> = {
  leads: ['email', 'socialUrl'],
};

// eslint-disable-next-line no-control-regex -- finding NUL is the point
const SUSPECT_TEXT = /[\u0000\uD800-\uDFFF]/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Why a string cannot be stored, or null. PostgreSQL refuses NUL (\u0000) in text and jsonb, and an
 * unpaired UTF-16 surrogate is not Unicode (it has no UTF-8 form). Every boundary refuses both; no
 * store escapes them. */
export function unstorableText(s: string): string | null {
  if (!SUSPECT_TEXT.test(s)) return null;
  if (s.includes('\u0000')) return 'must not contain NUL characters (\\u0000)';
  if (LONE_SURROGATE.test(s)) return 'must not contain unpaired UTF-16 surrogates (invalid Unicode)';
  return null;
}

const ISO_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-](\d{2}):(\d{2}))$/;

const daysIn = (year: number, month: number): number =>
  month === 2 ? (year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28) : [4, 6, 9, 11].includes(month) ? 30 : 31;

/** Why a string is not a storable ISO 8601 date-time (with a zone, years TIMESTAMP_MIN_YEAR to
 * TIMESTAMP_MAX_YEAR, a real calendar date and time), or null. Checked by arithmetic: it runs on
 * every timestamp of every write. */
export function timestampProblem(s: string): string | null {
  const m = ISO_DATE_TIME.exec(s);
  if (!m) return 'must be an ISO 8601 date-time with a time zone, like 2026-01-31T09:00:00.000Z';
  const n = (i: number): number => (m[i] === undefined ? 0 : Number(m[i]));
  const year = n(1);
  const month = n(2);
  const day = n(3);
  if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return 'is not a real calendar date';
  if (n(4) > 23 || n(5) > 59 || n(6) > 59 || n(7) > 23 || n(8) > 59) return 'is not a real time of day';
  if (year < TIMESTAMP_MIN_YEAR || year > TIMESTAMP_MAX_YEAR) return `must be in the years ${TIMESTAMP_MIN_YEAR} to ${TIMESTAMP_MAX_YEAR}`;
  return null;
}
