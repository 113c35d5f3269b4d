/**
 * Which fields of the large collections the desktop keeps in SQLite columns with indexes, for the
 * Store's queries (electron/backend/storage/sqlite/store-columns.ts explains the columns). Read off
 * the queries of shared/ops and shared/engine: every order the leads table offers, the filters of
 * lead search (tag, stage, list membership, text), the import's duplicate look-ups (email,
 * profile URL, name), what the runner reads each tick (due enrollments, a sender's recent
 * messages), a lead's timeline and a member's tasks. A field without a column is still found: the
 * Store then tests it in JavaScript on the rows the other conditions leave.
 *
 * Each index costs every write of the collection about a microsecond and a few bytes per document;
 * small collections (stages, tags, campaigns, senders, members...) have none and are read whole.
 */
import type { StoreLayout } from './storage/sqlite/store-columns.ts';
import { LEAD_QUERY_FIELDS } from '../../shared/ops/lead-search.ts';
import type { CollectionName } from '../../shared/model/index.ts';

export const STORE_LAYOUT: Partial<Record<CollectionName, StoreLayout>> = {
  leads: {
    columns: [
      { field: 'workspaceId' },
      { field: 'createdAt' },
      { field: 'updatedAt' },
      { field: 'lastActivityAt' },
      { field: 'fullName', fold: true },
      { field: 'company', fold: true },
      { field: 'rankingScore' },
      { field: 'leadFitScore' },
      { field: 'followUpAt' },
      { field: 'tagId' },
      { field: 'pipelineStageId' },
      { field: 'email' },
      { field: 'socialUrl' },
      { field: 'fullName' },
      { field: 'company' },
    ],
    members: ['groupIds'],
    indexes: [
      ['workspaceId'],
      // The leads table's orders (LEAD_SORT_FIELDS), each read either way.
      ['createdAt'],
      ['lastActivityAt'],
      ['fold:fullName'],
      ['fold:company'],
      ['rankingScore'],
      ['leadFitScore'],
      ['followUpAt'],
      // The runner's look for leads changed since its last tick.
      ['updatedAt'],
      ['tagId'],
      ['pipelineStageId'],
      ['email'],
      ['socialUrl'],
      ['fullName'],
    ],
  },
  enrollments: {
    columns: [
      { field: 'workspaceId' },
      { field: 'campaignId' },
      { field: 'leadId' },
      { field: 'status' },
      { field: 'nextActionAt' },
      { field: 'updatedAt' },
      { field: 'createdAt' },
      { field: 'sdrProfileId' },
    ],
    indexes: [['campaignId'], ['leadId'], ['status', 'nextActionAt'], ['updatedAt']],
  },
  activities: {
    columns: [
      { field: 'workspaceId' },
      { field: 'leadId' },
      { field: 'createdAt' },
      { field: 'type' },
      { field: 'dueAt' },
      { field: 'metadata.assigneeId' },
      { field: 'metadata.taskStatus' },
      { field: 'metadata.campaignId' },
    ],
    indexes: [['leadId', 'createdAt'], ['metadata.assigneeId', 'dueAt'], ['metadata.campaignId']],
  },
  messages: {
    columns: [
      { field: 'workspaceId' },
      { field: 'campaignId' },
      { field: 'leadId' },
      { field: 'chatId' },
      { field: 'externalId' },
      { field: 'sdrProfileId' },
      { field: 'direction' },
      { field: 'status' },
      { field: 'kind' },
      { field: 'createdAt' },
      { field: 'sentAt' },
    ],
    indexes: [['campaignId'], ['leadId', 'createdAt'], ['chatId'], ['externalId'], ['sdrProfileId', 'createdAt'], ['status'], ['sentAt']],
  },
};

/** The collections with a full-text index and its fields: lead search's free text. */
export const TEXT_SEARCH: Partial<Record<CollectionName, readonly string[]>> = { leads: LEAD_QUERY_FIELDS };
