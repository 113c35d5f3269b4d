import type { FromSchema } from 'json-schema-to-ts';
import {
  BASE_PROPERTIES,
  BASE_REQUIRED,
  CHANNEL_KINDS,
  ENROLLMENT_STATUSES,
  ID,
  LIMIT_SET,
  NULLABLE_ID,
  NULLABLE_TEXT,
  NULLABLE_TIMESTAMP,
  REPLY_LABELS,
  SENDER_CAPABILITIES,
  STEP_TYPES,
  TEXT,
  VOICE_NOTE_MODES,
} from './common.ts';

const DAY_WINDOW = {
  type: 'object',
  properties: {
    enabled: { type: 'boolean' },
    start: { type: 'string', pattern: '^([01][0-9]|2[0-3]):[0-5][0-9]$' },
    end: { type: 'string', pattern: '^([01][0-9]|2[0-3]):[0-5][0-9]$|^24:00$' },
  },
  required: ['enabled', 'start', 'end'],
  additionalProperties: false,
} as const;

export const scheduleSchema = {
  type: 'object',
  properties: {
    timeZone: { type: 'string', minLength: 1, maxLength: 64 },
    days: {
      type: 'object',
      properties: {
        monday: DAY_WINDOW,
        tuesday: DAY_WINDOW,
        wednesday: DAY_WINDOW,
        thursday: DAY_WINDOW,
        friday: DAY_WINDOW,
        saturday: DAY_WINDOW,
        sunday: DAY_WINDOW,
      },
      required: ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday'],
      additionalProperties: false,
    },
  },
  required: ['timeZone', 'days'],
  additionalProperties: false,
} as const;
export type Schedule = FromSchema<typeof scheduleSchema>;
export type DayWindow = Schedule['days']['monday'];

export const leadPickingSchema = {
  type: 'object',
  properties: {
    preferNewLeads: { type: 'boolean' },
    companyRelay: {
      type: 'object',
      properties: {
        enabled: { type: 'boolean' },
        maxPersonsPerCompany: { type: 'integer', minimum: 1, maximum: 50 },
        seniorities: { type: 'array', items: { type: 'string' } },
      },
      required: ['enabled', 'maxPersonsPerCompany', 'seniorities'],
      additionalProperties: false,
    },
  },
  required: ['preferNewLeads', 'companyRelay'],
  additionalProperties: false,
} as const;
export type LeadPicking = FromSchema<typeof leadPickingSchema>;

export const stepSchema = {
  type: 'object',
  properties: {
    id: ID,
    type: { type: 'string', enum: STEP_TYPES },
    /** The condition step this step's path hangs under; null on the main path. */
    parentStepId: NULLABLE_ID,
    /** Which path of the parent condition; null on the main path. */
    branch: { type: ['string', 'null'], enum: ['yes', 'no', null] },
    content: TEXT,
    subject: TEXT,
    waitTimeSeconds: { type: 'integer', minimum: 0 },
    /** For CONDITION steps the test (CONNECTED, REPLIED, HAS_EMAIL, OPENED_EMAIL); for messages an
     * optional guard with the same vocabulary. */
    sendCondition: TEXT,
    stopIfSkipped: { type: 'boolean' },
    emailThreading: { type: 'string', enum: ['new_thread', 'same_thread'] },
    voiceNote: {
      type: 'object',
      properties: {
        mode: { type: 'string', enum: VOICE_NOTE_MODES },
        recordingId: NULLABLE_TEXT,
      },
      required: ['mode'],
      additionalProperties: false,
    },
    variants: {
      type: 'array',
      items: {
        type: 'object',
        properties: { id: ID, name: TEXT, text: TEXT, subject: TEXT },
        required: ['id', 'name', 'text', 'subject'],
        additionalProperties: false,
      },
    },
    variantAssignment: {
      type: 'object',
      properties: {
        mode: { type: 'string', enum: ['default', 'random', 'round_robin'] },
        defaultVariantId: NULLABLE_ID,
      },
      required: ['mode', 'defaultVariantId'],
      additionalProperties: false,
    },
  },
  required: [
    'id', 'type', 'parentStepId', 'branch', 'content', 'subject', 'waitTimeSeconds', 'sendCondition',
    'stopIfSkipped', 'emailThreading', 'voiceNote', 'variants', 'variantAssignment',
  ],
  additionalProperties: false,
} as const;
export type Step = FromSchema<typeof stepSchema>;
export type StepVariant = Step['variants'][number];

/** A campaign with its schedule, settings, senders and sequence embedded, so a step edit is one
 * atomic document write. Steps are stored in path order: each path (main, or a condition's yes/no)
 * keeps its steps in array order. */
export const campaignSchema = {
  title: 'campaigns',
  // 1: optional fields added since the first release (see migrationStrategies in electron/backend/local-db.ts).
  version: 1,
  primaryKey: 'id',
  type: 'object',
  properties: {
    ...BASE_PROPERTIES,
    name: { type: 'string', minLength: 1, maxLength: 200 },
    leadGroupId: ID,
    sequenceId: ID,
    running: { type: 'boolean' },
    startedAt: NULLABLE_TIMESTAMP,
    /** Why the campaign was paused by the system (e.g. the subscription lapsed); null otherwise. */
    pausedReason: NULLABLE_TEXT,
    config: { type: ['object', 'null'] },
    webcamVideoName: TEXT,
    backgroundVideoName: TEXT,
    schedule: scheduleSchema,
    settings: leadPickingSchema,
    senders: {
      type: 'array',
      items: {
        type: 'object',
        properties: { sdrProfileId: ID, paused: { type: 'boolean' } },
        required: ['sdrProfileId', 'paused'],
        additionalProperties: false,
      },
    },
    steps: { type: 'array', items: stepSchema },
  },
  required: [
    ...BASE_REQUIRED, 'name', 'leadGroupId', 'sequenceId', 'running', 'startedAt', 'config', 'webcamVideoName',
    'backgroundVideoName', 'schedule', 'settings', 'senders', 'steps',
  ],
  additionalProperties: false,
} as const;
export type Campaign = FromSchema<typeof campaignSchema>;

/** A lead in a campaign: progress through the sequence, the assigned sender, the next action time. */
export const enrollmentSchema = {
  title: 'enrollments',
  // 1: optional fields added since the first release (see migrationStrategies in electron/backend/local-db.ts).
  version: 1,
  primaryKey: 'id',
  type: 'object',
  properties: {
    ...BASE_PROPERTIES,
    leadId: ID,
    campaignId: ID,
    status: { type: 'string', enum: ENROLLMENT_STATUSES },
    /** The assigned sender; null = unassigned, the campaign's senders pick the lead up. */
    sdrProfileId: NULLABLE_ID,
    /** The next step to execute; null when the sequence is finished. */
    currentStepId: NULLABLE_ID,
    nextActionAt: NULLABLE_TIMESTAMP,
    /** Set once the sender has exchanged messages with the lead (a reply or an accepted request). */
    inConversationAt: NULLABLE_TIMESTAMP,
    completedAt: NULLABLE_TIMESTAMP,
    stoppedReason: NULLABLE_TEXT,
    /** Steps already executed (never twice) with when. */
    doneSteps: {
      type: 'array',
      items: {
        type: 'object',
        properties: { stepId: ID, at: { type: 'string' }, outcome: TEXT },
        required: ['stepId', 'at', 'outcome'],
        additionalProperties: false,
      },
    },
    /** Chosen message variant per step id. */
    variants: { type: 'object', additionalProperties: { type: 'string' } },
    /** Number of attempts of the current step that failed transiently. */
    attempts: { type: 'integer', minimum: 0 },
    /** Why nextActionAt was moved by the runner (outside the sending window, daily limit reached,
     * sender backing off); null or absent when the enrollment simply waits for its step. */
    waitReason: {
      type: ['string', 'null'],
      /* delivery_unknown: the last send was interrupted and the channel cannot tell whether it
       * happened; the enrollment waits for a person (campaigns.leads.resendUnknown). weekly_limit:
       * the sender's weekly connection-request cap. */
      enum: ['outside_window', 'daily_limit', 'sender_limited', 'weekly_limit', 'delivery_unknown', null],
    },
  },
  required: [
    ...BASE_REQUIRED, 'leadId', 'campaignId', 'status', 'sdrProfileId', 'currentStepId', 'nextActionAt',
    'inConversationAt', 'completedAt', 'stoppedReason', 'doneSteps', 'variants', 'attempts',
  ],
  additionalProperties: false,
} as const;
export type Enrollment = FromSchema<typeof enrollmentSchema>;

/** What a sender check looks at, one line each (channels/verify-sender.ts). 'hosts': the sync server
 * refuses the sender's host; 'setup': the check could not run where it was asked. */
export const SENDER_CHECKS = ['smtp', 'imap', 'sent_folder', 'spf', 'dkim', 'dmarc', 'hosts', 'setup'] as const;
export type SenderCheckName = (typeof SENDER_CHECKS)[number];

/** A sender profile (sdrProfile): a connected account with limits. */
export const senderSchema = {
  title: 'senders',
  // 1: optional fields added since the first release (see migrationStrategies in electron/backend/local-db.ts).
  // 2: warmedUp, unsubscribeKey (optional).
  // 3: lastCheck (optional).
  version: 3,
  primaryKey: 'id',
  type: 'object',
  properties: {
    ...BASE_PROPERTIES,
    name: { type: 'string', minLength: 1, maxLength: 200 },
    firstName: TEXT,
    lastName: TEXT,
    ownerMemberId: ID,
    channel: { type: 'string', enum: CHANNEL_KINDS },
    /** Channel settings without secrets (SMTP host/port/user/from, connector URL, sandbox seed).
     * Secrets stay on the machine that hosts the sender. */
    channelConfig: { type: 'object', additionalProperties: { type: ['string', 'number', 'boolean'] } },
    /** available, paused, limited (backing off after a channel failure), disconnected. */
    status: { type: 'string', enum: ['available', 'paused', 'limited', 'disconnected'] },
    outreachPaused: { type: 'boolean' },
    backoffUntil: NULLABLE_TIMESTAMP,
    statusReason: NULLABLE_TEXT,
    premium: { type: 'boolean' },
    capabilities: { type: 'array', items: { type: 'string', enum: SENDER_CAPABILITIES } },
    timeZone: { type: 'string', minLength: 1, maxLength: 64 },
    limits: LIMIT_SET,
    planMax: LIMIT_SET,
    searchLimit: { type: 'integer', minimum: 0 },
    connectionNoteMaxLength: { type: 'integer', minimum: 1 },
    /** The runner (desktop or sync server) that holds this sender's lease; never two at once. */
    runnerId: NULLABLE_TEXT,
    runnerLeaseUntil: NULLABLE_TIMESTAMP,
    /** Where the runner continues reading the channel's events (opaque, from the channel). */
    pollCursor: NULLABLE_TEXT,
    /** Connection requests in any 7 days (default 100; capped at 7 x the plan's daily maximum). */
    weeklyConnectionLimit: { type: 'integer', minimum: 0 },
    /** When a new sender's ramp-up began: its limits grow from 20% to 100% over 14 days. Absent or
     * null: no ramp-up (senders from before ramp-ups existed). */
    rampUpStartedAt: NULLABLE_TIMESTAMP,
    /** The user said the account is already warmed up (an established mailbox or profile): it sends
     * at its full limits from the start, no ramp-up (the weekly cap still holds). Absent: false. */
    warmedUp: { type: 'boolean' },
    /** HMAC key (random, per sender) that signs the unsubscribe tokens of this sender's emails
     * (List-Unsubscribe); the sync server verifies one-click links with it. Absent or null: none yet
     * (the runner that holds the sender gives it one). See shared/replies/unsubscribe-token.ts. */
    unsubscribeKey: NULLABLE_TEXT,
    /** The last check of an email sender (login, Sent folder, SPF, DKIM, DMARC: channels/verify-sender.ts),
     * made when it was connected and by sdrProfiles.verify. Never a secret. Absent or null: never checked. */
    lastCheck: {
      type: ['object', 'null'],
      properties: {
        at: { type: 'string', maxLength: 40 },
        /** The DKIM selector the user named for the check, or null (the provider's defaults were tried). */
        dkimSelector: NULLABLE_TEXT,
        lines: {
          type: 'array',
          maxItems: 20,
          items: {
            type: 'object',
            properties: {
              check: { type: 'string', enum: SENDER_CHECKS },
              status: { type: 'string', enum: ['pass', 'warn', 'fail'] },
              message: TEXT,
              fix: NULLABLE_TEXT,
            },
            required: ['check', 'status', 'message', 'fix'],
            additionalProperties: false,
          },
        },
      },
      required: ['at', 'dkimSelector', 'lines'],
      additionalProperties: false,
    },
  },
  required: [
    ...BASE_REQUIRED, 'name', 'firstName', 'lastName', 'ownerMemberId', 'channel', 'channelConfig', 'status',
    'outreachPaused', 'backoffUntil', 'statusReason', 'premium', 'capabilities', 'timeZone', 'limits',
    'planMax', 'searchLimit', 'connectionNoteMaxLength',
  ],
  additionalProperties: false,
} as const;
export type Sender = FromSchema<typeof senderSchema>;

/** Per sender per day (in the sender's time zone) action counters; id = `${sdrProfileId}:${day}`. */
export const usageSchema = {
  title: 'usage',
  version: 0,
  primaryKey: 'id',
  type: 'object',
  properties: {
    id: { type: 'string', maxLength: 60 },
    workspaceId: ID,
    createdAt: { type: 'string', maxLength: 40 },
    updatedAt: { type: 'string', maxLength: 40 },
    sdrProfileId: ID,
    day: { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}$' },
    counts: {
      type: 'object',
      properties: {
        ...LIMIT_SET.properties,
        emails: { type: 'integer', minimum: 0 },
        searches: { type: 'integer', minimum: 0 },
      },
      required: [...LIMIT_SET.required, 'emails', 'searches'],
      additionalProperties: false,
    },
  },
  required: ['id', 'workspaceId', 'createdAt', 'updatedAt', 'sdrProfileId', 'day', 'counts'],
  additionalProperties: false,
} as const;
export type Usage = FromSchema<typeof usageSchema>;
export type UsageCounts = Usage['counts'];

/** The conversation log: every message sent to or received from a lead. */
export const messageSchema = {
  title: 'messages',
  // 1: optional fields added since the first release (see migrationStrategies in electron/backend/local-db.ts).
  // 2: doneAt (optional).
  // 3: replyLabel, replyLabelSuggested, replyLabelledBy, replyLabelledAt (optional).
  version: 3,
  primaryKey: 'id',
  type: 'object',
  properties: {
    ...BASE_PROPERTIES,
    leadId: ID,
    sdrProfileId: ID,
    campaignId: NULLABLE_ID,
    stepId: NULLABLE_ID,
    chatId: { type: 'string', maxLength: 100 },
    direction: { type: 'string', enum: ['out', 'in'] },
    kind: { type: 'string', enum: ['message', 'inmail', 'email', 'connection_request', 'voice_note', 'reaction', 'profile_visit'] },
    text: TEXT,
    subject: TEXT,
    /** queued (a direct message waiting), sending (the runner's intent: committed before the
     * network action, replaced by its outcome after it), sent, failed, received, unknown (a send
     * was interrupted by a crash and the channel cannot tell whether it happened: "delivery
     * unknown", settled by a person). */
    status: { type: 'string', enum: ['queued', 'sending', 'sent', 'failed', 'received', 'unknown'] },
    sentAt: NULLABLE_TIMESTAMP,
    openedAt: NULLABLE_TIMESTAMP,
    externalId: NULLABLE_TEXT,
    error: NULLABLE_TEXT,
    /** A received message marked done in the reply inbox (when), null or absent while it waits. */
    doneAt: NULLABLE_TIMESTAMP,
    /** A received reply's label as a person confirmed or chose it (inbox.setLabel); null or absent:
     * not confirmed yet. */
    replyLabel: { type: ['string', 'null'], enum: [...REPLY_LABELS, null] },
    /** The label the rules suggested from the reply's text when it arrived (shared/replies/label.ts);
     * null or absent: no rule matched, or not a received reply. Never changed by a person. */
    replyLabelSuggested: { type: ['string', 'null'], enum: [...REPLY_LABELS, null] },
    /** Who set replyLabel (a member id) and when; null or absent while it is not set. */
    replyLabelledBy: NULLABLE_ID,
    replyLabelledAt: NULLABLE_TIMESTAMP,
  },
  required: [
    ...BASE_REQUIRED, 'leadId', 'sdrProfileId', 'campaignId', 'stepId', 'chatId', 'direction', 'kind', 'text',
    'subject', 'status', 'sentAt', 'openedAt', 'externalId', 'error',
  ],
  additionalProperties: false,
} as const;
export type Message = FromSchema<typeof messageSchema>;
