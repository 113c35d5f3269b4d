import type { FromSchema } from 'json-schema-to-ts';
import {
  BASE_PROPERTIES,
  BASE_REQUIRED,
  CLOSE_REASONS,
  ID,
  NULLABLE_ID,
  NULLABLE_TEXT,
  NULLABLE_TIMESTAMP,
  STAGE_CATEGORIES,
  TASK_STATUSES,
  TEXT,
  UNSUBSCRIBE_SOURCES,
} from './common.ts';

/** A pipeline stage. Names are workspace configuration; the category carries the meaning. */
export const stageSchema = {
  title: 'stages',
  version: 0,
  primaryKey: 'id',
  type: 'object',
  properties: {
    ...BASE_PROPERTIES,
    name: { type: 'string', minLength: 1, maxLength: 100 },
    colorHex: { type: 'string', pattern: '^#[0-9a-fA-F]{6}$' },
    category: { type: 'string', enum: STAGE_CATEGORIES },
    position: { type: 'integer', minimum: 0 },
  },
  required: [...BASE_REQUIRED, 'name', 'colorHex', 'category', 'position'],
  additionalProperties: false,
} as const;
export type Stage = FromSchema<typeof stageSchema>;

export const tagSchema = {
  title: 'tags',
  version: 0,
  primaryKey: 'id',
  type: 'object',
  properties: {
    ...BASE_PROPERTIES,
    name: { type: 'string', minLength: 1, maxLength: 100 },
    color: { type: 'string', pattern: '^#[0-9a-fA-F]{6}$' },
  },
  required: [...BASE_REQUIRED, 'name', 'color'],
  additionalProperties: false,
} as const;
export type Tag = FromSchema<typeof tagSchema>;

/** A lead group with its columns. A column is a variable type; its display name is a merge field. */
export const leadGroupSchema = {
  title: 'leadGroups',
  version: 0,
  primaryKey: 'id',
  type: 'object',
  properties: {
    ...BASE_PROPERTIES,
    name: { type: 'string', minLength: 1, maxLength: 200 },
    columns: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          id: ID,
          name: { type: 'string', minLength: 1, maxLength: 100 },
          /** null for custom columns; the lead field name for built-in ones (e.g. firstName). */
          builtInType: NULLABLE_TEXT,
        },
        required: ['id', 'name', 'builtInType'],
        additionalProperties: false,
      },
    },
  },
  required: [...BASE_REQUIRED, 'name', 'columns'],
  additionalProperties: false,
} as const;
export type LeadGroup = FromSchema<typeof leadGroupSchema>;
export type LeadGroupColumn = LeadGroup['columns'][number];

/** One person, once per workspace (deduplicated by socialUrl, else email). */
export const leadSchema = {
  title: 'leads',
  // 1: optional fields added since the first release (see migrationStrategies in electron/backend/local-db.ts).
  // 2: unsubscribedAt, unsubscribeSource (optional).
  // 3: mergedIntoId (optional).
  version: 3,
  primaryKey: 'id',
  type: 'object',
  properties: {
    ...BASE_PROPERTIES,
    /** The group the lead was created in. */
    leadGroupId: ID,
    /** Every group the lead is linked to (includes leadGroupId); enrollment links more. */
    groupIds: { type: 'array', items: ID },
    tagId: NULLABLE_ID,
    leadIdentifier: TEXT,
    firstName: TEXT,
    lastName: TEXT,
    fullName: TEXT,
    email: TEXT,
    company: TEXT,
    jobTitle: TEXT,
    location: TEXT,
    phone: TEXT,
    /** Seniority level (e.g. senior, director, vp, c_level) used by company relay. */
    seniority: TEXT,
    leadFitScore: { type: 'number' },
    rankingScore: { type: 'number' },
    socialUrl: TEXT,
    personalSocialUrl: TEXT,
    companySocialUrl: TEXT,
    websiteUrl: TEXT,
    profilePictureUrl: TEXT,
    pipelineStageId: NULLABLE_ID,
    closeReason: { type: ['string', 'null'], enum: [...CLOSE_REASONS, null] },
    closedFromCategory: { type: ['string', 'null'], enum: [...STAGE_CATEGORIES, null] },
    stageSetManuallyAt: NULLABLE_TIMESTAMP,
    followUpAt: NULLABLE_TIMESTAMP,
    lastActivityAt: NULLABLE_TIMESTAMP,
    meetingBookedAt: NULLABLE_TIMESTAMP,
    meetingBookedSource: NULLABLE_TEXT,
    /** When an email to this address bounced hard (the runner stops emailing it), and why; optional. */
    emailBouncedAt: NULLABLE_TIMESTAMP,
    emailBounceReason: NULLABLE_TEXT,
    cycle: { type: 'integer', minimum: 0 },
    doNotContact: { type: 'boolean' },
    /** When the lead unsubscribed and how (one-click link, the mailto: of List-Unsubscribe, or a
     * reply labelled unsubscribe); it also set doNotContact. Null or absent: never unsubscribed.
     * Clearing doNotContact later leaves these as the record of what happened. */
    unsubscribedAt: NULLABLE_TIMESTAMP,
    unsubscribeSource: { type: ['string', 'null'], enum: [...UNSUBSCRIBE_SOURCES, null] },
    blocklisted: { type: 'boolean' },
    /** Custom and built-in variable values by variable type (column) id. */
    variables: { type: 'object', additionalProperties: { type: 'string' } },
    /** Set when this lead was merged into another (campaigns.leads.merge): the lead is a tombstone
     * naming its survivor. Searches leave it out, operations naming it answer NOT_FOUND with the
     * survivor's id, and a push that edits or references it is applied to the survivor. Absent or
     * null: a lead of its own. */
    mergedIntoId: NULLABLE_ID,
  },
  required: [
    ...BASE_REQUIRED,
    'leadGroupId', 'groupIds', 'tagId', 'leadIdentifier', 'firstName', 'lastName', 'fullName', 'email',
    'company', 'jobTitle', 'location', 'phone', 'seniority', 'leadFitScore', 'rankingScore', 'socialUrl',
    'personalSocialUrl', 'companySocialUrl', 'websiteUrl', 'profilePictureUrl', 'pipelineStageId',
    'closeReason', 'closedFromCategory', 'stageSetManuallyAt', 'followUpAt', 'lastActivityAt',
    'meetingBookedAt', 'meetingBookedSource', 'cycle', 'doNotContact', 'blocklisted', 'variables',
  ],
  additionalProperties: false,
} as const;
export type Lead = FromSchema<typeof leadSchema>;

/** Notes, tasks and system timeline events of a lead. */
export const activitySchema = {
  title: 'activities',
  version: 0,
  primaryKey: 'id',
  type: 'object',
  properties: {
    ...BASE_PROPERTIES,
    leadId: ID,
    /** Author of a note, creator of a task; for events, the member or sender that caused it. */
    userId: ID,
    type: { type: 'string', enum: ['NOTE', 'TASK', 'EVENT'] },
    content: { type: 'string', maxLength: 20000 },
    metadata: {
      type: 'object',
      properties: {
        taskStatus: { type: 'string', enum: TASK_STATUSES },
        assigneeId: ID,
        completedAt: NULLABLE_TIMESTAMP,
        completedBy: NULLABLE_ID,
        /** For events: what happened (stage_changed, message_sent, reply_received, ...). */
        eventKind: TEXT,
        campaignId: ID,
        messageId: ID,
        sdrProfileId: ID,
      },
      additionalProperties: false,
    },
    dueAt: NULLABLE_TIMESTAMP,
    remindAt: NULLABLE_TIMESTAMP,
    scheduledFor: NULLABLE_TIMESTAMP,
  },
  required: [...BASE_REQUIRED, 'leadId', 'userId', 'type', 'content', 'metadata', 'dueAt', 'remindAt', 'scheduledFor'],
  additionalProperties: false,
} as const;
export type Activity = FromSchema<typeof activitySchema>;
