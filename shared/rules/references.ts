/**
 * References between documents: a document may only point at documents of its own workspace that
 * exist (ids of other workspaces are "not found", like everywhere). They judge a reference when it is
 * set or changed, never an unchanged one, so a tag or sender deleted later does not block edits of the
 * documents that still name it. The same rules refuse an operation's write, a replication push (the
 * row comes back as a conflict with the reason recorded) and a desktop's local commit.
 *
 * Rules that already check their references live beside their collection: a lead's pipeline stage
 * (leads.ts), an enrollment's lead and campaign (enrollments.ts), an activity's lead and a task's
 * assignee (activities.ts), a campaign's lead group and senders (campaigns.ts).
 */
import { notFound } from '../errors.ts';
import type { CollectionName } from '../model/index.ts';
import type { StoreReader } from '../store.ts';
import type { Rule } from './types.ts';

type Referenced = Extract<CollectionName, 'tags' | 'leadGroups' | 'leads' | 'senders' | 'campaigns' | 'members'>;

const WHAT: Record<Referenced, string> = {
  tags: 'Tag',
  leadGroups: 'Lead group',
  leads: 'Lead',
  senders: 'Sender',
  campaigns: 'Campaign',
  members: 'Member',
};

/** Ids already found per reader and collection: a reader shows one commit's final state (its writes
 * are staged before any rule runs), so a 1000-lead import looks its lead group up once, not 1000
 * times. */
const seen = new WeakMap<StoreReader, Map<Referenced, Set<string>>>();

/** Refuses (NOT_FOUND) when one of `ids` is not a live document of the workspace. Answers at once
 * (no promise) when every id is known already, as for each lead of an import after the first. */
function mustExist(read: StoreReader, c: Referenced, ids: readonly string[]): Promise<void> | undefined {
  if (ids.length === 0) return undefined;
  let byCollection = seen.get(read);
  if (!byCollection) seen.set(read, (byCollection = new Map()));
  let known = byCollection.get(c);
  if (!known) byCollection.set(c, (known = new Set()));
  // Usually every id is known already (each lead of an import names the same list): nothing to build.
  if (ids.every((id) => known.has(id))) return undefined;
  return lookUp(read, c, known, ids);
}

async function lookUp(read: StoreReader, c: Referenced, known: Set<string>, ids: readonly string[]): Promise<void> {
  const wanted = [...new Set(ids)].filter((id) => !known.has(id));
  const found = new Set((await read.getMany(c, wanted)).map((d) => d.id));
  const missing = wanted.find((id) => !found.has(id));
  if (missing !== undefined) throw notFound(WHAT[c], missing);
  for (const id of wanted) known.add(id);
}

/** The ids of `next` that `prev` did not already hold (null and undefined are no reference). */
const added = (next: readonly (string | null | undefined)[], prev: readonly (string | null | undefined)[] = []): string[] => {
  const had = new Set(prev);
  return next.filter((id): id is string => typeof id === 'string' && !had.has(id));
};

export const leadReferenceRules: readonly Rule<'leads'>[] = [
  function tagExists({ before, after }, { read }) {
    if (!after) return;
    return mustExist(read, 'tags', added([after.tagId], [before?.tagId]));
  },
  function leadGroupsExist({ before, after }, { read }) {
    if (!after) return;
    return mustExist(read, 'leadGroups', added([after.leadGroupId, ...after.groupIds], before ? [before.leadGroupId, ...before.groupIds] : []));
  },
];

export const messageReferenceRules: readonly Rule<'messages'>[] = [
  async function leadSenderAndCampaignExist({ before, after }, { read }) {
    if (!after) return;
    await mustExist(read, 'leads', added([after.leadId], [before?.leadId]));
    await mustExist(read, 'senders', added([after.sdrProfileId], [before?.sdrProfileId]));
    await mustExist(read, 'campaigns', added([after.campaignId], [before?.campaignId]));
  },
];

export const usageReferenceRules: readonly Rule<'usage'>[] = [
  function senderExists({ before, after }, { read }) {
    if (!after) return;
    return mustExist(read, 'senders', added([after.sdrProfileId], [before?.sdrProfileId]));
  },
];

export const senderReferenceRules: readonly Rule<'senders'>[] = [
  function ownerIsMember({ before, after }, { read }) {
    if (!after) return;
    return mustExist(read, 'members', added([after.ownerMemberId], [before?.ownerMemberId]));
  },
];
