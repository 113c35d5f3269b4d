/**
 * Which fields of the large collections the desktop keeps in SQLite columns with indexes, for the
 * Store's queries (electron/backend/storage/sqlite/store-columns.ts explains the columns). Read off
 * the queries of shared/ops and shared/engine: every order the leads table offers, the filters of
 * lead search (tag, stage, list membership, text), the identity keys every look-up of a person
 * probes (shared/intake/identity.ts, computed from the lead on every write), what the runner reads each tick (due enrollments, a sender's recent
 * messages), a lead's timeline and a member's tasks. A field without a column is still found: the
 * Store then tests it in JavaScript on the rows the other conditions leave.
 *
 * Each index costs every write of the collection about a microsecond and a few bytes per document;
 * small collections (stages, tags, campaigns, senders, members...) have none and are read whole.
 */
import type { StoreLayout } from './storage/sqlite/store-columns.ts';
import { KEY_FIELDS } from '../../shared/intake/identity.ts';
import { LEAD_QUERY_FIELDS } from '../../shared/ops/lead-search.ts';
import type { CollectionName } from '../../shared/model/index.ts';

export const STORE_LAYOUT: Partial<Record<CollectionName, StoreLayout>> = {
  leads: {
    columns: [
      { field: 'workspaceId' },
      { field: 'createdAt' },
      { field: 'updatedAt' },
      { field: 'lastActivityAt' },
      // Names and companies: the leads table's order (case and accents folded); an exact name is
      // found through the same column (folding keeps every exact match).
      { field: 'fullName', fold: true },
      { field: 'company', fold: true },
      { field: 'rankingScore' },
      { field: 'leadFitScore' },
      { field: 'followUpAt' },
      { field: 'tagId' },
      { field: 'pipelineStageId' },
      // Who a person is: the identity keys (shared/intake/identity.ts), computed from the lead on
      // every write, whatever wrote it (an operation, an import, a pulled change). A look-up of a
      // person is one probe of one of them; duplicateGroups reads them in key order.
      { field: KEY_FIELDS.profile },
      { field: KEY_FIELDS.email },
      { field: KEY_FIELDS.nameCompany },
      // Set on a lead merged into another (a tombstone): every search and count leaves those out
      // (lead-search.ts NOT_MERGED), which without a column would read every lead it counts.
      { field: 'mergedIntoId' },
    ],
    members: ['groupIds'],
    indexes: [
      // Counting the workspace's leads without reading them, and its leads of their own (not merged
      // into another), which every count asks for: SQLite counts either through this index (a
      // count of the workspace alone reads its leading column; an index of that column alone was
      // ~52 bytes a lead for nothing this one does not do).
      { keys: ['workspaceId', 'mergedIntoId'], ordered: false, narrows: false },
      // The leads table's orders (LEAD_SORT_FIELDS), each read either way. The creation order is
      // kept up during a sync (as it always was) and left out of an import, whose
      // calls each give their 5,000 leads one createdAt: random ids within the newest key, a page
      // write per lead; the first pages meanwhile come from the load's head (load-heads.ts).
      { keys: ['createdAt'], afterLoad: 'local' },
      { keys: ['lastActivityAt'], afterLoad: 'any' },
      { keys: ['fold:fullName'], afterLoad: 'any' },
      { keys: ['fold:company'], afterLoad: 'any' },
      { keys: ['rankingScore'], afterLoad: 'any' },
      { keys: ['leadFitScore'], afterLoad: 'any' },
      { keys: ['followUpAt'], afterLoad: 'any' },
      // The runner's look for leads changed since its last tick.
      { keys: ['updatedAt'], ordered: false },
      // Lead search's filters.
      { keys: ['tagId'], ordered: false },
      { keys: ['pipelineStageId'], ordered: false },
      // A tag's leads newest first (the table filtered by a tag, often with a stage as well): two
      // filters of 1 lead in 10 each leave 1 in 100, which the creation order met only after
      // reading ~5,000 rows from the table for a page (195 ms at 1M leads); within the tag, ~500.
      { keys: ['tagId', 'createdAt'], afterLoad: 'any' },
      // The look-ups of a person (imports, creation, the edit check, search by email or URL): left
      // out of a load too, an import's included, whose calls each look up their people among the
      // leads of the calls before: those probes are answered from the load's in-memory map of the
      // keys (load-probes.ts) until the indexes are built.
      { keys: [KEY_FIELDS.profile], ordered: false, afterLoad: 'probed' },
      { keys: [KEY_FIELDS.email], ordered: false, afterLoad: 'probed' },
      { keys: [KEY_FIELDS.nameCompany], ordered: false, afterLoad: 'probed' },
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
    indexes: [
      { keys: ['campaignId'], ordered: false },
      { keys: ['leadId'], ordered: false, afterLoad: 'any' },
      // The runner's due enrollments, in due order.
      { keys: ['status', 'nextActionAt'] },
      { keys: ['updatedAt'], ordered: false },
    ],
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
    indexes: [
      // A lead's timeline, newest first.
      { keys: ['leadId', 'createdAt'], afterLoad: 'any' },
      // A member's tasks, by due date.
      { keys: ['metadata.assigneeId', 'dueAt'], afterLoad: 'any' },
      { keys: ['metadata.campaignId'], ordered: false },
    ],
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
    indexes: [
      { keys: ['campaignId'], ordered: false },
      { keys: ['leadId', 'createdAt'], afterLoad: 'any' },
      { keys: ['chatId'], ordered: false, afterLoad: 'any' },
      { keys: ['externalId'], ordered: false, afterLoad: 'any' },
      // A sender's recent messages (daily and weekly limits, spacing).
      { keys: ['sdrProfileId', 'createdAt'] },
      { keys: ['status'], ordered: false },
      // The inbox, newest first.
      { keys: ['sentAt'] },
    ],
  },
};

/** The collections with a full-text index and its fields: lead search's free text. */
export const TEXT_SEARCH: Partial<Record<CollectionName, readonly string[]>> = { leads: LEAD_QUERY_FIELDS };
