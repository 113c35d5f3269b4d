import { activitySchema, leadGroupSchema, leadSchema, stageSchema, tagSchema } from './crm.ts';
import type { Activity, Lead, LeadGroup, Stage, Tag } from './crm.ts';
import { campaignSchema, enrollmentSchema, messageSchema, senderSchema, usageSchema } from './outreach.ts';
import type { Campaign, Enrollment, Message, Sender, Usage } from './outreach.ts';
import { apiKeySchema, memberSchema, workspaceSchema } from './workspace.ts';
import type { ApiKey, Member, Workspace } from './workspace.ts';

export * from './common.ts';
export * from './crm.ts';
export * from './outreach.ts';
export * from './workspace.ts';

/** Every collection's document type by name. */
export type Docs = {
  workspaces: Workspace;
  members: Member;
  apiKeys: ApiKey;
  stages: Stage;
  tags: Tag;
  leadGroups: LeadGroup;
  leads: Lead;
  activities: Activity;
  campaigns: Campaign;
  enrollments: Enrollment;
  senders: Sender;
  usage: Usage;
  messages: Message;
};
export type CollectionName = keyof Docs;
export type AnyDoc = Docs[CollectionName];

/** The collection schemas. `replicated: false` ones live only on the sync server (secrets). */
export const COLLECTIONS = {
  workspaces: { schema: workspaceSchema, replicated: true },
  members: { schema: memberSchema, replicated: true },
  apiKeys: { schema: apiKeySchema, replicated: false },
  stages: { schema: stageSchema, replicated: true },
  tags: { schema: tagSchema, replicated: true },
  leadGroups: { schema: leadGroupSchema, replicated: true },
  leads: { schema: leadSchema, replicated: true },
  activities: { schema: activitySchema, replicated: true },
  campaigns: { schema: campaignSchema, replicated: true },
  enrollments: { schema: enrollmentSchema, replicated: true },
  senders: { schema: senderSchema, replicated: true },
  usage: { schema: usageSchema, replicated: true },
  messages: { schema: messageSchema, replicated: true },
} as const satisfies Record<CollectionName, { schema: { title: string; version: number }; replicated: boolean }>;

export const COLLECTION_NAMES = Object.keys(COLLECTIONS) as CollectionName[];
export const REPLICATED_COLLECTIONS = COLLECTION_NAMES.filter((c) => COLLECTIONS[c].replicated);
