/** Every committed write, from an operation, the runner or a replication push, passes these. */
import { DomainError } from '../errors.ts';
import type { CollectionName } from '../model/index.ts';
import { schemaProblem } from '../model/validate.ts';
import type { AnyWrite } from '../store.ts';
import { activityRules } from './activities.ts';
import { campaignRules } from './campaigns.ts';
import { leadGroupRules } from './leadGroups.ts';
import { leadRules } from './leads.ts';
import { senderRules } from './senders.ts';
import { enrollmentRules } from './enrollments.ts';
import { leadReferenceRules, messageReferenceRules, senderReferenceRules, usageReferenceRules } from './references.ts';
import { workspaceRules, memberRules, apiKeyRules } from './workspace.ts';
import type { Change, Rule, RuleCtx, RuleSet } from './types.ts';

export type { Change, Rule, RuleCtx, RuleSet } from './types.ts';

/** Rules that hold for every collection: identity fields never change, documents match the schema. */
const integrity: Rule<CollectionName> = ({ collection, before, after }, { actor }) => {
  if (after) {
    const problem = schemaProblem(collection, after);
    if (problem) throw new DomainError('INVALID_INPUT', `The ${collection} document is not valid: ${problem}.`, { collection, id: after.id });
    if (after.workspaceId !== actor.workspaceId) throw new DomainError('NOT_FOUND', `${collection} ${after.id} was not found in this workspace.`);
  }
  if (before && after && before.createdAt !== after.createdAt) {
    throw new DomainError('RULE_VIOLATION', 'createdAt never changes.', { collection, id: after.id });
  }
};

export const RULES: RuleSet = {
  activities: activityRules,
  leads: [...leadRules, ...leadReferenceRules],
  campaigns: campaignRules,
  leadGroups: leadGroupRules,
  senders: [...senderRules, ...senderReferenceRules],
  enrollments: enrollmentRules,
  workspaces: workspaceRules,
  members: memberRules,
  apiKeys: apiKeyRules,
  messages: messageReferenceRules,
  usage: usageReferenceRules,
};

export async function validateChange(change: Change<CollectionName>, rctx: RuleCtx): Promise<void> {
  await integrity(change, rctx);
  const rules = (RULES[change.collection] ?? []) as readonly Rule<CollectionName>[];
  for (const rule of rules) await rule(change, rctx);
}

/** Validates every write of one commit; throws the first refusal. */
export async function validateWrites(writes: readonly AnyWrite[], rctx: RuleCtx): Promise<void> {
  for (const w of writes) await validateChange(w as Change<CollectionName>, rctx);
}
